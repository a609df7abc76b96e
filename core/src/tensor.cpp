#include "ramjet/core/tensor.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

namespace ramjet::core {
namespace {

// One allocation: the DLManagedTensor, then the shape, then (aligned) the data.
struct CpuTensorBlock {
  DLManagedTensor managed;
  int32_t ndim;
};

void delete_cpu_tensor(DLManagedTensor* t) { std::free(t->manager_ctx); }

constexpr size_t kAlignment = 64;

size_t round_up(size_t n, size_t a) { return (n + a - 1) / a * a; }

}  // namespace

DLManagedTensor* new_cpu_tensor(DLDataType dtype, std::span<const int64_t> shape) noexcept {
  size_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) return nullptr;
    count *= static_cast<size_t>(d);
  }
  const size_t header = round_up(sizeof(CpuTensorBlock) + shape.size() * sizeof(int64_t), kAlignment);
  const size_t data_bytes = round_up(count * dtype_size(dtype), kAlignment);
  void* raw = std::aligned_alloc(kAlignment, header + (data_bytes == 0 ? kAlignment : data_bytes));
  if (raw == nullptr) return nullptr;
  std::memset(raw, 0, header + data_bytes);
  auto* block = static_cast<CpuTensorBlock*>(raw);
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

TensorPtr make_tensor(DLDataType dtype, std::span<const int64_t> shape) {
  DLManagedTensor* t = new_cpu_tensor(dtype, shape);
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
