// A conv2d layer's products on cuDNN, channels-last (NHWC activations, the filter as [out, kh, kw, in]: cuDNN's
// NHWC filter layout; Keras's HWIO kernel is transposed into it when weights move in and out): forward (bias added
// after), backward data, backward filter and backward bias. float32 in true float32 arithmetic (FMA math, no TF32)
// or float16 on Tensor Cores with float32 accumulation. The algorithms are chosen once per shape, when the layer is
// made, by cuDNN's heuristics within the workspace limit, and kept.
//
// cuDNN 9 marks this (its v7) API deprecated in favour of its graph API; it is still supported throughout 9.x, and is
// what a per-layer wrapper needs. The graph API is the way to fuse conv + bias + activation later.
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <string>

namespace cuda_plugin {

// A cuDNN failure as a ramjet::Error naming the call and the layer.
void check_cudnn(cudnnStatus_t status, const char* call, const std::string& layer);

struct ConvolutionShape {
  int batch, height, width, in_channels;
  int out_channels, kernel_h, kernel_w;
  int stride_h = 1, stride_w = 1;
  int pad_h = 0, pad_w = 0;  // the same on both sides (cuDNN's rule); asymmetric "same" padding is refused
};

class ConvolutionProducts {
 public:
  // `dtype`: CUDNN_DATA_FLOAT or CUDNN_DATA_HALF. `handle` is borrowed.
  ConvolutionProducts(cudnnHandle_t handle, std::string layer, const ConvolutionShape& shape, cudnnDataType_t dtype,
                      size_t workspace_limit);
  ~ConvolutionProducts();
  ConvolutionProducts(const ConvolutionProducts&) = delete;
  ConvolutionProducts& operator=(const ConvolutionProducts&) = delete;

  int out_height() const { return out_h_; }
  int out_width() const { return out_w_; }
  // The most workspace any of the three products asks for: what the caller passes as `workspace`.
  size_t workspace_bytes() const { return workspace_; }

  // `bias` may be null.
  void forward(const void* x, const void* filter, const void* bias, void* y, void* workspace) const;
  void backward_data(const void* dy, const void* filter, void* dx, void* workspace) const;
  // `dbias` may be null.
  void backward_filter(const void* x, const void* dy, void* dfilter, void* dbias, void* workspace) const;

 private:
  void release();  // destroys the descriptors made so far

  cudnnHandle_t handle_;
  std::string layer_;
  int out_h_ = 0, out_w_ = 0;
  cudnnTensorDescriptor_t x_ = nullptr, y_ = nullptr, bias_ = nullptr;
  cudnnFilterDescriptor_t w_ = nullptr;
  cudnnConvolutionDescriptor_t conv_ = nullptr;
  cudnnConvolutionFwdAlgo_t forward_algo_{};
  cudnnConvolutionBwdDataAlgo_t data_algo_{};
  cudnnConvolutionBwdFilterAlgo_t filter_algo_{};
  size_t workspace_ = 0;
};

}  // namespace cuda_plugin
