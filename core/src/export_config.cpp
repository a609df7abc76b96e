#include "ramjet/core/export_config.hpp"

#include "ramjet/core/failure.hpp"

#include <set>

namespace ramjet::core {

nlohmann::json ExportConfig::quantizer_config() const {
  return {{"mode", mode},
          {"method", calibration_method},
          {"percentile", calibration_percentile},
          {"input_type", input_type},
          {"output_type", output_type}};
}

ExportConfig read_export_config(const PipelineManifest& manifest) {
  using nlohmann::json;
  const json& e = manifest.doc.at("export");
  auto fail = [&](const std::string& pointer, const std::string& message) {
    return ManifestError(manifest.where(pointer), pointer, message);
  };
  if (!e.is_object()) throw fail("/export", "must be an object");
  static const std::set<std::string> known = {"quantizer", "mode",        "format",      "path",
                                              "input_type", "output_type", "calibration", "evaluate"};
  for (const auto& [key, value] : e.items())
    if (!known.count(key)) throw fail("/export/" + key, "unknown field (expected " + [] {
      std::string list;
      for (const auto& k : known) list += (list.empty() ? "" : ", ") + k;
      return list;
    }() + ")");
  ExportConfig c;
  auto text = [&](const json& obj, const std::string& pointer, const char* key, std::string& out,
                  std::set<std::string> allowed = {}) {
    if (!obj.contains(key)) return;
    const std::string p = pointer + "/" + key;
    if (!obj[key].is_string() || obj[key].get<std::string>().empty()) throw fail(p, "must be a non-empty string");
    out = obj[key].get<std::string>();
    if (!allowed.empty() && !allowed.count(out)) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw fail(p, "must be one of " + list + ", got '" + out + "'");
    }
  };
  text(e, "/export", "quantizer", c.quantizer);
  text(e, "/export", "mode", c.mode, {"full_integer", "dynamic_range"});
  text(e, "/export", "format", c.format);
  text(e, "/export", "input_type", c.input_type, {"int8", "uint8", "float32"});
  text(e, "/export", "output_type", c.output_type, {"int8", "uint8", "float32"});
  if (!e.contains("path")) throw fail("/export/path", "required: where to write the exported model");
  std::string path;
  text(e, "/export", "path", path);
  c.path = std::filesystem::path(path).is_absolute() ? std::filesystem::path(path) : manifest.base_dir() / path;
  if (e.contains("evaluate")) {
    if (!e["evaluate"].is_boolean()) throw fail("/export/evaluate", "must be true or false");
    c.evaluate = e["evaluate"];
  }
  if (e.contains("calibration")) {
    const json& k = e["calibration"];
    if (!k.is_object()) throw fail("/export/calibration", "must be an object");
    for (const auto& [key, value] : k.items())
      if (key != "batches" && key != "method" && key != "percentile" && key != "data")
        throw fail("/export/calibration/" + key, "unknown field (expected batches, method, percentile, data)");
    if (k.contains("batches")) {
      if (!k["batches"].is_number_integer() || k["batches"].get<int64_t>() < 1)
        throw fail("/export/calibration/batches", "must be a positive integer, got " + k["batches"].dump());
      c.calibration_batches = k["batches"];
    }
    text(k, "/export/calibration", "method", c.calibration_method, {"minmax", "percentile", "mse"});
    text(k, "/export/calibration", "data", c.calibration_data, {"train", "eval"});
    if (k.contains("percentile")) {
      if (!k["percentile"].is_number() || !(k["percentile"].get<double>() > 50) || k["percentile"].get<double>() > 100)
        throw fail("/export/calibration/percentile", "must be a number in (50, 100], got " + k["percentile"].dump());
      c.calibration_percentile = k["percentile"];
    }
  }
  if (c.mode == "dynamic_range" && (c.input_type != "float32" || c.output_type != "float32")) {
    if (e.contains("input_type") || e.contains("output_type"))
      throw fail("/export/mode", "dynamic_range keeps float32 inputs and outputs; drop input_type/output_type");
    c.input_type = c.output_type = "float32";
  }
  return c;
}

}  // namespace ramjet::core
