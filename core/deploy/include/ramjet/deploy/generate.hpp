// `ramjet generate`: text from a trained language model. The model's int32 input is a window of token IDs (the
// `text` source's); its output, logits [T, vocabulary] per example. Starting from the prompt, each step runs the
// model on the last T tokens (left-aligned while fewer: the causal mask keeps the padding after the last token
// from mattering), takes the logits at the last token, and samples the next one: softmax of logits / temperature,
// restricted to the top k when k > 0 (temperature 0: the most likely token). The tokenizer.json the training data
// named turns the prompt into IDs and the samples back into text.
#pragma once

#include "ramjet/plan/plan.hpp"
#include "ramjet/plugin/plugin_registry.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <optional>
#include <string>

namespace ramjet::core {

struct GenerateOptions {
  std::string prompt;
  int64_t tokens = 200;      // how many to sample
  double temperature = 1.0;  // 0: greedy
  int64_t top_k = 0;         // 0: every token
  uint64_t seed = 0;         // the sampler's; the same seed gives the same text
  std::optional<std::filesystem::path> checkpoint;  // default: the newest in /train/checkpoint/dir
  int64_t threads = 0;
  std::ostream* out = nullptr;  // the prompt, then each token's text as it comes
};

// Returns {"checkpoint", "prompt_tokens", "tokens", "text", "tokens_per_s"}. Throws InvalidInput for a plan that
// is not a language model (naming what is missing) and for a prompt with no token of the vocabulary.
nlohmann::json generate_text(const Plan& plan, PluginRegistry& registry, const GenerateOptions& options);

}  // namespace ramjet::core
