#include "parameters.hpp"

#include "kernels.hpp"
#include "layout.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <sys/mman.h>

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

ParameterStore::ParameterStore(const std::vector<std::pair<std::string, Shape>>& specs,
                               const std::vector<std::string>& model_order, const dnnl::engine& engine) {
  // Every gradient lives in one buffer, packed in reverse model order (the order backward finishes them), so the
  // host can all-reduce a bucket of neighbouring gradients as one view of it, with no copy (PyTorch DDP's
  // gradient_as_bucket_view, the other way round).
  const std::map<std::string, Shape> shapes(specs.begin(), specs.end());
  std::map<std::string, size_t> offset;
  size_t total = 0;
  auto place = [&](const std::string& name) {
    if (offset.count(name) || !shapes.count(name)) return;
    offset[name] = total;
    total += static_cast<size_t>(product(shapes.at(name)));
  };
  for (auto it = model_order.rbegin(); it != model_order.rend(); ++it) place(*it);
  for (const auto& spec : specs) place(spec.first);  // any the model order leaves out, after the rest
  const size_t bytes = std::max<size_t>(total, 1) * sizeof(float);
  void* pages = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (pages == MAP_FAILED)
    fail(RAMJET_ERR_OUT_OF_MEMORY, "cannot map " + std::to_string(bytes) + " bytes for the gradients: " +
                                       std::strerror(errno));
  gradient_arena_ = std::unique_ptr<float, Unmap>(static_cast<float*>(pages), Unmap{bytes});
  for (const auto& [name, shape] : specs) {
    auto p = std::make_unique<Param>();
    p->name = name;
    p->shape = shape;
    const md desc = row_major_md(shape);
    p->value = dnnl::memory(desc, engine);
    p->grad = dnnl::memory(desc, engine, gradient_arena_.get() + offset[name]);
    zero_floats(p->data(), p->count());  // parameters start at zero; the host sets them
    p->grad_view.dl_tensor = float_view(p->grad_data(), p->shape);
    by_name_[name] = p.get();
    params_.push_back(std::move(p));
  }
}

void ParameterStore::Unmap::operator()(float* p) const { ::munmap(p, bytes); }

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
