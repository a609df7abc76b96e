// A `ramjet run` that Open MPI's mpirun (or a scheduler through it) started as one of several ranks. The same
// manifest that `ramjet run --nproc N` runs with gloo runs unchanged here: with no train.strategy it trains with
// "mpi", and each rank takes its share of the machine's cores, as the local launcher gives it.
#pragma once

#include "ramjet/plan/pipeline_manifest.hpp"

namespace ramjet::core {

// The world size mpirun gave this process (OMPI_COMM_WORLD_SIZE), or 0 when mpirun did not start it.
int mpirun_world_size();

// When mpirun started this process as one of several ranks: a manifest that names no train.strategy gets "mpi";
// "single" is refused (every rank would train alone and write the same checkpoints). Unless OMP_NUM_THREADS is set,
// it and RAMJET_CPUS become cores / (ranks on this machine). Throws InvalidInput.
void adopt_mpirun_rank(PipelineManifest& manifest);

}  // namespace ramjet::core
