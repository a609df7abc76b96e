// The input gradient of a float32 depthwise convolution (one filter per channel, depth multiplier 1, dilation 1)
// on the plugin's own loops. oneDNN 2.6's kernel for it (jit_dw, backward_data) took 6.1 ms of a MobileNet
// training step on two Zen 4 cores where the same layers' forward took 1.9 ms, and 6 times its forward on the
// stride-2 layers (2.3 ms for 128 channels at 14 x 14 -> 7 x 7, batch 128).
//
// Here each input position gathers, for one example and one run of channels at a time, the output gradients of
// the windows that covered it, times their taps, from a copy of the run's output gradient with a zero margin (in
// L1). Every input gradient is summed by one thread in a fixed order, so the result does not depend on the thread
// count.
#pragma once

#include "norm_clip.hpp"  // ChannelRuns

#include <vector>

namespace onednn {

struct DepthwiseGeometry {
  int64_t H = 0, W = 0, OH = 0, OW = 0;  // input and output maps
  int64_t kh = 0, kw = 0, sh = 1, sw = 1, pt = 0, pl = 0;
};

// dx (laid out as `in`) from dy (laid out as `out`: the same examples, channels and run width as `in`) and the
// kernel in Keras's layout [kh, kw, 1, C]. Overwrites dx; padding lanes come out 0. Holds the weights in runs and
// one buffer per thread, so a steady-state call allocates nothing.
class DepthwiseBackwardData {
 public:
  DepthwiseBackwardData() = default;
  DepthwiseBackwardData(const DepthwiseGeometry& g, const ChannelRuns& in, const ChannelRuns& out);

  void run(const float* dy, const float* kernel, float* dx);

 private:
  DepthwiseGeometry g_;
  ChannelRuns in_, out_;
  int64_t margin_ = 0;          // zero rows and columns around each copy of dy: max(kh, kw)
  std::vector<float> runs_;     // the weights, [groups][kh * kw][lanes]
  std::vector<float> buffers_;  // one copy of a run of dy with its margin per thread
};

}  // namespace onednn
