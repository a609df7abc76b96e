// The oneDNN "cpu" backend's host-facing extras: taps that see activations in the host layout, and the
// threads setting.
#include "ramjet/plugin/example.hpp"
#include "onednn_harness.hpp"
#include "onednn_models.hpp"

#include <gtest/gtest.h>

#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/host_api.hpp"

#include <map>
#include <random>
#include <string>
#include <vector>

using namespace ramjet::core;
using namespace ramjet::test::cpu_backend;

TEST(OnednnTaps, SeeActivationsInTheHostLayout) {
  const json g = small_cnn();
  Harness h;
  ASSERT_TRUE(h.compile(g, adam_options(4)).ok());
  Example params = random_params(g, 10, 0.3f);
  ASSERT_TRUE(h.set_state("parameters", params).ok());
  TapLog log;
  ASSERT_TRUE(h.set_taps(json::array({"flat", "fc"}), &record_tap, &log).ok());
  EXPECT_EQ(h.set_taps(json::array({"missing"}), &record_tap, &log).code, RAMJET_ERR_INVALID_ARGUMENT);
  std::mt19937 rng(26);
  Example batch = separable_batch(4, {8, 8, 1}, rng), out;
  ASSERT_TRUE(h.forward(batch, out, false).ok());
  EXPECT_EQ(log.seen["fc"], values(out, "fc"));
  EXPECT_EQ(log.seen["flat"].size(), 4u * 36u);
}

TEST(OnednnBackend, ThreadsConfigIsAcceptedAndRefusedWhenNegative) {
  Harness one(json{{"threads", 2}});
  ASSERT_TRUE(one.compile(small_cnn(), adam_options(4)).ok());
  std::mt19937 rng(27);
  Example batch = separable_batch(4, {8, 8, 1}, rng), out;
  EXPECT_TRUE(one.forward(batch, out, true).ok());
  EXPECT_THROW(Harness(json{{"threads", -1}}), InvalidInput);
}
