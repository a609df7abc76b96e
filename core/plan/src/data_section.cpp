// The `data` section: each input pipeline's settings, checked and read once. The defaults are PipelineSpec's.
#include "data_section.hpp"

#include "ramjet/plugin/machine_limits.hpp"

#include <ramjet/sdk/fields.hpp>

namespace ramjet::core {
namespace {

using nlohmann::json;
using ramjet::Field;
using ramjet::Fields;

std::optional<std::string> auto_or_between(const json& v, int64_t min, int64_t max, const std::string& max_text) {
  if (v == "auto" || (v.is_number_integer() && v.get<int64_t>() >= min && v.get<int64_t>() <= max)) return std::nullopt;
  return "must be \"auto\" or an integer from " + std::to_string(min) + " to " + max_text + ", got " +
         ramjet::quote_value(v);
}

const Fields& pipeline_fields() {
  static const Fields fields{
      Field::object("source", Fields{}.allow_unknown()).required().doc("a data_source component"),
      Field::array("map").doc("transforms before the cache"),
      Field::array("augment").doc("transforms after the shuffle"),
      Field::integer("batch").at_least(1).at_most(static_cast<double>(kMaxBatch)),
      Field::boolean("drop_remainder"),
      Field::integer("epochs").at_least(1),
      Field::integer("take").at_least(0),
      Field::integer("shuffle").at_least(0),
      Field::string("cache").rule([](const json& v) -> std::optional<std::string> {
        if (v.get<std::string>().empty()) return "must be \"memory\" or a file path, got \"\"";
        return std::nullopt;
      }),
      Field::any("parallelism").rule([](const json& v) {
        return auto_or_between(v, 1, max_threads(), max_threads_explained());
      }),
      Field::any("prefetch").rule([](const json& v) {
        return auto_or_between(v, 0, kMaxPrefetch, std::to_string(kMaxPrefetch));
      }),
      Field::boolean("deterministic"),
      Field::object("shard", Fields{Field::integer("count").at_least(1).required(),
                                    Field::integer("index").at_least(0).required()}),
      Field::object("interleave", Fields{Field::integer("cycle_length").at_least(1),
                                         Field::integer("block_length").at_least(1),
                                         Field::boolean("parallel")}),
      Field::string("on_error").one_of({"fail", "skip"}),
      Field::object("budget", Fields{Field::integer("cpu").at_least(1).rule([](const json& v) -> std::optional<std::string> {
                                       if (v.get<int64_t>() <= max_threads()) return std::nullopt;
                                       return "must be at most " + max_threads_explained() + ", got " + v.dump();
                                     }),
                                     Field::integer("memory_mb").at_least(1).at_most(double(int64_t{1} << 30))}),
  };
  return fields;
}

}  // namespace

std::optional<PipelineSpec> read_pipeline(const json& v, const std::string& pointer, SectionReader& reader, uint64_t seed) {
  const size_t before = reader.problem_count();
  const Fields& fields = pipeline_fields();
  reader.check(fields, v, pointer);
  if (!v.is_object()) return std::nullopt;
  PipelineSpec s;
  s.origin = reader.origin();
  s.pointer = pointer;
  if (auto src = v.find("source"); src != v.end() && src->is_object())
    if (auto c = reader.component(*src, pointer + "/source", RAMJET_KIND_DATA_SOURCE, false, seed)) s.source = *c;
  for (const char* list : {"map", "augment"}) {
    auto it = v.find(list);
    if (it == v.end() || !it->is_array()) continue;
    auto& target = std::string(list) == "map" ? s.map : s.augment;
    for (size_t i = 0; i < it->size(); ++i)
      if (auto c = reader.component((*it)[i], pointer + "/" + list + "/" + std::to_string(i), RAMJET_KIND_TRANSFORM,
                                    false, seed))
        target.push_back(*c);
  }
  if (auto sh = v.find("shard"); sh != v.end() && sh->is_object() && sh->contains("count") && sh->contains("index") &&
                                 (*sh)["count"].is_number_integer() && (*sh)["index"].is_number_integer() &&
                                 (*sh)["index"].get<int64_t>() >= (*sh)["count"].get<int64_t>())
    reader.add(pointer + "/shard/index", "must be below count (" + (*sh)["count"].dump() + ")");
  if (reader.problem_count() != before) return std::nullopt;

  s.batch = v.value("batch", s.batch);
  s.drop_remainder = v.value("drop_remainder", s.drop_remainder);
  s.epochs = v.value("epochs", s.epochs);
  s.take = v.value("take", s.take);
  s.shuffle = v.value("shuffle", s.shuffle);
  if (auto c = v.find("cache"); c != v.end()) s.cache = c->get<std::string>();
  if (auto p = v.find("parallelism"); p != v.end() && p->is_number_integer()) s.parallelism = p->get<int64_t>();
  if (auto p = v.find("prefetch"); p != v.end() && p->is_number_integer()) s.prefetch = p->get<int64_t>();
  s.deterministic = v.value("deterministic", s.deterministic);
  if (auto sh = v.find("shard"); sh != v.end()) {
    s.shard_count = sh->at("count").get<int64_t>();
    s.shard_index = sh->at("index").get<int64_t>();
  }
  if (auto il = v.find("interleave"); il != v.end()) {
    InterleaveSpec i;
    i.cycle_length = il->value("cycle_length", i.cycle_length);
    i.block_length = il->value("block_length", i.block_length);
    i.parallel = il->value("parallel", i.parallel);
    s.interleave = i;
  }
  if (v.value("on_error", std::string("fail")) == "skip") s.on_error = OnError::kSkip;
  if (auto b = v.find("budget"); b != v.end()) {
    s.cpu_budget = b->value("cpu", int64_t{0});
    s.memory_budget = b->value("memory_mb", int64_t{0}) * (int64_t{1} << 20);
  }
  return s;
}

}  // namespace ramjet::core
