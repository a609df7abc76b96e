// Batch normalisation with a clip fused in (relu6: clamp to [0, 6]), float32, training forward, inference forward
// and backward. oneDNN 2.6's batch norm fuses only a relu; with relu6 as its own eltwise primitive, MobileNet's
// conv → batch norm → relu6 blocks spent about a fifth of a float32 training step in the clip's extra passes over
// memory. These kernels read channels in runs of 16: oneDNN's channel-blocked layouts (padding included) and
// channels-last ones whose channel count is a multiple of 16.
//
// Work is split by (group of 16 channels, example), and sums over examples are added in example order, so the
// results do not depend on the number of threads.
#pragma once

#include "common.hpp"

#include <optional>

namespace onednn {

// Where channel c of position p of example n lies, in floats from the start of the buffer:
// n * example_stride + (c / 16) * group_stride + p * position_stride + c % 16.
struct ChannelRuns {
  int64_t examples = 0, positions = 0, channels = 0;
  int64_t example_stride = 0, group_stride = 0, position_stride = 0;
  int64_t groups() const { return (channels + 15) / 16; }
  int64_t count() const { return examples * positions; }  // values per channel
};

// The runs of a float32 [N, C] or [N, C, H, W] descriptor; nothing when its layout has no runs of 16 channels.
std::optional<ChannelRuns> channel_runs(const md& desc);
// `desc`'s dims in float32 with channels blocked by 16, a layout channel_runs always accepts.
md channel_blocked(const md& desc);

struct ClipBounds {
  float lo = 0, hi = 6;
};

// Per channel, the mean and the biased variance over examples and positions (sums of values shifted by the
// channel's first value, in double across examples).
void channel_moments(const float* x, const ChannelRuns& runs, float* mean, float* variance);

// y = clamp(scale[c] * x + shift[c], lo, hi): normalisation, gamma and beta folded into one scale and shift.
// Padding lanes of a blocked layout are written 0.
void scale_shift_clip(const float* x, const ChannelRuns& runs, const float* scale, const float* shift,
                      ClipBounds clip, float* y);

// What backward needs of the forward: the statistics it normalised with and the parameters.
struct NormInputs {
  const float* mean;
  const float* variance;
  const float* gamma;
  const float* beta;
  float epsilon;
};

// Backward of y = clamp(gamma * (x - mean) / sqrt(variance + epsilon) + beta, lo, hi) with the batch's own
// statistics: dy passes where lo < the unclamped value < hi. Writes d gamma and d beta (channels floats each) and,
// unless dx is null, d x (in x's layout; padding lanes 0).
void norm_clip_backward(const float* x, const float* dy, const ChannelRuns& runs, const NormInputs& norm,
                        ClipBounds clip, float* dx, float* dgamma, float* dbeta);

// The scale and shift that normalise with (mean, variance) and then apply gamma and beta.
void fold_norm(const NormInputs& norm, int64_t channels, float* scale, float* shift);

}  // namespace onednn
