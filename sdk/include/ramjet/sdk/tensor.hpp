// DLTensor helpers (element count, contiguity, typed data) and ramjet::Tensor, the owner of one DLManagedTensor.
#ifndef RAMJET_SDK_TENSOR_HPP
#define RAMJET_SDK_TENSOR_HPP

#include <ramjet/abi.h>
#include <ramjet/sdk/dtype.hpp>
#include <ramjet/sdk/error.hpp>
#include <ramjet/sdk/host.hpp>

#include <cstdint>
#include <initializer_list>
#include <span>
#include <utility>

namespace ramjet {

// Shapes come from the host, which refuses tensors whose element count overflows int64.
inline int64_t element_count(const DLTensor& t) {
  int64_t n = 1;
  for (int32_t i = 0; i < t.ndim; ++i) n *= t.shape[i];
  return n;
}

inline bool is_contiguous(const DLTensor& t) {
  if (t.strides == nullptr) return true;
  int64_t expected = 1;
  for (int32_t i = t.ndim - 1; i >= 0; --i) {
    if (t.shape[i] != 1 && t.strides[i] != expected) return false;
    expected *= t.shape[i];
  }
  return true;
}

// Typed pointer to the first element, checking the dtype (CPU tensors).
template <class T>
T* data_as(DLTensor& t) {
  if (!same_dtype(t.dtype, dtype_of<T>()))
    throw Error(RAMJET_ERR_UNSUPPORTED, "tensor has dtype " + dtype_name(t.dtype) + ", expected " +
                                            dtype_name(dtype_of<T>()));
  return reinterpret_cast<T*>(static_cast<char*>(t.data) + t.byte_offset);
}

// Owns one DLManagedTensor; moving hands the ownership on.
class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(DLManagedTensor* owned) : owned_(owned) {}
  Tensor(Tensor&& other) noexcept : owned_(std::exchange(other.owned_, nullptr)) {}
  Tensor& operator=(Tensor&& other) noexcept {
    if (this != &other) reset(std::exchange(other.owned_, nullptr));
    return *this;
  }
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  ~Tensor() { reset(nullptr); }

  // A zero-filled, contiguous CPU tensor allocated by the host.
  static Tensor zeros(DLDataType dtype, std::span<const int64_t> shape) {
    DLManagedTensor* t = host().tensor_new(dtype, static_cast<int32_t>(shape.size()), shape.data());
    if (t == nullptr) throw Error(RAMJET_ERR_OUT_OF_MEMORY, "cannot allocate a tensor");
    return Tensor(t);
  }
  static Tensor zeros(DLDataType dtype, std::initializer_list<int64_t> shape) {
    return zeros(dtype, std::span<const int64_t>(shape.begin(), shape.size()));
  }

  DLTensor& dl() { return owned_->dl_tensor; }
  template <class T>
  T* data() { return data_as<T>(dl()); }
  DLManagedTensor* release() { return std::exchange(owned_, nullptr); }
  explicit operator bool() const { return owned_ != nullptr; }

 private:
  void reset(DLManagedTensor* next) {
    if (owned_ != nullptr && owned_->deleter != nullptr) owned_->deleter(owned_);
    owned_ = next;
  }
  DLManagedTensor* owned_ = nullptr;
};

}  // namespace ramjet

#endif  // RAMJET_SDK_TENSOR_HPP
