#include "convolution.hpp"  // check_cudnn
#include "pooling.hpp"

#include <ramjet/sdk/error.hpp>

namespace cuda_plugin {

PoolingProducts::PoolingProducts(cudnnHandle_t handle, std::string layer, Kind kind, const PoolingShape& s,
                                 cudnnDataType_t dtype)
    : handle_(handle), layer_(std::move(layer)) {
  if (dtype != CUDNN_DATA_FLOAT && dtype != CUDNN_DATA_HALF)
    throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, "pooling (layer " + layer_ + "): only float32 and float16");
  auto fail = [&](const char* call, cudnnStatus_t status) {
    release();  // a constructor that throws has no destructor run
    check_cudnn(status, call, layer_);
  };
  cudnnStatus_t st;
  if ((st = cudnnCreateTensorDescriptor(&x_)) || (st = cudnnCreateTensorDescriptor(&y_)) ||
      (st = cudnnCreatePoolingDescriptor(&pool_)))
    fail("cudnnCreate*Descriptor", st);
  const cudnnPoolingMode_t mode =
      kind == Kind::max ? CUDNN_POOLING_MAX_DETERMINISTIC : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING;
  if ((st = cudnnSetPooling2dDescriptor(pool_, mode, CUDNN_NOT_PROPAGATE_NAN, s.window_h, s.window_w, s.pad_h, s.pad_w,
                                        s.stride_h, s.stride_w)))
    fail("cudnnSetPooling2dDescriptor", st);
  if ((st = cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NHWC, dtype, s.batch, s.channels, s.height, s.width)))
    fail("cudnnSetTensor4dDescriptor(x)", st);
  int n = 0, c = 0, h = 0, w = 0;
  if ((st = cudnnGetPooling2dForwardOutputDim(pool_, x_, &n, &c, &h, &w))) fail("cudnnGetPooling2dForwardOutputDim", st);
  out_h_ = h, out_w_ = w;
  if ((st = cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NHWC, dtype, n, c, h, w)))
    fail("cudnnSetTensor4dDescriptor(y)", st);
}

PoolingProducts::~PoolingProducts() { release(); }

void PoolingProducts::release() {
  if (pool_) cudnnDestroyPoolingDescriptor(pool_), pool_ = nullptr;
  if (y_) cudnnDestroyTensorDescriptor(y_), y_ = nullptr;
  if (x_) cudnnDestroyTensorDescriptor(x_), x_ = nullptr;
}

void PoolingProducts::forward(const void* x, void* y) const {
  const float one = 1.0f, zero = 0.0f;
  check_cudnn(cudnnPoolingForward(handle_, pool_, &one, x_, x, &zero, y_, y), "cudnnPoolingForward", layer_);
}

void PoolingProducts::backward(const void* x, const void* y, const void* dy, void* dx) const {
  const float one = 1.0f, zero = 0.0f;
  check_cudnn(cudnnPoolingBackward(handle_, pool_, &one, y_, y, y_, dy, x_, x, &zero, x_, dx), "cudnnPoolingBackward",
              layer_);
}

}  // namespace cuda_plugin
