#include "convolution.hpp"

#include <ramjet/sdk/error.hpp>

#include <algorithm>

// The v7 API is deprecated in cuDNN 9 (convolution.hpp says why it is used); its warnings say nothing new.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"

namespace cuda_plugin {

void check_cudnn(cudnnStatus_t status, const char* call, const std::string& layer) {
  if (status == CUDNN_STATUS_SUCCESS) return;
  throw ramjet::Error(status == CUDNN_STATUS_ALLOC_FAILED ? RAMJET_ERR_OUT_OF_MEMORY : RAMJET_ERR_DEVICE,
                      std::string(call) + " (layer " + layer + "): " + cudnnGetErrorString(status));
}

namespace {

// Whether an algorithm computes the plain sum of products. The FFT and Winograd ones transform the operands first and
// lose float32 digits doing it, as TF32 would; float32 is promised as float32 (FMA math, below), so it takes them only
// when nothing else fits. (On the H100, for the shapes whose choices cuDNN logged, implicit GEMM ranked first anyway.)
bool exact(cudnnConvolutionFwdAlgo_t a) {
  return a != CUDNN_CONVOLUTION_FWD_ALGO_FFT && a != CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING &&
         a != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD && a != CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED;
}
bool exact(cudnnConvolutionBwdDataAlgo_t a) {
  return a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT && a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING &&
         a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD && a != CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED;
}
bool exact(cudnnConvolutionBwdFilterAlgo_t a) {
  return a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT && a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING &&
         a != CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED;
}

// The first of cuDNN's ranked algorithms that succeeded, fits the workspace limit, is deterministic (some backward
// algorithms sum with atomics, so their results change in the last bits from run to run) and, when `want_exact`,
// exact; failing that the first deterministic one, then the first that fits at all.
template <class Perf>
const Perf* first_fitting(const Perf* perf, int count, size_t limit, bool want_exact) {
  const Perf* deterministic = nullptr;
  const Perf* any = nullptr;
  for (int i = 0; i < count; ++i) {
    if (perf[i].status != CUDNN_STATUS_SUCCESS || perf[i].memory > limit) continue;
    if (any == nullptr) any = &perf[i];
    if (perf[i].determinism != CUDNN_DETERMINISTIC) continue;
    if (!want_exact || exact(perf[i].algo)) return &perf[i];
    if (deterministic == nullptr) deterministic = &perf[i];
  }
  return deterministic != nullptr ? deterministic : any;
}

}  // namespace

ConvolutionProducts::ConvolutionProducts(cudnnHandle_t handle, std::string layer, const ConvolutionShape& s,
                                         cudnnDataType_t dtype, size_t workspace_limit)
    : handle_(handle), layer_(std::move(layer)) {
  if (dtype != CUDNN_DATA_FLOAT && dtype != CUDNN_DATA_HALF)
    throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, "conv2d (layer " + layer_ + "): only float32 and float16");
  auto fail = [&](const char* call, cudnnStatus_t status) {
    release();  // what was made so far: a constructor that throws has no destructor run
    check_cudnn(status, call, layer_);
  };
  cudnnStatus_t st;
  if ((st = cudnnCreateTensorDescriptor(&x_)) || (st = cudnnCreateTensorDescriptor(&y_)) ||
      (st = cudnnCreateTensorDescriptor(&bias_)) || (st = cudnnCreateFilterDescriptor(&w_)) ||
      (st = cudnnCreateConvolutionDescriptor(&conv_)))
    fail("cudnnCreate*Descriptor", st);
  if ((st = cudnnSetTensor4dDescriptor(x_, CUDNN_TENSOR_NHWC, dtype, s.batch, s.in_channels, s.height, s.width)))
    fail("cudnnSetTensor4dDescriptor(x)", st);
  if ((st = cudnnSetFilter4dDescriptor(w_, dtype, CUDNN_TENSOR_NHWC, s.out_channels, s.in_channels, s.kernel_h,
                                       s.kernel_w)))
    fail("cudnnSetFilter4dDescriptor", st);
  if ((st = cudnnSetConvolution2dDescriptor(conv_, s.pad_h, s.pad_w, s.stride_h, s.stride_w, 1, 1,
                                            CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT)))
    fail("cudnnSetConvolution2dDescriptor", st);
  // float32 stays float32 (no TF32); float16 on Tensor Cores.
  if ((st = cudnnSetConvolutionMathType(conv_, dtype == CUDNN_DATA_HALF ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH)))
    fail("cudnnSetConvolutionMathType", st);
  int n = 0, c = 0, h = 0, w = 0;
  if ((st = cudnnGetConvolution2dForwardOutputDim(conv_, x_, w_, &n, &c, &h, &w)))
    fail("cudnnGetConvolution2dForwardOutputDim", st);
  out_h_ = h, out_w_ = w;
  if ((st = cudnnSetTensor4dDescriptor(y_, CUDNN_TENSOR_NHWC, dtype, n, c, h, w)))
    fail("cudnnSetTensor4dDescriptor(y)", st);
  if ((st = cudnnSetTensor4dDescriptor(bias_, CUDNN_TENSOR_NHWC, dtype, 1, c, 1, 1)))
    fail("cudnnSetTensor4dDescriptor(bias)", st);

