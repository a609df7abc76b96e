// What every program of a cuda backend runs on: one device, one stream that all of a step's work is enqueued on
// (so the work runs in order with no device-wide synchronisation), the cuBLASLt and cuDNN handles bound to that
// stream, and the caching allocator that all device memory comes from.
#pragma once

#include "caching_allocator.hpp"

#include <cublasLt.h>
#include <cuda_runtime_api.h>
#include <cudnn.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace cuda_plugin {

struct DeviceSettings {
  int ordinal = 0;
  MemorySettings memory;
  size_t cudnn_workspace_limit = size_t(256) << 20;  // per convolution, for its algorithm choice
  size_t blas_workspace = size_t(32) << 20;          // cuBLASLt's, shared by every dense product
  bool graphs = true;  // replay a step's fixed launches from CUDA graphs (step_graph.hpp)
};

class Device;

// A block of device memory from the device's allocator, returned to its cache when the buffer goes. Empty when
// default-made or asked for 0 bytes.
class Buffer {
 public:
  Buffer() = default;
  Buffer(Device& device, size_t bytes, const std::string& purpose);
  ~Buffer() { reset(); }
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* get() const { return data_; }
  template <class T>
  T* as() const { return static_cast<T*>(data_); }
  size_t bytes() const { return bytes_; }

 private:
  void reset();
  Device* device_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

class Device {
 public:
  // Makes `settings.ordinal` current on this thread. Throws RAMJET_ERR_DEVICE "no CUDA device: ..." where there is
  // none, and names the ordinal when it is out of range.
  explicit Device(const DeviceSettings& settings);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  cudaStream_t stream() const { return stream_; }
  // Where input batches are copied from pinned host memory, beside the previous step's compute (plan.cpp).
  cudaStream_t copy_stream() const { return copy_stream_; }
  cublasLtHandle_t blas() const { return blas_; }
  cudnnHandle_t dnn() const { return dnn_; }
  CachingAllocator& memory() { return *memory_; }
  const DeviceSettings& settings() const { return settings_; }
  void* blas_workspace() const { return blas_workspace_; }
  // Makes this device current on the calling thread (the ABI serialises calls but does not promise one thread).
  void activate() const;
  // One workspace for every convolution of every plan (all run on one stream, one at a time): reserve() grows it at
  // build time to the largest request; workspace() is read at run time, since a later reserve() may move it.
  void reserve_workspace(size_t bytes, const std::string& purpose);
  void* workspace() const { return conv_workspace_.get(); }
  // Counts the workspace's moves: a CUDA graph captured before one holds the old address (step_graph.hpp).
  uint64_t workspace_moves() const { return workspace_moves_; }
  // Waits for everything enqueued so far; `what` names the step in the error of a kernel that failed.
  void wait(const std::string& what) const;

 private:
  void release();  // what the constructor made so far, or all of it

  DeviceSettings settings_;
  cudaStream_t stream_ = nullptr;
  cudaStream_t copy_stream_ = nullptr;
  cublasLtHandle_t blas_ = nullptr;
  cudnnHandle_t dnn_ = nullptr;
  std::unique_ptr<CachingAllocator> memory_;
  void* blas_workspace_ = nullptr;
  Buffer conv_workspace_;
  uint64_t workspace_moves_ = 0;
};

// Page-locked host memory (cudaHostAlloc), which the device copies from without the driver staging it first and
// without waiting for the stream: the input batches' way in. Freed when it goes.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  PinnedBuffer(size_t bytes, const std::string& purpose);
  ~PinnedBuffer();
  PinnedBuffer(PinnedBuffer&& other) noexcept
      : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
  PinnedBuffer& operator=(PinnedBuffer&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(bytes_, other.bytes_);
    return *this;
  }
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;

  void* get() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

// A CUDA event without timing (the cheap kind), for ordering one stream after another. Destroyed when it goes.
class Event {
 public:
  explicit Event(const std::string& purpose);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  cudaEvent_t get() const { return event_; }

 private:
  cudaEvent_t event_ = nullptr;
};

// Memory the host and the device both read and write (cudaMallocManaged), for what the host reads in place: the
// gradients get_state hands out as views (clipping, a CPU strategy's all-reduce). Freed when it goes.
class SharedFloats {
 public:
  SharedFloats() = default;
  SharedFloats(size_t count, const std::string& purpose);
  ~SharedFloats();
  SharedFloats(SharedFloats&& other) noexcept : data_(std::exchange(other.data_, nullptr)), count_(other.count_) {}
  SharedFloats(const SharedFloats&) = delete;
  SharedFloats& operator=(const SharedFloats&) = delete;
  SharedFloats& operator=(SharedFloats&& other) noexcept {
    std::swap(data_, other.data_);
    std::swap(count_, other.count_);
    return *this;
  }

  float* get() const { return data_; }
  size_t count() const { return count_; }

 private:
  float* data_ = nullptr;
  size_t count_ = 0;
};

}  // namespace cuda_plugin
