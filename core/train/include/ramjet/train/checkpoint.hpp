// Training checkpoints: one safetensors file per save (parameters, optimizer slots, and in its metadata the step,
// the input pipeline's position and the trainer's own state), written atomically as
// <dir>/ckpt-<step>.safetensors; the newest `keep` are kept. Any safetensors reader can open them.
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

std::filesystem::path save_checkpoint(const std::filesystem::path& dir, const Checkpoint& checkpoint, int64_t keep);
std::optional<std::filesystem::path> latest_checkpoint(const std::filesystem::path& dir);
// Throws InvalidInput naming the file when it is not a ramjet checkpoint or is damaged.
Checkpoint load_checkpoint(const std::filesystem::path& path);

}  // namespace ramjet::core
