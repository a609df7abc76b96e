// A softmax regression on Fashion-MNIST, trained by the linear fixture backend in seconds: the run that tests of
// a training run's outputs (traces, reports, TensorBoard files) start from and then adjust.
#pragma once

#include "test_support.hpp"

#include <cstdint>

namespace ramjet::test {

struct SmallRun {
  int64_t seed = 7;
  int64_t train_take = 256;  // also the shuffle buffer: a full shuffle
  int64_t train_batch = 32;
  int64_t eval_take = 128;  // 0: no `data.eval`
  int64_t eval_batch = 64;
  int64_t epochs = 2;
};

// normalize → take → shuffle → batch, flatten → dense 10, SGD 0.05 on the `linear` backend.
nlohmann::json small_run_manifest(const SmallRun& run);

// The host with the stock plugins and the fixtures' `linear` backend and `mirror` strategy on its plugin path.
CommandResult host_with_fixtures(const std::string& args);

}  // namespace ramjet::test
