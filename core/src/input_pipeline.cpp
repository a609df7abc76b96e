#include "ramjet/core/input_pipeline.hpp"

#include "ramjet/core/batch.hpp"
#include "ramjet/core/seeds.hpp"

namespace ramjet::core {
namespace {

CreateArgs component_args(const PipelineManifest& manifest, const nlohmann::json& spec, const std::string& pointer,
                          uint64_t seed) {
  CreateArgs args;
  args.config = spec;
  args.config.erase("type");
  args.base_dir = manifest.base_dir();
  args.where = manifest.where(pointer);
  args.seed = seed;
  return args;
}

}  // namespace

InputPipeline::InputPipeline(const PipelineManifest& manifest, const std::string& pointer, PluginRegistry& registry,
                             uint64_t run_seed)
    : run_seed_(run_seed) {
  const nlohmann::json& spec = manifest.doc.at(nlohmann::json::json_pointer(pointer));
  config_.batch = spec.value("batch", int64_t{1});
  config_.drop_remainder = spec.value("drop_remainder", false);
  config_.epochs = spec.value("epochs", int64_t{1});
  config_.take = spec.value("take", int64_t{-1});

  const auto& source_spec = spec.at("source");
  source_ = std::make_unique<DataSource>(
      registry.component(RAMJET_KIND_DATA_SOURCE, source_spec.at("type").get<std::string>()),
      component_args(manifest, source_spec, pointer + "/source", run_seed));
  cardinality_ = source_->cardinality();
  if (auto map = spec.find("map"); map != spec.end()) {
    transforms_.reserve(map->size());
    for (size_t i = 0; i < map->size(); ++i) {
      const auto& t = (*map)[i];
      transforms_.emplace_back(registry.component(RAMJET_KIND_TRANSFORM, t.at("type").get<std::string>()),
                               component_args(manifest, t, pointer + "/map/" + std::to_string(i), run_seed));
    }
  }
}

int64_t InputPipeline::elements_per_epoch() const {
  if (cardinality_ < 0) return config_.take;
  return config_.take >= 0 ? std::min(config_.take, cardinality_) : cardinality_;
}

bool InputPipeline::next_element(Example& out) {
  const int64_t limit = elements_per_epoch();
  if (limit >= 0 && index_ >= limit) return false;
  if (source_->random_access()) {
    source_->get(index_, out);
  } else if (!source_->next(out)) {
    return false;
  }
  for (size_t s = 0; s < transforms_.size(); ++s)
    transforms_[s].apply(out, element_seed(run_seed_, static_cast<uint64_t>(epoch_), static_cast<uint64_t>(index_), s));
  ++index_;
  return true;
}

void InputPipeline::end_epoch() {
  ++epoch_;
  index_ = 0;
  started_ = false;
}

std::optional<Example> InputPipeline::next_batch() {
  while (epoch_ < config_.epochs) {
    if (!started_) {
      source_->reset(static_cast<uint64_t>(epoch_));
      started_ = true;
    }
    const int64_t first_index = index_;
    std::vector<Example> items;
    items.reserve(static_cast<size_t>(config_.batch));
    while (static_cast<int64_t>(items.size()) < config_.batch) {
      Example e;
      if (!next_element(e)) break;
      items.push_back(std::move(e));
    }
    const bool partial = static_cast<int64_t>(items.size()) < config_.batch;
    if (partial) end_epoch();  // batches never straddle epochs
    if (items.empty() || (partial && config_.drop_remainder)) continue;
    Example batch = stack_examples(items, first_index);
    for (const auto& item : items)
      for (const auto& lib : item.keepalive) batch.keep_alive(lib);
    return batch;
  }
  return std::nullopt;
}

}  // namespace ramjet::core
