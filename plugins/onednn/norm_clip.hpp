// Batch normalisation with a clip fused in (none, relu: [0, inf), relu6: [0, 6]), over float32 or bf16 values
// (statistics and parameters float32, arithmetic float32), training forward, inference forward and backward.
// oneDNN 2.6's batch norm fuses only a relu, and was slow where it mattered: with relu6 as its own eltwise
// primitive, MobileNet's conv → batch norm → relu6 blocks spent about a fifth of a float32 training step in the
// clip's extra passes over memory, and over the channels-last bf16 maps that AMX convolutions give it, it ran at
// about 15 GB/s, a quarter of the ResNet's bf16 step. These kernels read channels in runs of 8 to 64: oneDNN's
// channel-blocked layouts (nChw16c where the CPU has AVX-512, nChw8c where it has AVX2; padding included) and
// channels-last ones whose channel count is a multiple of 8.
//
// Work is split by (group of channels, example), and sums over examples are added in example order, so the
// results do not depend on the number of threads.
#pragma once

#include "common.hpp"

#include <optional>
#include <string>
#include <vector>

namespace onednn {

// Where channel c of position p of example n lies, in elements (of `type`) from the start of the buffer:
// n * example_stride + (c / lanes) * group_stride + p * position_stride + c % lanes.
struct ChannelRuns {
  dt type = dt::f32;   // of the values, their gradients and the normalised result: f32 or bf16
  int64_t lanes = 16;  // channels side by side in memory: 8 or 16 (blocked layouts), up to 64 (channels-last)
  int64_t examples = 0, positions = 0, channels = 0;
  int64_t example_stride = 0, group_stride = 0, position_stride = 0;
  int64_t groups() const { return (channels + lanes - 1) / lanes; }
  int64_t count() const { return examples * positions; }  // values per channel
};

// The runs of a float32 or bf16 [N, C] or [N, C, H, W] descriptor; nothing when its type is another or its layout
// has no runs of 8 or more channels (a channels-last count not a multiple of 8, or another blocking).
std::optional<ChannelRuns> channel_runs(const md& desc);
// `desc`'s dims and type with channels blocked by 16, a layout channel_runs always accepts.
md channel_blocked(const md& desc);

// What the clip lets through: lo < value < hi passes its gradient back; outside, the value is clamped to the bound.
struct ClipBounds {
  float lo, hi;
};
// The clips of the activations a batch norm takes in (LayerBuilder::fused_activation); nothing for another name.
std::optional<ClipBounds> clip_of(const std::string& activation);

// The working memory of the functions below for one ChannelRuns, allocated once by the layer that owns it, so that
// a steady-state training step allocates nothing. Its contents are the functions' own between calls.
struct NormScratch {
  explicit NormScratch(const ChannelRuns& runs);
  NormScratch() = default;
  std::vector<float> mean, scale, beta, a, b, c;  // per channel, padded to whole groups
  std::vector<float> parts;                       // up to three sums per lane of every run
  std::vector<double> first, second;              // a group's totals per lane
  std::vector<double> reference;                  // finish_moments: the value each lane's sums are taken around
};

// In the functions below, x, y, dy and dx point at values of runs.type in the runs' layout, and `scratch` was made
// for `runs`.

// Per channel, the mean and the biased variance over examples and positions: each run (one example's positions)
// summed around its own first value, so that values far from zero beside a small spread lose nothing to
// cancellation; the runs' sums added in double in example order. Whether the runs are summed here
// on the plan's threads, or by the layer that made x a few examples at a time (example_moments, then
// finish_moments), the results are the same bits.
void channel_moments(const void* x, const ChannelRuns& runs, NormScratch& scratch, float* mean, float* variance);
// The runs of examples [first, first + count) of x, on the calling thread alone, into the scratch.
void example_moments(const void* x, const ChannelRuns& runs, NormScratch& scratch, int64_t first, int64_t count);
// Once example_moments has covered every example: the mean and variance, as channel_moments gives them.
void finish_moments(const ChannelRuns& runs, NormScratch& scratch, float* mean, float* variance);

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
void normalize_clip(const void* x, const ChannelRuns& runs, const NormInputs& norm, ClipBounds clip,
                    NormScratch& scratch, void* y);

// Backward of y = clamp(gamma * (x - mean) / sqrt(variance + epsilon) + beta, lo, hi) with the batch's own
// statistics: dy passes where lo < the unclamped value < hi. Writes d gamma and d beta (channels floats each) and,
// unless dx is null, d x (in x's layout; padding lanes 0).
void norm_clip_backward(const void* x, const void* dy, const ChannelRuns& runs, const NormInputs& norm,
                        ClipBounds clip, NormScratch& scratch, void* dx, float* dgamma, float* dbeta);
}  // namespace onednn
