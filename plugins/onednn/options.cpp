#include "options.hpp"

#include "graph.hpp"
#include "precision_policy.hpp"

#include <algorithm>
#include <limits>

namespace onednn {
namespace {

using ramjet::Field;
using ramjet::Fields;
using nlohmann::json;

constexpr DLDataType kFloat32{kDLFloat, 32, 1};
constexpr DLDataType kBfloat16{kDLBfloat, 16, 1};

// The options object itself; the optimizer and layer_dtypes are judged by their own rules below.
Fields option_fields() {
  return {Field::integer("batch").at_least(1).fallback(32).doc("the batch the program is built for"),
          Field::integer("threads").at_least(0).at_most(std::numeric_limits<int>::max())
              .doc("OpenMP threads; overrides the backend's configuration (0: OpenMP's default)"),
          Field::string("precision").doc("float32, mixed_bfloat16, or int8 for a qgraph"),
          Field::any("optimizer").doc("{\"type\": sgd|adam|adamw|rmsprop, ...}; null or absent: adam"),
          Field::any("layer_dtypes").doc("{\"<node>\": {\"compute\": ..., \"variable\": ...}}")};
}

Fields layer_dtype_fields() {
  return {Field::string("compute").required().doc("dtype name the layer computes in"),
          Field::string("variable").required().doc("dtype name its weights are kept in")};
}

const char* const kSupportedPrecisions =
    "the cpu backend computes in float32, or in bfloat16 over float32 variables (mixed_bfloat16)";

// Why this backend cannot run precision `p`; nothing when it can.
std::optional<std::string> unsupported_precision(const std::string& p) {
  if (p == "float32" || p == "mixed_bfloat16" || p == "int8") return std::nullopt;
  if (p == "mixed_float16")
    return "precision 'mixed_float16' is not supported by the onednn cpu backend (float16 is the GPU backend's; use "
           "mixed_bfloat16 or float32)";
  if (p == "bfloat16")
    return "precision 'bfloat16' (bf16 weights) is not supported by the onednn cpu backend; mixed_bfloat16 computes "
           "in bf16 with float32 weights";
  std::string message = "unknown precision '" + p + "' (float32, mixed_bfloat16, int8)";
  if (auto guess = ramjet::closest_word(p, {"float32", "mixed_bfloat16", "int8"}))
    message += "; did you mean '" + *guess + "'?";
  return message;
}

// Each entry on its own: well formed, and dtypes this backend has. Whether the entries together make one
// precision needs the graph (which nodes have parameters): precision_of() judges that at compile.
void judge_layer_dtypes(const json& layers, std::vector<OptionIssue>& out) {
  if (!layers.is_object()) {
    out.push_back({RAMJET_ERR_INVALID_ARGUMENT,
                   {"/layer_dtypes", "must be an object mapping node names to {\"compute\", \"variable\"}, got " +
                                         ramjet::quote_value(layers)}});
    return;
  }
  const Fields fields = layer_dtype_fields();
  for (const auto& [node, entry] : layers.items()) {
    const std::string pointer = "/layer_dtypes/" + ramjet::pointer_token(node);
    ramjet::Problems problems;
    fields.check(entry, pointer, problems);
    if (!problems.empty()) {
      for (auto& p : problems) out.push_back({RAMJET_ERR_INVALID_ARGUMENT, std::move(p)});
      continue;
    }
    DLDataType compute{}, variable{};
    bool named = true;
    for (const auto& [key, dtype] : {std::pair{"compute", &compute}, std::pair{"variable", &variable}}) {
      const std::string text = entry.at(key);
      if (ramjet::parse_dtype(text, *dtype)) continue;
      out.push_back({RAMJET_ERR_INVALID_ARGUMENT, {pointer + "/" + key, "'" + text + "' is not a dtype name"}});
      named = false;
    }
    if (!named) continue;
    if (!ramjet::same_dtype(compute, kFloat32) && !ramjet::same_dtype(compute, kBfloat16))
      out.push_back({RAMJET_ERR_UNSUPPORTED, {pointer, "node '" + node + "' computes in " + ramjet::dtype_name(compute) +
                                                           "; " + kSupportedPrecisions}});
    else if (!ramjet::same_dtype(variable, kFloat32))
      out.push_back({RAMJET_ERR_UNSUPPORTED, {pointer, "node '" + node + "' keeps its variables in " +
                                                           ramjet::dtype_name(variable) + "; " + kSupportedPrecisions}});
  }
}

// oneDNN runs bf16 on AVX-512 cores (natively with avx512_bf16, emulated on plain avx512_core); below that it falls
// back to reference loops many times slower than float32, which no one asking for mixed precision wants.
void require_bf16_isa() {
  const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
  const auto avx512_core = static_cast<unsigned>(dnnl::cpu_isa::avx512_core);  // ISA values nest as bit masks
  if ((isa & avx512_core) == avx512_core) return;
  fail(RAMJET_ERR_UNSUPPORTED, "compile options: precision 'mixed_bfloat16' needs a CPU with AVX-512 (oneDNN would "
                               "run bf16 on reference kernels here); use float32");
}

// The backend's precision for per-node dtypes (each entry already judged). The nodes that decide are those with
// parameters, less the ones this backend keeps in float32 anyway (batch_norm); without any, every node not kept in
// float32. They must agree: all bfloat16 is mixed_bfloat16, all float32 is float32. A node without an entry is
// float32. Nodes kept in float32 (softmax, batch_norm) and parameter-free layers between the deciding ones follow
// the precision whatever their entry says.
Precision precision_of(const json& layers, const Graph& graph) {
  auto computes_bf16 = [&](const NodeSpec& node) {
    const auto it = layers.find(node.name);
    return it != layers.end() && it->at("compute") == "bfloat16";
  };
  bool any_parameters = false;
  for (const NodeSpec& node : graph.nodes) any_parameters |= !node.params.empty() && !keeps_float32(node.op, node.attrs);
  const NodeSpec* first = nullptr;
  for (const NodeSpec& node : graph.nodes) {
    if (keeps_float32(node.op, node.attrs) || (any_parameters && node.params.empty())) continue;
    if (first == nullptr) {
      first = &node;
    } else if (computes_bf16(node) != computes_bf16(*first)) {
      auto word = [&](const NodeSpec& n) { return computes_bf16(n) ? "bfloat16" : "float32"; };
      fail(RAMJET_ERR_UNSUPPORTED, "compile options: /layer_dtypes/" + ramjet::pointer_token(node.name) + ": node '" +
                                       node.name + "' computes in " + word(node) + " but node '" + first->name +
                                       "' in " + word(*first) + "; the cpu backend runs every layer" +
                                       (any_parameters ? " with parameters" : "") +
                                       " in one precision: float32, or bfloat16 over float32 variables "
                                       "(mixed_bfloat16)");
    }
  }
  return first != nullptr && computes_bf16(*first) ? Precision::mixed_bfloat16 : Precision::float32;
}

}  // namespace

std::vector<OptionIssue> option_issues(const json& options) {
  std::vector<OptionIssue> out;
  ramjet::Problems problems;
  option_fields().check(options, "", problems);
  for (auto& p : problems) out.push_back({RAMJET_ERR_INVALID_ARGUMENT, std::move(p)});
  if (!options.is_object()) return out;
  if (auto it = options.find("precision"); it != options.end() && it->is_string())
    if (auto why = unsupported_precision(it->get<std::string>()))
      out.push_back({RAMJET_ERR_UNSUPPORTED, {"/precision", *why}});
  if (auto it = options.find("optimizer"); it != options.end())
    ramjet::judge_optimizer(*it, ramjet::optimizer_types(), "onednn cpu backend", out);
  if (auto it = options.find("layer_dtypes"); it != options.end()) {
    judge_layer_dtypes(*it, out);
    if (options.contains("precision"))
      out.push_back({RAMJET_ERR_INVALID_ARGUMENT,
                     {"/layer_dtypes", "give either precision or layer_dtypes, not both"}});
  }
  return out;
}

CompileOptions parse_options(const json& json_options, const Graph* graph) {
  const std::vector<OptionIssue> issues = option_issues(json_options);
  if (!issues.empty()) throw ramjet::options_error(issues);
  const json o = option_fields().with_defaults(json_options);
  CompileOptions options;
  options.batch = o.at("batch").get<int64_t>();
  if (o.contains("threads")) options.threads = o["threads"].get<int>();
  if (o.contains("precision")) {
    options.precision = o["precision"] == "mixed_bfloat16" ? Precision::mixed_bfloat16 : Precision::float32;
  } else if (o.contains("layer_dtypes")) {
    if (graph == nullptr) fail(RAMJET_ERR_INTERNAL, "compile options: layer_dtypes need the graph");
    options.precision = precision_of(o["layer_dtypes"], *graph);
  }
  if (options.precision == Precision::mixed_bfloat16) require_bf16_isa();

  if (o.contains("optimizer")) options.optimizer = ramjet::read_optimizer(o["optimizer"]);
  return options;
}

}  // namespace onednn
