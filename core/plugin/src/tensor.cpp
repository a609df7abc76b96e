#include "ramjet/plugin/tensor.hpp"

#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

namespace ramjet::core {
namespace {

// One allocation: the DLManagedTensor, then the shape, then (aligned) the data.
struct CpuTensorBlock {
  DLManagedTensor managed;
  int32_t ndim;
  size_t total;  // bytes of the whole block, for the pool
};

constexpr size_t kAlignment = 64;

// Large blocks (batches, images) are recycled instead of going back to malloc: a fresh large allocation is an
// mmap whose pages fault in one by one under the process's memory-map lock, which serialises every thread that
// allocates. Steady-state training and input pipelines then allocate nothing large at all. A block above
// kMaxBlockBytes goes back to malloc (glibc unmaps it): such blocks are one-off copies of a large model's weights
// (its initial values, a broadcast), which a pool would keep resident for the rest of the run beside the
// backend's own copy, and whose page faults cost little against the time spent filling them.
class LargeBlockPool {
 public:
  static constexpr size_t kMinBytes = size_t{64} << 10;
  static constexpr size_t kMaxBlockBytes = size_t{32} << 20;
  static constexpr size_t kMaxPooledBytes = size_t{256} << 20;

  void* take(size_t total) {
    std::lock_guard lock(mutex_);
    for (size_t i = 0; i < free_.size(); ++i) {
      if (free_[i].second == total) {
        void* block = free_[i].first;
        free_[i] = free_.back();
        free_.pop_back();
        pooled_bytes_ -= total;
        return block;
      }
    }
    return nullptr;
  }
  void give(void* block, size_t total) {
    {
      std::lock_guard lock(mutex_);
      if (total <= kMaxBlockBytes && pooled_bytes_ + total <= kMaxPooledBytes) {
        free_.emplace_back(block, total);
        pooled_bytes_ += total;
        return;
      }
    }
    std::free(block);
  }
  ~LargeBlockPool() {
    for (auto& [block, size] : free_) std::free(block);
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<void*, size_t>> free_;
  size_t pooled_bytes_ = 0;
};

LargeBlockPool& pool() {
  static LargeBlockPool* instance = new LargeBlockPool();  // never destroyed: tensors may outlive statics
  return *instance;
}

// Small blocks (one element's tensors) are recycled per thread: an input pipeline makes and frees a few tensors
// of the same sizes per element on each worker, and malloc's coalescing and aligned-allocation paths would
// otherwise cost as much as the transforms themselves.
class SmallBlockCache {
 public:
  static constexpr size_t kClasses = 8;
  static constexpr size_t kPerClass = 64;

  void* take(size_t total) {
    for (auto& c : classes_)
      if (c.size == total && c.count > 0) return c.blocks[--c.count];
    return nullptr;
  }
  bool give(void* block, size_t total) {
    Class* empty = nullptr;
    for (auto& c : classes_) {
      if (c.size == total) {
        if (c.count == kPerClass) return false;
        c.blocks[c.count++] = block;
        return true;
      }
      if (c.count == 0 && empty == nullptr) empty = &c;
    }
    if (empty == nullptr) return false;
    empty->size = total;  // an unused class takes the new size
    empty->blocks[empty->count++] = block;
    return true;
  }
  ~SmallBlockCache() {
    for (auto& c : classes_)
      for (size_t i = 0; i < c.count; ++i) std::free(c.blocks[i]);
  }

