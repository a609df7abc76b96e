// One tensor of the graph (a graph input or a node's output) in a plan for one batch size.
#pragma once

#include "common.hpp"

namespace onednn {

struct Value {
  std::string name;
  Shape shape;              // per example
  bool needs_grad = false;  // some parameter lies upstream, so backward must produce d loss / d value
  int consumers = 0;        // layers (and the loss) that read it during backward

  dnnl::memory mem;           // forward data, in the layout its producer chose
  dnnl::memory diff;          // gradient, same layout; empty when !needs_grad or the plan has no backward
  dnnl::memory diff_scratch;  // a second contribution lands here before being added (consumers > 1)

  // Backward bookkeeping, reset before every backward.
  bool diff_written = false;
  bool using_scratch = false;
};

// Gradient fan-in: a value read by several layers receives one contribution from each. The first lands in
// `diff`, later ones in `diff_scratch` and are added in.
inline dnnl::memory begin_diff(Value& v) {
  v.using_scratch = v.diff_written;
  return v.using_scratch ? v.diff_scratch : v.diff;
}
void end_diff(Value& v);
// The finished gradient of a layer's output (zero when nothing downstream reached the loss).
const dnnl::memory& read_diff(Value& v);

}  // namespace onednn
