#include "ramjet/core/batch.hpp"

#include "ramjet/core/failure.hpp"

#include <cstring>
#include <vector>

namespace ramjet::core {

Example stack_examples(std::span<const Example> examples, int64_t first_index) {
  Example batch;
  if (examples.empty()) return batch;
  const Example& head = examples.front();
  for (size_t t = 0; t < head.entries.size(); ++t) {
    const auto& name = head.entries[t].name;
    const DLTensor& proto = head.entries[t].tensor->dl_tensor;
    std::vector<int64_t> shape{static_cast<int64_t>(examples.size())};
    shape.insert(shape.end(), proto.shape, proto.shape + proto.ndim);
    TensorPtr out = make_tensor(proto.dtype, shape);
    const size_t item_bytes = byte_size(proto);
    auto* dst = static_cast<char*>(out->dl_tensor.data);
    for (size_t i = 0; i < examples.size(); ++i) {
      const DLTensor* src = examples[i].find(name);
      const std::string element = "element " + std::to_string(first_index + static_cast<int64_t>(i));
      if (src == nullptr) throw InvalidInput(element + " has no tensor '" + name + "' but earlier elements do");
      if (!(src->dtype.code == proto.dtype.code && src->dtype.bits == proto.dtype.bits &&
            src->dtype.lanes == proto.dtype.lanes))
        throw InvalidInput(element + ": tensor '" + name + "' has dtype " + dtype_to_string(src->dtype) +
                           ", earlier elements have " + dtype_to_string(proto.dtype) + "; cannot batch");
      bool same_shape = src->ndim == proto.ndim;
      for (int32_t d = 0; same_shape && d < proto.ndim; ++d) same_shape = src->shape[d] == proto.shape[d];
      if (!same_shape)
        throw InvalidInput(element + ": tensor '" + name + "' has shape " + shape_to_string(*src) +
                           ", earlier elements have " + shape_to_string(proto) + "; cannot batch (resize or crop first)");
      if (src->device.device_type != kDLCPU || !is_c_contiguous(*src))
        throw InvalidInput(element + ": tensor '" + name + "' is not a contiguous CPU tensor; cannot batch");
      std::memcpy(dst + i * item_bytes, first_byte(*src), item_bytes);
    }
    batch.set(name, std::move(out));
  }
  return batch;
}

}  // namespace ramjet::core
