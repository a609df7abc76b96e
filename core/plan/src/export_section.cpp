// The `export` section. The core owns the words that drive the flow (which quantizer and exporter, where to write,
// how many calibration batches from which pipeline, whether to evaluate); everything else in the section is the
// quantizer's configuration, passed through with its pointers and judged by the quantizer.
#include "export_section.hpp"

namespace ramjet::core {
namespace {

using nlohmann::json;
using ramjet::Field;
using ramjet::Fields;

const Fields& export_fields() {
  static const Fields fields = Fields{
      Field::string("quantizer").doc("a quantizer component"),
      Field::string("format").doc("an exporter component"),
      Field::string("path").required().rule([](const json& v) -> std::optional<std::string> {
        if (v.get<std::string>().empty()) return "must be a file path, got \"\"";
        return std::nullopt;
      }),
      Field::boolean("evaluate"),
      Field::object("calibration", Fields{Field::integer("batches").at_least(1), Field::string("data").one_of({"train", "eval"})}
                                       .allow_unknown()),
  }.allow_unknown();
  return fields;
}

// The quantizer's part of the section: all but the core's words.
json quantizer_part(const json& e) {
  json q = e;
  for (const char* key : {"quantizer", "format", "path", "evaluate"}) q.erase(key);
  if (q.contains("calibration") && q["calibration"].is_object()) {
    q["calibration"].erase("batches");
    q["calibration"].erase("data");
    if (q["calibration"].empty()) q.erase("calibration");
  }
  return q;
}

}  // namespace

std::optional<ExportConfig> read_export(const json& e, SectionReader& reader, uint64_t seed) {
  const size_t before = reader.problem_count();
  reader.check(export_fields(), e, "/export");
  if (!e.is_object() || reader.problem_count() != before) return std::nullopt;
  ExportConfig c;
  json quantizer = quantizer_part(e);
  quantizer["type"] = e.value("quantizer", c.quantizer.type());
  if (auto q = reader.component(quantizer, "/export", RAMJET_KIND_QUANTIZER, false, seed, "/export/quantizer"))
    c.quantizer = *q;
  json exporter = {{"type", e.value("format", c.exporter.type())}};
  if (auto x = reader.component(exporter, "/export/format", RAMJET_KIND_EXPORTER, false, seed, "/export/format"))
    c.exporter = *x;
  c.path = reader.origin().resolve(e.at("path").get<std::string>());
  c.evaluate = e.value("evaluate", c.evaluate);
  if (auto k = e.find("calibration"); k != e.end()) {
    c.calibration_batches = k->value("batches", c.calibration_batches);
    c.calibration_data = k->value("data", c.calibration_data);
  }
  if (reader.problem_count() != before) return std::nullopt;
  return c;
}

}  // namespace ramjet::core
