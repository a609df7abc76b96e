// Owning handles and small helpers for DLPack tensors on the host side.
#pragma once

#include <ramjet/abi.h>

#include <cstdint>
#include <memory>
#include <span>
#include <string>

namespace ramjet::core {

struct ManagedTensorDeleter {
  void operator()(DLManagedTensor* t) const noexcept {
    if (t != nullptr && t->deleter != nullptr) t->deleter(t);
  }
};
using TensorPtr = std::unique_ptr<DLManagedTensor, ManagedTensorDeleter>;

// A zero-filled, 64-byte aligned, C-contiguous CPU tensor. Null on allocation failure.
DLManagedTensor* new_cpu_tensor(DLDataType dtype, std::span<const int64_t> shape) noexcept;
// `zero = false` leaves the data uninitialised, for callers that overwrite every byte.
DLManagedTensor* new_cpu_tensor(DLDataType dtype, std::span<const int64_t> shape, bool zero) noexcept;
TensorPtr make_tensor(DLDataType dtype, std::span<const int64_t> shape, bool zero = true);
// True for tensors made by new_cpu_tensor (their deleter is the host's, not a plugin's).
bool is_host_tensor(const DLManagedTensor* t) noexcept;

int64_t element_count(const DLTensor& t);
size_t dtype_size(DLDataType dtype);
size_t byte_size(const DLTensor& t);
bool is_c_contiguous(const DLTensor& t);
const void* first_byte(const DLTensor& t);
std::string dtype_to_string(DLDataType dtype);
std::string shape_to_string(const DLTensor& t);

}  // namespace ramjet::core
