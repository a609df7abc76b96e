#include "qparams.hpp"

#include <algorithm>
#include <cstring>

namespace onednn::int8 {
namespace {

constexpr DLDataType kInt8{kDLInt, 8, 1};
constexpr DLDataType kInt32{kDLInt, 32, 1};

}  // namespace

QParamStore::QParamStore(const nlohmann::json& params) {
  if (params.is_null()) return;
  if (!params.is_object()) fail(RAMJET_ERR_INVALID_ARGUMENT, "qgraph: #/params must be an object");
  for (const auto& [name, spec] : params.items()) {
    const std::string where = "qgraph: #/params/" + name;
    const std::string dtype = spec.is_object() ? spec.value("dtype", std::string()) : std::string();
    if (dtype != "int8" && dtype != "int32")
      fail(RAMJET_ERR_UNSUPPORTED, where + ": dtype '" + dtype +
                                       "' is not supported by the onednn int8 program (int8 kernels, int32 biases)");
    QParam p;
    p.name = name;
    p.shape = spec.at("shape").get<Shape>();
    p.dtype = dtype == "int8" ? kInt8 : kInt32;
    if (dtype == "int8") p.s8.assign(p.count(), 0);
    else p.s32.assign(p.count(), 0);
    by_name_[name] = params_.size();
    params_.push_back(std::move(p));
  }
}

const QParam& QParamStore::get(const std::string& name) const {
  const auto it = by_name_.find(name);
  if (it == by_name_.end()) fail(RAMJET_ERR_INVALID_ARGUMENT, "qgraph: parameter '" + name + "' is not declared in #/params");
  return params_[it->second];
}

void QParamStore::set(ramjet::Example& values) {
  const std::string what = "set_state(parameters): ";
  std::vector<std::pair<QParam*, const DLTensor*>> copies;
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string name(values.name(i));
    const DLTensor& t = *values.at(i);
    const auto it = by_name_.find(name);
    if (it == by_name_.end())
      fail(RAMJET_ERR_INVALID_ARGUMENT, what + "the int8 program has no parameter named '" + name + "'");
    QParam& p = params_[it->second];
    if (!ramjet::same_dtype(t.dtype, p.dtype))
      fail(RAMJET_ERR_INVALID_ARGUMENT, what + "'" + name + "' has dtype " + ramjet::dtype_name(t.dtype) +
                                            "; it must be " + ramjet::dtype_name(p.dtype));
    if (t.device.device_type != kDLCPU) fail(RAMJET_ERR_INVALID_ARGUMENT, what + "'" + name + "' is not a CPU tensor");
    if (t.ndim != static_cast<int32_t>(p.shape.size()) || !std::equal(p.shape.begin(), p.shape.end(), t.shape))
      fail(RAMJET_ERR_INVALID_ARGUMENT, what + "'" + name + "' has shape " + shape_string(Shape(t.shape, t.shape + t.ndim)) +
                                            "; it must be " + shape_string(p.shape));
    if (!ramjet::is_contiguous(t)) fail(RAMJET_ERR_INVALID_ARGUMENT, what + "'" + name + "' must be contiguous");
    copies.emplace_back(&p, &t);
  }
  for (auto& [p, t] : copies) {
    const char* src = static_cast<const char*>(t->data) + t->byte_offset;
    if (!p->s8.empty()) std::memcpy(p->s8.data(), src, p->s8.size());
    if (!p->s32.empty()) std::memcpy(p->s32.data(), src, p->s32.size() * sizeof(int32_t));
    p->set = true;
  }
  ++version_;
}

void QParamStore::copy_to(ramjet::Example& out) const {
  for (const QParam& p : params_) {
    ramjet::Tensor t = ramjet::Tensor::zeros(p.dtype, p.shape);
    if (!p.s8.empty()) std::memcpy(t.data<int8_t>(), p.s8.data(), p.s8.size());
    else std::memcpy(t.data<int32_t>(), p.s32.data(), p.s32.size() * sizeof(int32_t));
    out.set(p.name, std::move(t));
  }
}

void QParamStore::require_complete(const std::string& what) const {
  for (const QParam& p : params_)
    if (!p.set)
      fail(RAMJET_ERR_INVALID_ARGUMENT, what + ": parameter '" + p.name +
                                            "' was never set; call set_state(\"parameters\", qparams) first");
}

}  // namespace onednn::int8
