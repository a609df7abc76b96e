#include "ramjet/data/batch.hpp"

#include "ramjet/data/example_io.hpp"
#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/machine_limits.hpp"

#include <cstring>
#include <vector>

namespace ramjet::core {
namespace {

bool same_layout(const DLTensor& element, const DLTensor& batch) {
  if (element.dtype.code != batch.dtype.code || element.dtype.bits != batch.dtype.bits ||
      element.dtype.lanes != batch.dtype.lanes || element.ndim + 1 != batch.ndim)
    return false;
  for (int32_t d = 0; d < element.ndim; ++d)
    if (element.shape[d] != batch.shape[d + 1]) return false;
  return true;
}

std::string batch_shape_of_item(const DLTensor& batch) {
  std::string s = "[";
  for (int32_t d = 1; d < batch.ndim; ++d) s += (d > 1 ? ", " : "") + std::to_string(batch.shape[d]);
  return s + "]";
}

}  // namespace

// A batch is allocated whole when its first element arrives: refuse one that cannot fit in this machine's memory
// (half of it, leaving room for the model) before asking for it, rather than failing inside the allocator.
void BatchAssembly::check_batch_fits(const Example& element) const {
  uint64_t bytes = 0;
  for (const auto& e : element.entries) {
    uint64_t tensor_bytes = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(byte_size(e.tensor->dl_tensor)), static_cast<uint64_t>(batch_),
                               &tensor_bytes) ||
        __builtin_add_overflow(bytes, tensor_bytes, &bytes))
      bytes = UINT64_MAX;
  }
  const uint64_t memory = static_cast<uint64_t>(physical_memory_bytes());
  if (memory > 0 && bytes > memory / 2)
    throw InvalidInput("a batch of " + std::to_string(batch_) + " elements of " +
                       std::to_string(example_bytes(element)) + " bytes would need " +
                       (bytes == UINT64_MAX ? std::string("more than 2^64") : std::to_string(bytes >> 20) + " MiB") +
                       ", over half of this machine's memory (" + std::to_string(memory >> 20) +
                       " MiB): lower the batch size");
}

void BatchAssembly::place(int64_t epoch, int64_t position, const Example& element) {
  const auto key = std::make_pair(epoch, position / batch_);
  const int64_t slot = position % batch_;
  Example* batch;
  {
    std::lock_guard lock(mutex_);
    auto& entry = pending_[key];
    if (!entry) {
      // The first element to arrive fixes the batch's tensors.
      entry = std::make_unique<Example>();
      check_batch_fits(element);
      for (const auto& e : element.entries) {
        const DLTensor& t = e.tensor->dl_tensor;
        std::vector<int64_t> shape{batch_};
        shape.insert(shape.end(), t.shape, t.shape + t.ndim);
        entry->set(e.name, make_tensor(t.dtype, shape, /*zero=*/false));  // every slot is written
      }
    }
    batch = entry.get();
  }
  const std::string where = "element " + std::to_string(position);
  if (element.entries.size() != batch->entries.size())
    throw InvalidInput(where + " has " + std::to_string(element.entries.size()) + " tensors, other elements of its batch have " +
                       std::to_string(batch->entries.size()) + "; cannot batch");
  // Distinct slots never overlap, so the copies need no lock.
  for (const auto& e : element.entries) {
    DLTensor* dst = batch->find(e.name);
    const DLTensor& src = e.tensor->dl_tensor;
    if (dst == nullptr) throw InvalidInput(where + " has a tensor '" + e.name + "' that other elements of its batch lack");
    if (!same_layout(src, *dst))
      throw InvalidInput(where + ": tensor '" + e.name + "' is " + dtype_to_string(src.dtype) + " " +
                         shape_to_string(src) + ", other elements of its batch are " + dtype_to_string(dst->dtype) +
                         " " + batch_shape_of_item(*dst) + "; cannot batch (resize or crop first)");
    if (src.device.device_type != kDLCPU || !is_c_contiguous(src))
      throw InvalidInput(where + ": tensor '" + e.name + "' is not a contiguous CPU tensor; cannot batch");
    const size_t bytes = byte_size(src);
    std::memcpy(static_cast<char*>(dst->data) + static_cast<size_t>(slot) * bytes, first_byte(src), bytes);
  }
}

Example BatchAssembly::take(int64_t epoch, int64_t index, int64_t count) {
  std::unique_ptr<Example> batch;
  {
    std::lock_guard lock(mutex_);
    auto it = pending_.find({epoch, index});
    if (it == pending_.end()) return Example{};
    batch = std::move(it->second);
    pending_.erase(it);
  }
  for (auto& e : batch->entries) e.tensor->dl_tensor.shape[0] = count;  // a short last batch keeps its memory
  return std::move(*batch);
}

Example stack_examples(std::span<const Example> examples, int64_t first_index) {
  Example batch;
  if (examples.empty()) return batch;
  const Example& head = examples.front();
  for (size_t t = 0; t < head.entries.size(); ++t) {
    const auto& name = head.entries[t].name;
    const DLTensor& proto = head.entries[t].tensor->dl_tensor;
    std::vector<int64_t> shape{static_cast<int64_t>(examples.size())};
    shape.insert(shape.end(), proto.shape, proto.shape + proto.ndim);
    TensorPtr out = make_tensor(proto.dtype, shape, /*zero=*/false);  // every item is copied in
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
