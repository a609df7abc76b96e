// global_avg_pool's loops over the channel runs of a float32 or bf16 map (norm_clip.hpp's ChannelRuns): each
// example's channels averaged over its positions, and the gradient spread back, on AVX-512.
//
// Why: oneDNN 2.6's pooling primitive averaged MobileNet's 128 x 256 x 7 x 7 float32 map (6.4 MB) in 0.5-0.6 ms
// each way on the 2-vCPU Xeon, a quarter of what a pass over that memory takes; the pool was about 2.7 % of the
// float32 training step (issue 14).
//
// Work is split by (example, group of channels), each item's sum taken in position order on one thread, so the
// results do not depend on the number of threads.
#pragma once

#include "norm_clip.hpp"

namespace onednn {

// Whether the functions below take these runs here: AVX-512 allowed (isa.hpp), runs of 16, 32 or 64 channels.
bool channel_mean_applies(const ChannelRuns& r);

// mean[n * channels + c] = the sum of channel c of example n over its positions, in float32 in position order,
// divided by the positions; `mean` holds values of r.type, bf16 rounded to nearest even.
void channel_mean(const void* x, const ChannelRuns& r, void* mean);
// Its gradient: every position of channel c of example n gets dmean[n * channels + c] / positions (padding lanes
// of a blocked layout 0).
void channel_mean_backward(const void* dmean, const ChannelRuns& r, void* dx);

}  // namespace onednn
