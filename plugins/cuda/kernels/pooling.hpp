// max_pool and avg_pool on cuDNN, channels-last, as Keras's: max over the window (padding never wins), average
// over the window's elements inside the input (Keras's "same" average excludes the padding). Symmetric padding
// only (cuDNN's rule). Forward and backward; float32 or float16.
#pragma once

#include <cudnn.h>

#include <string>

namespace cuda_plugin {

struct PoolingShape {
  int batch, height, width, channels;
  int window_h, window_w;
  int stride_h, stride_w;
  int pad_h = 0, pad_w = 0;
};

class PoolingProducts {
 public:
  enum class Kind { max, average };
  PoolingProducts(cudnnHandle_t handle, std::string layer, Kind kind, const PoolingShape& shape,
                  cudnnDataType_t dtype);
  ~PoolingProducts();
  PoolingProducts(const PoolingProducts&) = delete;
  PoolingProducts& operator=(const PoolingProducts&) = delete;

  int out_height() const { return out_h_; }
  int out_width() const { return out_w_; }
  void forward(const void* x, void* y) const;
  // Needs the forward's input and output (max pooling routes the gradient to the maximum).
  void backward(const void* x, const void* y, const void* dy, void* dx) const;

 private:
  void release();

  cudnnHandle_t handle_;
  std::string layer_;
  int out_h_ = 0, out_w_ = 0;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr;
  cudnnPoolingDescriptor_t pool_ = nullptr;
};

}  // namespace cuda_plugin
