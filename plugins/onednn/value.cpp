#include "value.hpp"

#include "kernels.hpp"

namespace onednn {

void end_diff(Value& v) {
  if (v.using_scratch) add_memory(v.diff, v.diff_scratch);
  v.using_scratch = false;
  v.diff_written = true;
}

const dnnl::memory& read_diff(Value& v) {
  if (!v.diff_written) {
    zero_memory(v.diff);
    v.diff_written = true;
  }
  return v.diff;
}

}  // namespace onednn
