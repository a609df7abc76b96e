#include "ramjet/core/pipeline_spec.hpp"

namespace ramjet::core {

PipelineSpec read_pipeline_spec(const PipelineManifest& manifest, const std::string& pointer) {
  using nlohmann::json;
  const json& v = manifest.doc.at(json::json_pointer(pointer));
  PipelineSpec s;
  s.pointer = pointer;
  s.source = {v.at("source"), pointer + "/source"};
  for (const char* list : {"map", "augment"}) {
    auto it = v.find(list);
    if (it == v.end()) continue;
    auto& target = std::string(list) == "map" ? s.map : s.augment;
    for (size_t i = 0; i < it->size(); ++i)
      target.push_back({(*it)[i], pointer + "/" + list + "/" + std::to_string(i)});
  }
  s.batch = v.value("batch", int64_t{1});
  s.drop_remainder = v.value("drop_remainder", false);
  s.epochs = v.value("epochs", int64_t{1});
  s.take = v.value("take", int64_t{-1});
  s.shuffle = v.value("shuffle", int64_t{0});
  if (auto c = v.find("cache"); c != v.end()) s.cache = c->get<std::string>();
  if (auto p = v.find("parallelism"); p != v.end() && p->is_number_integer()) s.parallelism = p->get<int64_t>();
  if (auto p = v.find("prefetch"); p != v.end() && p->is_number_integer()) s.prefetch = p->get<int64_t>();
  s.deterministic = v.value("deterministic", true);
  if (auto sh = v.find("shard"); sh != v.end()) {
    s.shard_count = sh->at("count").get<int64_t>();
    s.shard_index = sh->at("index").get<int64_t>();
  }
  if (auto il = v.find("interleave"); il != v.end()) {
    InterleaveSpec i;
    i.cycle_length = il->value("cycle_length", int64_t{1});
    i.block_length = il->value("block_length", int64_t{1});
    i.parallel = il->value("parallel", true);
    s.interleave = i;
  }
  s.on_error = v.value("on_error", std::string("fail")) == "skip" ? OnError::kSkip : OnError::kFail;
  if (auto b = v.find("budget"); b != v.end()) {
    s.cpu_budget = b->value("cpu", int64_t{0});
    s.memory_budget = b->value("memory_mb", int64_t{0}) * (int64_t{1} << 20);
  }
  return s;
}

}  // namespace ramjet::core
