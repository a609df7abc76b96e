#include "ramjet/plugin/host_api.hpp"

#include "ramjet/plugin/example.hpp"
#include "ramjet/plugin/log.hpp"
#include "ramjet/plugin/tensor.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace ramjet::core {
namespace {

// Every function here is called from plugin code, possibly C: nothing may throw out of it.
void host_log(ramjet_log_level level, const char* source, const char* message) noexcept {
  try {
    log(level, source ? source : "", message ? message : "");
  } catch (...) {
  }
}

void host_error_set(ramjet_error* error, ramjet_status status, const char* message) noexcept {
  if (error == nullptr) return;
  error->status = status;
  try {
    error->message = message ? message : "";
  } catch (...) {
    // Out of memory while recording an error: the status still says what happened.
  }
}

void* host_alloc_aligned(size_t size, size_t alignment) noexcept {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) return nullptr;
  alignment = std::max(alignment, alignof(std::max_align_t));
  size_t rounded;
  if (__builtin_add_overflow(size, alignment - 1, &rounded)) return nullptr;
  rounded = rounded / alignment * alignment;
  return std::aligned_alloc(alignment, rounded == 0 ? alignment : rounded);
}

void host_free_aligned(void* pointer) noexcept { std::free(pointer); }

DLManagedTensor* host_tensor_new(DLDataType dtype, int32_t ndim, const int64_t* shape) noexcept {
  if (ndim < 0 || (ndim > 0 && shape == nullptr)) return nullptr;
  return new_cpu_tensor(dtype, std::span<const int64_t>(shape, static_cast<size_t>(ndim)));
}

ramjet_status host_buffer_assign(ramjet_buffer* buffer, const void* data, size_t size) noexcept {
  if (buffer == nullptr || (data == nullptr && size != 0)) return RAMJET_ERR_INVALID_ARGUMENT;
  try {
    buffer->bytes.assign(static_cast<const char*>(data), size);
    return RAMJET_OK;
  } catch (...) {
    return RAMJET_ERR_OUT_OF_MEMORY;
  }
}

size_t host_example_size(const ramjet_example* example) noexcept { return example ? example->entries.size() : 0; }

const char* host_example_name(const ramjet_example* example, size_t index) noexcept {
  if (example == nullptr || index >= example->entries.size()) return nullptr;
  return example->entries[index].name.c_str();
}

DLTensor* host_example_at(ramjet_example* example, size_t index) noexcept {
  if (example == nullptr || index >= example->entries.size()) return nullptr;
  return &example->entries[index].tensor->dl_tensor;
}

DLTensor* host_example_find(ramjet_example* example, const char* name) noexcept {
  if (example == nullptr || name == nullptr) return nullptr;
  return example->find(name);
}

ramjet_status host_example_set(ramjet_example* example, const char* name, DLManagedTensor* tensor) noexcept {
  TensorPtr owned(tensor);  // ownership is taken even on failure, as documented
  if (example == nullptr || name == nullptr || *name == '\0' || !owned) return RAMJET_ERR_INVALID_ARGUMENT;
  try {
    example->set(name, std::move(owned));
    return RAMJET_OK;
  } catch (...) {
    return RAMJET_ERR_OUT_OF_MEMORY;
  }
}

ramjet_status host_example_remove(ramjet_example* example, const char* name) noexcept {
  if (example == nullptr || name == nullptr) return RAMJET_ERR_INVALID_ARGUMENT;
  auto& entries = example->entries;
  for (auto it = entries.begin(); it != entries.end(); ++it) {
    if (it->name == name) {
      entries.erase(it);
      return RAMJET_OK;
    }
  }
  return RAMJET_ERR_INVALID_ARGUMENT;
}

const ramjet_host_api kHostApi = {
    sizeof(ramjet_host_api), RAMJET_ABI_VERSION, &host_log,          &host_error_set,
    &host_alloc_aligned,     &host_free_aligned, &host_tensor_new,   &host_buffer_assign,
    &host_example_size,      &host_example_name, &host_example_at,   &host_example_find,
    &host_example_set,       &host_example_remove};

}  // namespace

const ramjet_host_api* host_api() { return &kHostApi; }

std::string describe_status(ramjet_status status) {
  const char* what = "unknown status";
  switch (status) {
    case RAMJET_OK: what = "ok"; break;
    case RAMJET_ERR_INVALID_ARGUMENT: what = "invalid argument"; break;
    case RAMJET_ERR_OUT_OF_RANGE: what = "out of range"; break;
    case RAMJET_ERR_UNSUPPORTED: what = "unsupported"; break;
    case RAMJET_ERR_IO: what = "i/o error"; break;
    case RAMJET_ERR_CORRUPT_DATA: what = "corrupt data"; break;
    case RAMJET_ERR_OUT_OF_MEMORY: what = "out of memory"; break;
    case RAMJET_ERR_VERSION_MISMATCH: what = "version mismatch"; break;
    case RAMJET_ERR_INTERNAL: what = "internal error"; break;
    case RAMJET_ERR_DEVICE: what = "device error"; break;
  }
  return "status " + std::to_string(static_cast<int>(status)) + " (" + what + ")";
}

}  // namespace ramjet::core
