// Training checkpoints: one safetensors file per save (parameters, optimizer slots, and in its metadata the step,
// the input pipeline's position and the trainer's own state), written atomically as
// <dir>/ckpt-<step>.safetensors; the newest `keep` are kept. Any safetensors reader can open them.
// Nothing trusts a checkpoint before it is checked whole: the file (safetensors.hpp), every metadata field's
// presence, type and range, and — against the model about to use it — every tensor's name, shape and dtype.
#pragma once

#include "ramjet/plugin/example.hpp"
#include "ramjet/data/input_pipeline.hpp"

#include <nlohmann/json.hpp>

#include <filesystem>
#include <optional>

namespace ramjet::core {

struct Checkpoint {
  int64_t step = 0;                 // optimizer steps taken
  PipelineState pipeline;           // where the training input stands
  nlohmann::json trainer = nlohmann::json::object();  // learning-rate scale, callback state, history
  Example parameters;
  Example optimizer;
  Example best_parameters;  // early stopping's best epoch, when it restores them (empty otherwise)
};

// Writes the checkpoint, reads it back and checks it against what was written, and only then deletes the
// checkpoints beyond the newest `keep` (never the one just written). A write that does not read back is renamed
// to <name>.corrupt and reported (RuntimeFailure); the older checkpoints stay.
std::filesystem::path save_checkpoint(const std::filesystem::path& dir, const Checkpoint& checkpoint, int64_t keep);

// The entry named like the newest checkpoint (ckpt-<step>.safetensors), whatever kind of file it is: loading
// refuses a FIFO or a directory rather than skipping to an older checkpoint behind the user's back.
std::optional<std::filesystem::path> latest_checkpoint(const std::filesystem::path& dir);

// Throws InvalidInput naming the file and the byte offset, tensor or metadata field (as a JSON pointer under
// __metadata__) when it is not a ramjet checkpoint or anything in it is damaged, mistyped or out of range.
Checkpoint load_checkpoint(const std::filesystem::path& path);

// The checkpoint against the model that will use it: every parameter the model has must be in param/ (and in
// best/ when that is present) with the model's shape and dtype, and nothing the model lacks may be there. With
// `optimizer_slots` (resuming), the same for optimizer/: a checkpoint without optimizer state is refused rather
// than resumed with fresh moments. Throws InvalidInput naming `file` and the tensor.
void check_checkpoint_fits(const Checkpoint& checkpoint, const std::filesystem::path& file, const Example& parameters,
                           const Example* optimizer_slots);

// Removes the hidden temporaries (.ckpt-<step>.safetensors.tmp<N>) that killed runs leave in `dir`. Returns how
// many went.
int remove_stale_checkpoint_temporaries(const std::filesystem::path& dir);

}  // namespace ramjet::core