  constexpr int kWanted = 8;
  const bool exact_only = dtype == CUDNN_DATA_FLOAT;
  int found = 0;
  cudnnConvolutionFwdAlgoPerf_t fwd[kWanted];
  if ((st = cudnnGetConvolutionForwardAlgorithm_v7(handle_, x_, w_, conv_, y_, kWanted, &found, fwd)))
    fail("cudnnGetConvolutionForwardAlgorithm_v7", st);
  const auto* f = first_fitting(fwd, found, workspace_limit, exact_only);
  cudnnConvolutionBwdDataAlgoPerf_t bwd_data[kWanted];
  if ((st = cudnnGetConvolutionBackwardDataAlgorithm_v7(handle_, w_, y_, conv_, x_, kWanted, &found, bwd_data)))
    fail("cudnnGetConvolutionBackwardDataAlgorithm_v7", st);
  const auto* d = first_fitting(bwd_data, found, workspace_limit, exact_only);
  cudnnConvolutionBwdFilterAlgoPerf_t bwd_filter[kWanted];
  if ((st = cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle_, x_, y_, conv_, w_, kWanted, &found, bwd_filter)))
    fail("cudnnGetConvolutionBackwardFilterAlgorithm_v7", st);
  const auto* g = first_fitting(bwd_filter, found, workspace_limit, exact_only);
  if (f == nullptr || d == nullptr || g == nullptr) {
    release();
    throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, "conv2d (layer " + layer_ + "): cuDNN has no " +
                                                    (f == nullptr ? "forward" : d == nullptr ? "backward-data"
                                                                                             : "backward-filter") +
                                                    " algorithm for this shape within the workspace limit");
  }
  forward_algo_ = f->algo, data_algo_ = d->algo, filter_algo_ = g->algo;
  workspace_ = std::max({f->memory, d->memory, g->memory});
}

ConvolutionProducts::~ConvolutionProducts() { release(); }

void ConvolutionProducts::release() {
  if (conv_) cudnnDestroyConvolutionDescriptor(conv_), conv_ = nullptr;
  if (w_) cudnnDestroyFilterDescriptor(w_), w_ = nullptr;
  if (bias_) cudnnDestroyTensorDescriptor(bias_), bias_ = nullptr;
  if (y_) cudnnDestroyTensorDescriptor(y_), y_ = nullptr;
  if (x_) cudnnDestroyTensorDescriptor(x_), x_ = nullptr;
}

void ConvolutionProducts::forward(const void* x, const void* filter, const void* bias, void* y, void* workspace) const {
  const float one = 1.0f, zero = 0.0f;
  check_cudnn(cudnnConvolutionForward(handle_, &one, x_, x, w_, filter, conv_, forward_algo_, workspace, workspace_,
                                      &zero, y_, y),
              "cudnnConvolutionForward", layer_);
  if (bias != nullptr)
    check_cudnn(cudnnAddTensor(handle_, &one, bias_, bias, &one, y_, y), "cudnnAddTensor(bias)", layer_);
}

void ConvolutionProducts::backward_data(const void* dy, const void* filter, void* dx, void* workspace) const {
  const float one = 1.0f, zero = 0.0f;
  check_cudnn(cudnnConvolutionBackwardData(handle_, &one, w_, filter, y_, dy, conv_, data_algo_, workspace, workspace_,
                                           &zero, x_, dx),
              "cudnnConvolutionBackwardData", layer_);
}

void ConvolutionProducts::backward_filter(const void* x, const void* dy, void* dfilter, void* dbias,
                                          void* workspace) const {
  const float one = 1.0f, zero = 0.0f;
  check_cudnn(cudnnConvolutionBackwardFilter(handle_, &one, x_, x, y_, dy, conv_, filter_algo_, workspace, workspace_,
                                             &zero, w_, dfilter),
              "cudnnConvolutionBackwardFilter", layer_);
  if (dbias != nullptr)
    check_cudnn(cudnnConvolutionBackwardBias(handle_, &one, y_, dy, &zero, bias_, dbias),
                "cudnnConvolutionBackwardBias", layer_);
}

}  // namespace cuda_plugin
