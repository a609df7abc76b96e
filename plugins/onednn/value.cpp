#include "value.hpp"

#include "kernels.hpp"

namespace onednn {

void end_diff(Value& v) {
  if (v.using_scratch) add_floats(floats(v.diff), floats(v.diff_scratch), float_count(v.diff));
  v.using_scratch = false;
  v.diff_written = true;
}

const dnnl::memory& read_diff(Value& v) {
  if (!v.diff_written) {
    zero_floats(floats(v.diff), float_count(v.diff));
    v.diff_written = true;
  }
  return v.diff;
}

}  // namespace onednn
