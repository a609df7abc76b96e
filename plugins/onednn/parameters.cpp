#include "parameters.hpp"

#include "kernels.hpp"
#include "layout.hpp"

namespace onednn {

DLTensor float_view(float* data, const Shape& shape) {
  DLTensor t{};
  t.data = data;
  t.device = {kDLCPU, 0};
  t.ndim = static_cast<int32_t>(shape.size());
  t.dtype = ramjet::dtype_of<float>();
  t.shape = const_cast<int64_t*>(shape.data());
  t.strides = nullptr;
  t.byte_offset = 0;
  return t;
}

ParameterStore::ParameterStore(const std::vector<std::pair<std::string, Shape>>& specs, const dnnl::engine& engine) {
  for (const auto& [name, shape] : specs) {
    auto p = std::make_unique<Param>();
    p->name = name;
    p->shape = shape;
    const md desc = row_major_md(shape);
    p->value = dnnl::memory(desc, engine);
    p->grad = dnnl::memory(desc, engine);
    zero_floats(p->data(), p->count());  // parameters start at zero; the host sets them
    zero_floats(p->grad_data(), p->count());
    p->grad_view.dl_tensor = float_view(p->grad_data(), p->shape);
    by_name_[name] = p.get();
    params_.push_back(std::move(p));
  }
}

Param* ParameterStore::find(const std::string& name) {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : it->second;
}

Param& ParameterStore::get(const std::string& name) {
  Param* p = find(name);
  if (p == nullptr) fail(RAMJET_ERR_INVALID_ARGUMENT, "no parameter named '" + name + "'");
  return *p;
}

}  // namespace onednn
