// A convolution run in chunks of the batch (conv2d_chunked.cpp) and the batch norm that is its output's one reader,
// built right after it (Plan's conv_norm_pairs): the convolution does two parts of the batch norm's work on each
// chunk, while the chunk is in its thread's cache, which saves the passes over memory they cost on their own:
// - forward, in training: the moments of the chunk's examples (example_moments), which the batch norm finishes;
// - backward: the batch norm's input gradient of the chunk (example_input_grad), written to the thread's own buffer
//   where the convolution's backward then reads it, in place of a whole-batch gradient written to memory and read
//   back.
// Measured on the float32 MobileNet of the bench (11 such pairs), the two passes were about a tenth of its step,
// bound by memory. The results are the same bits as the batch norm's own passes give.
//
// The convolution offers when it is built (it runs in chunks, unpooled, and with no activation of its own); the
// batch norm, built next, takes the offer when it reads the convolution's layout in place. The plan owns the link;
// each layer owns what it points the link at.
#pragma once

#include "norm_clip.hpp"

namespace onednn {

struct NormLink {
  bool offered = false;  // by the convolution
  // Set by the batch norm when it takes the offer.
  const ChannelRuns* runs = nullptr;
  NormScratch* scratch = nullptr;
  ClipBounds clip{};
  bool taken() const { return runs != nullptr; }
  // Set by the batch norm's backward once its sums are in the scratch, and cleared by the convolution's backward:
  // the batch norm's output gradient, which the input gradient is made from.
  const void* dy = nullptr;
};

}  // namespace onednn
