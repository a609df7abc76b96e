// The program's thread count for the duration of one call (oneDNN's OpenMP runtime reads it per call, and
// primitives are created under it as their blocking depends on it). 0 leaves OpenMP's default.
#pragma once

#include <omp.h>

namespace onednn {

class ThreadScope {
 public:
  explicit ThreadScope(int threads) : threads_(threads) {
    if (threads_ > 0) {
      previous_ = omp_get_max_threads();
      omp_set_num_threads(threads_);
    }
  }
  ~ThreadScope() {
    if (threads_ > 0) omp_set_num_threads(previous_);
  }
  ThreadScope(const ThreadScope&) = delete;
  ThreadScope& operator=(const ThreadScope&) = delete;

 private:
  int threads_, previous_ = 0;
};

}  // namespace onednn
