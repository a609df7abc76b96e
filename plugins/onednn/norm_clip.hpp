// Batch normalisation with a clip fused in (relu6: clamp to [0, 6]), float32, training forward, inference forward
// and backward. oneDNN 2.6's batch norm fuses only a relu; with relu6 as its own eltwise primitive, MobileNet's
// conv → batch norm → relu6 blocks spent about a fifth of a float32 training step in the clip's extra passes over
// memory. These kernels read channels in runs of 16 or 8: oneDNN's channel-blocked layouts (nChw16c where the
// CPU has AVX-512, nChw8c where it has AVX2; padding included) and channels-last ones whose channel count is a
// multiple of 8.
//
// Work is split by (group of channels, example), and sums over examples are added in example order, so the
// results do not depend on the number of threads.
#pragma once

#include "common.hpp"

#include <optional>

namespace onednn {

// Where channel c of position p of example n lies, in floats from the start of the buffer:
// n * example_stride + (c / lanes) * group_stride + p * position_stride + c % lanes.
struct ChannelRuns {
  int64_t lanes = 16;  // channels side by side in memory: 16 or 8
  int64_t examples = 0, positions = 0, channels = 0;
  int64_t example_stride = 0, group_stride = 0, position_stride = 0;
  int64_t groups() const { return (channels + lanes - 1) / lanes; }
  int64_t count() const { return examples * positions; }  // values per channel
};

// The runs of a float32 [N, C] or [N, C, H, W] descriptor; nothing when its layout has no runs of 16 or 8
// channels.
std::optional<ChannelRuns> channel_runs(const md& desc);
// `desc`'s dims in float32 with channels blocked by 16, a layout channel_runs always accepts.
md channel_blocked(const md& desc);

struct ClipBounds {
  float lo, hi;
};

// Per channel, the mean and the biased variance over examples and positions (sums of values shifted by the
// channel's first value, in double across examples).
void channel_moments(const float* x, const ChannelRuns& runs, float* mean, float* variance);

// The statistics a batch norm normalises with (the batch's in training, the moving ones in inference) and its
// parameters, channels floats each.
struct NormInputs {
  const float* mean;
  const float* variance;
  const float* gamma;
  const float* beta;
  float epsilon;
};

// y = clamp((x - mean) * gamma / sqrt(variance + epsilon) + beta, lo, hi). The mean is taken off before scaling,
// as oneDNN does, so a mean far from zero beside a small spread loses no precision. Padding lanes of a blocked
// layout are written 0.
void normalize_clip(const float* x, const ChannelRuns& runs, const NormInputs& norm, ClipBounds clip, float* y);

// Backward of y = clamp(gamma * (x - mean) / sqrt(variance + epsilon) + beta, lo, hi) with the batch's own
// statistics: dy passes where lo < the unclamped value < hi. Writes d gamma and d beta (channels floats each) and,
// unless dx is null, d x (in x's layout; padding lanes 0).
void norm_clip_backward(const float* x, const float* dy, const ChannelRuns& runs, const NormInputs& norm,
                        ClipBounds clip, float* dx, float* dgamma, float* dbeta);

}  // namespace onednn
