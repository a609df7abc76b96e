#include "options.hpp"

#include <cmath>

namespace onednn {
namespace {

[[noreturn]] void invalid(const std::string& message) { fail(RAMJET_ERR_INVALID_ARGUMENT, "compile options: " + message); }

double number(const nlohmann::json& object, const char* key, double fallback, const std::string& where) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return fallback;
  if (!it->is_number() || !std::isfinite(it->get<double>())) invalid(where + "/" + key + " must be a finite number");
  return it->get<double>();
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

}  // namespace

CompileOptions parse_options(const nlohmann::json& json) {
  CompileOptions options;
  if (!json.is_object()) invalid("must be a JSON object");

  if (auto it = json.find("batch"); it != json.end()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 1) invalid("batch must be a positive integer");
    options.batch = it->get<int64_t>();
  }

  if (auto it = json.find("precision"); it != json.end()) {
    if (!it->is_string()) invalid("precision must be a string");
    const std::string p = it->get<std::string>();
    if (p == "mixed_bfloat16") {
      require_bf16_isa();
      options.precision = Precision::mixed_bfloat16;
    } else if (p == "mixed_float16") {
      fail(RAMJET_ERR_UNSUPPORTED, "compile options: precision 'mixed_float16' is not supported by the onednn cpu "
                                   "backend (float16 is the GPU backend's; use mixed_bfloat16 or float32)");
    } else if (p == "bfloat16") {
      fail(RAMJET_ERR_UNSUPPORTED, "compile options: precision 'bfloat16' (bf16 weights) is not supported by the "
                                   "onednn cpu backend; mixed_bfloat16 computes in bf16 with float32 weights");
    } else if (p != "float32") {
      fail(RAMJET_ERR_UNSUPPORTED, "compile options: unknown precision '" + p + "' (float32, mixed_bfloat16)");
    }
  }

  if (auto it = json.find("optimizer"); it != json.end() && !it->is_null()) {
    const auto& o = *it;
    if (!o.is_object()) invalid("optimizer must be an object");
    const std::string type = o.value("type", std::string("adam"));
    OptimizerSpec& spec = options.optimizer;
    const std::string where = "optimizer";
    if (type == "sgd") {
      spec.type = OptimizerSpec::Type::sgd;
      spec.momentum = number(o, "momentum", 0.0, where);
      if (spec.momentum < 0 || spec.momentum >= 1) invalid("optimizer/momentum must be in [0, 1)");
      if (o.contains("nesterov")) {
        if (!o["nesterov"].is_boolean()) invalid("optimizer/nesterov must be true or false");
        spec.nesterov = o["nesterov"].get<bool>();
      }
    } else if (type == "adam" || type == "adamw") {
      spec.type = type == "adam" ? OptimizerSpec::Type::adam : OptimizerSpec::Type::adamw;
      spec.beta_1 = number(o, "beta_1", 0.9, where);
      spec.beta_2 = number(o, "beta_2", 0.999, where);
      spec.epsilon = number(o, "epsilon", 1e-7, where);
      if (spec.beta_1 < 0 || spec.beta_1 >= 1 || spec.beta_2 < 0 || spec.beta_2 >= 1)
        invalid("optimizer/beta_1 and beta_2 must be in [0, 1)");
      if (spec.epsilon <= 0) invalid("optimizer/epsilon must be > 0");
    } else {
      fail(RAMJET_ERR_UNSUPPORTED, "compile options: optimizer type '" + type +
                                       "' is not supported by the onednn cpu backend (sgd, adam, adamw)");
    }
    // Keras's AdamW default; the others default to none.
    spec.weight_decay = number(o, "weight_decay", type == "adamw" ? 0.004 : 0.0, where);
    if (spec.weight_decay < 0) invalid("optimizer/weight_decay must be >= 0");
  }
  return options;
}

}  // namespace onednn