 private:
  struct Class {
    size_t size = 0;
    size_t count = 0;
    void* blocks[kPerClass];
  };
  Class classes_[kClasses];
};

thread_local SmallBlockCache small_blocks;

void delete_cpu_tensor(DLManagedTensor* t) {
  auto* block = reinterpret_cast<CpuTensorBlock*>(t);
  const size_t total = block->total;
  void* raw = t->manager_ctx;
  if (total >= LargeBlockPool::kMinBytes) pool().give(raw, total);
  else if (!small_blocks.give(raw, total)) std::free(raw);
}

size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

}  // namespace

DLManagedTensor* new_cpu_tensor(DLDataType dtype, std::span<const int64_t> shape) noexcept {
  return new_cpu_tensor(dtype, shape, true);
}

DLManagedTensor* new_cpu_tensor(DLDataType dtype, std::span<const int64_t> shape, bool zero) noexcept {
  // Every product is checked: a shape whose size overflows gets no tensor rather than a short one.
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0 || __builtin_mul_overflow(count, d, &count)) return nullptr;
  }
  size_t data_bytes;
  if (__builtin_mul_overflow(static_cast<size_t>(count), dtype_size(dtype), &data_bytes) ||
      data_bytes > (size_t{1} << 48))
    return nullptr;
  const size_t header = round_up(sizeof(CpuTensorBlock) + shape.size() * sizeof(int64_t), kAlignment);
  data_bytes = round_up(data_bytes, kAlignment);
  const size_t total = header + (data_bytes == 0 ? kAlignment : data_bytes);
  void* raw = total >= LargeBlockPool::kMinBytes ? pool().take(total) : small_blocks.take(total);
  if (raw == nullptr) raw = std::aligned_alloc(kAlignment, total);
  if (raw == nullptr) return nullptr;
  std::memset(raw, 0, zero ? total : header);
  auto* block = static_cast<CpuTensorBlock*>(raw);
  block->total = total;
  auto* dims = reinterpret_cast<int64_t*>(reinterpret_cast<char*>(raw) + sizeof(CpuTensorBlock));
  for (size_t i = 0; i < shape.size(); ++i) dims[i] = shape[i];
  block->ndim = static_cast<int32_t>(shape.size());
  DLTensor& t = block->managed.dl_tensor;
  t.data = static_cast<char*>(raw) + header;
  t.device = {kDLCPU, 0};
  t.ndim = block->ndim;
  t.dtype = dtype;
  t.shape = dims;
  t.strides = nullptr;
  t.byte_offset = 0;
  block->managed.manager_ctx = raw;
  block->managed.deleter = &delete_cpu_tensor;
  return &block->managed;
}

bool is_host_tensor(const DLManagedTensor* t) noexcept { return t != nullptr && t->deleter == &delete_cpu_tensor; }

TensorPtr make_tensor(DLDataType dtype, std::span<const int64_t> shape, bool zero) {
  DLManagedTensor* t = new_cpu_tensor(dtype, shape, zero);
  if (t == nullptr) throw std::bad_alloc();
  return TensorPtr(t);
}

int64_t element_count(const DLTensor& t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t.ndim; ++i) n *= t.shape[i];
  return n;
}

size_t dtype_size(DLDataType dtype) { return (static_cast<size_t>(dtype.bits) * dtype.lanes + 7) / 8; }

size_t byte_size(const DLTensor& t) { return static_cast<size_t>(element_count(t)) * dtype_size(t.dtype); }

bool is_c_contiguous(const DLTensor& t) {
  if (t.strides == nullptr) return true;
  int64_t expected = 1;
  for (int32_t i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != 1 && t.strides[i] != expected) return false;
    expected *= t.shape[i];
  }
  return true;
}

const void* first_byte(const DLTensor& t) { return static_cast<const char*>(t.data) + t.byte_offset; }

std::string dtype_to_string(DLDataType dtype) {
  std::string base;
  switch (dtype.code) {
    case kDLInt: base = "int"; break;
    case kDLUInt: base = "uint"; break;
    case kDLFloat: base = "float"; break;
    case kDLBfloat: base = "bfloat"; break;
    default: base = "dtype" + std::to_string(dtype.code) + "_"; break;
  }
  std::string s = base + std::to_string(dtype.bits);
  if (dtype.lanes != 1) s += "x" + std::to_string(dtype.lanes);
  return s;
}

std::string shape_to_string(const DLTensor& t) {
  std::string s = "[";
  for (int32_t i = 0; i < t.ndim; ++i) {
    if (i) s += ", ";
    s += std::to_string(t.shape[i]);
  }
  return s + "]";
}

}  // namespace ramjet::core
