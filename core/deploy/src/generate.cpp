#include "ramjet/deploy/generate.hpp"

#include "checkpoint_choice.hpp"

#include "ramjet/data/input_pipeline.hpp"
#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/trace.hpp"
#include "ramjet/train/checkpoint.hpp"
#include "ramjet/train/trainer.hpp"

#include <ramjet/sdk/vocabulary.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <ostream>
#include <random>

namespace ramjet::core {
namespace {

struct LanguageModel {
  std::string input;   // the int32 window of token IDs
  int64_t context = 0;
  std::string output;  // logits [context, vocabulary]
  int64_t vocabulary = 0;
};

LanguageModel language_model_of(const Plan& plan) {
  const std::string where = plan.origin.where("/model");
  const nlohmann::json& ir = plan.graph->ir;
  LanguageModel m;
  for (const auto& in : ir.at("inputs")) {
    if (in.value("dtype", std::string()) != "int32") continue;
    if (!m.input.empty()) throw InvalidInput(where + ": generation needs one int32 input of token IDs, the model has several");
    m.input = in.at("name").get<std::string>();
    const auto shape = in.at("shape").get<std::vector<int64_t>>();
    if (shape.size() != 1) throw InvalidInput(where + "/input/" + m.input + ": generation needs a window of token IDs [T]");
    m.context = shape[0];
  }
  if (m.input.empty()) throw InvalidInput(where + "/input: generation needs an int32 input of token IDs (a language model)");
  m.output = ir.at("outputs").at(0).get<std::string>();
  for (const auto& node : ir.at("nodes")) {
    if (node.at("name") != m.output) continue;
    const auto shape = node.at("shape").get<std::vector<int64_t>>();
    if (shape.size() != 2 || shape[0] != m.context)
      throw InvalidInput(where + ": generation needs logits [" + std::to_string(m.context) + ", vocabulary] from '" +
                         m.output + "', it makes " + nlohmann::json(shape).dump());
    m.vocabulary = shape[1];
  }
  return m;
}

// The tokenizer the training data's source used, as its element spec names it.
Vocabulary vocabulary_of(const Plan& plan, PluginRegistry& registry, const LanguageModel& model) {
  const std::string where = plan.origin.where("/data/train/source");
  InputPipeline data(*plan.train_data, registry, plan.seed);
  const auto spec = data.source_element_spec();
  if (!spec || !spec->contains(model.input) || !(*spec)[model.input].contains("level"))
    throw InvalidInput(where + ": its elements do not say which vocabulary '" + model.input +
                       "' indexes (a text source does)");
  const nlohmann::json& tokens = (*spec)[model.input];
  Vocabulary v = Vocabulary::bytes();
  try {
    if (tokens.contains("vocabulary")) v = Vocabulary::read(tokens["vocabulary"].get<std::string>());
  } catch (const ramjet::Error& e) {
    throw InvalidInput(where + ": its vocabulary: " + e.what());  // the message names the file and the place
  }
  if (static_cast<int64_t>(v.size()) != model.vocabulary)
    throw InvalidInput(where + ": its vocabulary has " + std::to_string(v.size()) + " tokens, the model's logits " +
                       std::to_string(model.vocabulary));
  return v;
}

int32_t sample(const float* logits, int64_t n, const GenerateOptions& o, std::mt19937_64& rng, std::vector<double>& p,
               std::vector<int32_t>& order) {
  if (o.temperature <= 0.0) return static_cast<int32_t>(std::max_element(logits, logits + n) - logits);
  order.resize(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  size_t keep = order.size();
  if (o.top_k > 0 && o.top_k < n) {
    keep = static_cast<size_t>(o.top_k);
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(keep), order.end(),
                      [&](int32_t a, int32_t b) { return logits[a] > logits[b]; });
  }
  float best = logits[order[0]];
  for (size_t i = 0; i < keep; ++i) best = std::max(best, logits[order[i]]);
  p.resize(keep);
  for (size_t i = 0; i < keep; ++i) p[i] = std::exp((static_cast<double>(logits[order[i]]) - best) / o.temperature);
  std::discrete_distribution<size_t> pick(p.begin(), p.end());
  return order[pick(rng)];
}

}  // namespace

nlohmann::json generate_text(const Plan& plan, PluginRegistry& registry, const GenerateOptions& options) {
  if (!plan.graph || !plan.train || !plan.train_data)
    throw InvalidInput(plan.origin.where("") + ": generation needs the model, train and data.train sections of the run");
  if (options.tokens < 1) throw InvalidInput("--tokens must be at least 1");
  if (!(options.temperature >= 0.0) || !std::isfinite(options.temperature))
    throw InvalidInput("--temperature must be a number >= 0");
  if (options.top_k < 0) throw InvalidInput("--top-k must be >= 0");
  const LanguageModel model = language_model_of(plan);
  const Vocabulary vocabulary = vocabulary_of(plan, registry, model);
  std::vector<int32_t> ids;
  try {
    ids = vocabulary.encode(options.prompt, "--prompt");
  } catch (const ramjet::Error& e) {
    throw InvalidInput(e.what());
  }
  if (ids.empty()) throw InvalidInput("--prompt: empty; give the text to continue");

  const std::filesystem::path file = checkpoint_to_use(plan, options.checkpoint, "generate from");
  Checkpoint checkpoint = load_checkpoint(file);
  auto backend = make_training_backend(plan, registry, options.threads);
  auto program = backend->compile(plan.graph->ir, {{"batch", 1}});
  check_checkpoint_fits(checkpoint, file, program->get_state(RAMJET_STATE_PARAMETERS), nullptr);
  program->set_state(RAMJET_STATE_PARAMETERS, checkpoint.parameters);

  const int64_t T = model.context, V = model.vocabulary;
  Example inputs, outputs;
  const std::array<int64_t, 2> shape{1, T};
  TensorPtr window = make_tensor(DLDataType{kDLInt, 32, 1}, shape);
  int32_t* w = static_cast<int32_t*>(window->dl_tensor.data);
  inputs.set(model.input, std::move(window));
  const ramjet_forward_args args{sizeof(ramjet_forward_args), RAMJET_ABI_VERSION, 0, 0, options.seed, 0};
  std::mt19937_64 rng(options.seed);
  std::vector<double> p;
  std::vector<int32_t> order;
  if (options.out) *options.out << options.prompt << std::flush;
  const size_t prompt_tokens = ids.size();
  const auto start = std::chrono::steady_clock::now();
  for (int64_t step = 0; step < options.tokens; ++step) {
    // The last T tokens, left-aligned: position `last` holds the newest.
    const size_t used = std::min(ids.size(), static_cast<size_t>(T));
    std::fill(w, w + T, 0);
    std::copy(ids.end() - static_cast<std::ptrdiff_t>(used), ids.end(), w);
    const int64_t last = static_cast<int64_t>(used) - 1;
    program->forward(args, inputs, outputs);
    const DLTensor* logits = outputs.find(model.output);
    if (logits == nullptr || logits->dtype.code != kDLFloat || logits->dtype.bits != 32)
      throw RuntimeFailure("generate: the program returned no float32 '" + model.output + "'");
    const int32_t next = sample(static_cast<const float*>(first_byte(*logits)) + last * V, V, options, rng, p, order);
    ids.push_back(next);
    if (options.out) *options.out << vocabulary.decode(std::span<const int32_t>(&ids.back(), 1)) << std::flush;
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (options.out) *options.out << "\n";
  const std::span<const int32_t> produced(ids.data() + prompt_tokens, ids.size() - prompt_tokens);
  return {{"checkpoint", file.string()},
          {"prompt_tokens", prompt_tokens},
          {"tokens", options.tokens},
          {"text", options.prompt + vocabulary.decode(produced)},
          {"tokens_per_s", seconds > 0 ? static_cast<double>(options.tokens) / seconds : 0.0}};
}

}  // namespace ramjet::core
