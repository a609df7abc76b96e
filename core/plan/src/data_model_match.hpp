// The model's inputs (and its loss's labels) against what the data pipelines give: names, per-example shapes and
// dtypes, found before training instead of at the first step.
#pragma once

#include "section_reader.hpp"

#include "ramjet/plan/plan.hpp"

namespace ramjet::core {

// Transforms report no element spec, so one element is made the way the pipeline makes it: the source's first
// element (its files are read only here, and only once the rest of the manifest has no problem), through every
// map and augment transform. A mismatch is a problem at the model's input naming the pipeline's pointer.
void check_data_against_model(const Plan& plan, SectionReader& reader);

}  // namespace ramjet::core
