// A convolution run in chunks of the batch (conv2d_chunked.cpp) and the batch norm that is its output's one reader
// (Plan's conv_norm_pairs): in a training forward, the convolution sums the batch norm's runs over each chunk's
// examples (example_moments) while the chunk is in its thread's cache, and the batch norm only finishes the
// statistics, in place of its own pass over the whole output. The results are the same bits.
//
// The convolution offers when it is built (it runs in chunks, unpooled, with no activation of its own); the batch
// norm, built after it, takes the offer when it reads the convolution's layout in place. The plan owns the link;
// the batch norm owns what it points the link at.
#pragma once

#include "norm_clip.hpp"

namespace onednn {

struct NormLink {
  bool offered = false;  // by the convolution
  // Set by the batch norm when it takes the offer.
  const ChannelRuns* runs = nullptr;
  NormScratch* scratch = nullptr;
  bool taken() const { return runs != nullptr; }
};

}  // namespace onednn
