#include "device.hpp"

#include "cuda_check.hpp"

#include <ramjet/sdk/error.hpp>

#include <utility>

namespace cuda_plugin {

Device::Device(const DeviceSettings& settings) : settings_(settings) {
  const int count = require_devices();
  if (settings.ordinal < 0 || settings.ordinal >= count)
    throw ramjet::Error(RAMJET_ERR_DEVICE, "cuda backend: device " + std::to_string(settings.ordinal) +
                                               " does not exist (this process sees " + std::to_string(count) +
                                               " CUDA device" + (count == 1 ? "" : "s") + ")");
  try {
    check(cudaSetDevice(settings.ordinal), "cudaSetDevice", "device " + std::to_string(settings.ordinal));
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    check(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags", "input copies");
    if (const cublasStatus_t st = cublasLtCreate(&blas_); st != CUBLAS_STATUS_SUCCESS)
      throw ramjet::Error(RAMJET_ERR_DEVICE, std::string("cublasLtCreate: ") + cublasLtGetStatusString(st));
    if (const cudnnStatus_t st = cudnnCreate(&dnn_); st != CUDNN_STATUS_SUCCESS)
      throw ramjet::Error(RAMJET_ERR_DEVICE, std::string("cudnnCreate: ") + cudnnGetErrorString(st));
    if (const cudnnStatus_t st = cudnnSetStream(dnn_, stream_); st != CUDNN_STATUS_SUCCESS)
      throw ramjet::Error(RAMJET_ERR_DEVICE, std::string("cudnnSetStream: ") + cudnnGetErrorString(st));
    memory_ = std::make_unique<CachingAllocator>(settings.memory, cuda_device_calls());
    blas_workspace_ = memory_->allocate(settings.blas_workspace, "cuBLASLt's workspace");
  } catch (...) {
    release();
    throw;
  }
}

Device::~Device() { release(); }

void Device::release() {
  if (stream_ != nullptr) cudaStreamSynchronize(stream_);
  if (copy_stream_ != nullptr) cudaStreamSynchronize(copy_stream_);
  if (blas_workspace_ != nullptr) memory_->release(std::exchange(blas_workspace_, nullptr));
  conv_workspace_ = Buffer();
  memory_.reset();
  if (dnn_ != nullptr) cudnnDestroy(std::exchange(dnn_, nullptr));
  if (blas_ != nullptr) cublasLtDestroy(std::exchange(blas_, nullptr));
  if (copy_stream_ != nullptr) cudaStreamDestroy(std::exchange(copy_stream_, nullptr));
  if (stream_ != nullptr) cudaStreamDestroy(std::exchange(stream_, nullptr));
}

void Device::activate() const {
  check(cudaSetDevice(settings_.ordinal), "cudaSetDevice", "device " + std::to_string(settings_.ordinal));
}

void Device::reserve_workspace(size_t bytes, const std::string& purpose) {
  if (bytes <= conv_workspace_.bytes()) return;
  wait("growing the convolution workspace");  // nothing may still be using the old one
  // Counted before the old one goes: should the new one not be had, no graph replays the freed address.
  ++workspace_moves_;
  conv_workspace_ = Buffer();  // first, so that the new one may take its memory
  conv_workspace_ = Buffer(*this, bytes, purpose);
}

void Device::wait(const std::string& what) const { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize", what); }

Buffer::Buffer(Device& device, size_t bytes, const std::string& purpose) : device_(&device), bytes_(bytes) {
  if (bytes > 0) data_ = device.memory().allocate(bytes, purpose);
}

Buffer::Buffer(Buffer&& other) noexcept
    : device_(other.device_), data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    reset();
    device_ = other.device_;
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void Buffer::reset() {
  if (data_ != nullptr) device_->memory().release(std::exchange(data_, nullptr));
  bytes_ = 0;
}

PinnedBuffer::PinnedBuffer(size_t bytes, const std::string& purpose) : bytes_(bytes) {
  if (bytes > 0) check(cudaHostAlloc(&data_, bytes, cudaHostAllocDefault), "cudaHostAlloc", purpose);
}

PinnedBuffer::~PinnedBuffer() {
  if (data_ != nullptr) cudaFreeHost(data_);
}

Event::Event(const std::string& purpose) {
  check(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming), "cudaEventCreateWithFlags", purpose);
}

Event::~Event() {
  if (event_ != nullptr) cudaEventDestroy(event_);
}

SharedFloats::SharedFloats(size_t count, const std::string& purpose) : count_(count) {
  if (count == 0) return;
  void* p = nullptr;
  check(cudaMallocManaged(&p, count * sizeof(float)), "cudaMallocManaged", purpose);
  data_ = static_cast<float*>(p);
}

SharedFloats::~SharedFloats() {
  if (data_ != nullptr) cudaFree(data_);
}

}  // namespace cuda_plugin
