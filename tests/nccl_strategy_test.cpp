// The nccl strategy on the GPUs a machine has: its collectives on CPU tensors (through the GPU) and on device memory
// (in place), and a world whose other rank never comes, which must end in an error naming the rank and the wait
// within train.strategy.timeout_s — never a hang. One GPU is enough for all of it. Without a GPU every case skips
// with the reason (a skip is never a pass: `./dev gpu-check` fails on one).
#include "abi_status.hpp"
#include "test_support.hpp"

#include "ramjet/plugin/components.hpp"
#include "ramjet/plugin/plugin_registry.hpp"

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <optional>
#include <vector>

namespace {

using nlohmann::json;
using ramjet::test::Status;

class NcclStrategy : public ::testing::Test {
 protected:
  void SetUp() override {
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
      cudaGetLastError();
      GTEST_SKIP() << "no CUDA device: the nccl strategy needs a GPU";
    }
  }

  // The strategy made from `config`, or its creation error.
  Status create(const json& config) {
    ramjet::core::CreateArgs args;
    args.config = config;
    args.where = "test#/train/strategy";
    try {
      strategy_.emplace(registry_.component(RAMJET_KIND_STRATEGY, "nccl"), args);
      return {};
    } catch (const std::exception& e) {
      return {RAMJET_ERR_DEVICE, e.what()};
    }
  }
  const ramjet_strategy_vtable& vt() const { return strategy_->table(); }
  void* self() const { return strategy_->self(); }
  Status all_reduce(DLTensor& t, ramjet_reduce_op op) {
    const ramjet_collective_args args{sizeof(ramjet_collective_args), RAMJET_ABI_VERSION, op, 0, nullptr};
    return ramjet::test::call([&](ramjet_error* e) { return vt().all_reduce(self(), &t, &args, e); });
  }

  ramjet::core::PluginRegistry registry_{ramjet::core::DiscoveryOptions{{ramjet::test::stock_plugin_dir()}, {}, {}}};
  std::optional<ramjet::test::Instance<ramjet_strategy_vtable>> strategy_;
};

TEST_F(NcclStrategy, OneRankReducesCpuAndDeviceTensorsInPlace) {
  const Status made = create({{"rank", 0}, {"world_size", 1}, {"timeout_s", 60}});
  ASSERT_TRUE(made.ok()) << made.message;
  std::vector<float> host{1.5f, -2.0f, 3.25f};
  int64_t shape = 3;
  DLTensor cpu{host.data(), {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, &shape, nullptr, 0};
  for (ramjet_reduce_op op : {RAMJET_REDUCE_SUM, RAMJET_REDUCE_MEAN, RAMJET_REDUCE_MAX}) {
    const Status s = all_reduce(cpu, op);
    ASSERT_TRUE(s.ok()) << s.message;
    EXPECT_EQ(host, (std::vector<float>{1.5f, -2.0f, 3.25f})) << "one rank's reduction is its own tensor";
  }
  float* device = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&device), sizeof(float) * 3), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(device, host.data(), sizeof(float) * 3, cudaMemcpyHostToDevice), cudaSuccess);
  DLTensor gpu{device, {kDLCUDA, 0}, 1, {kDLFloat, 32, 1}, &shape, nullptr, 0};
  const Status s = all_reduce(gpu, RAMJET_REDUCE_SUM);
  EXPECT_TRUE(s.ok()) << s.message;
  std::vector<float> back(3);
  ASSERT_EQ(cudaMemcpy(back.data(), device, sizeof(float) * 3, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, host);
  cudaFree(device);
  const Status b = ramjet::test::call([&](ramjet_error* e) { return vt().barrier(self(), e); });
  EXPECT_TRUE(b.ok()) << b.message;
}

// The overlapped slots the trainer's gradient buckets use: all-reduces of device, managed (the cuda backend's
// gradients) and CPU tensors started one after another, all outstanding at once, then waited for in another order,
// each exactly once; every tensor ends as one rank's reduction leaves it; a handle waited for twice, or never
// started, is a named error.
TEST_F(NcclStrategy, StartedAllReducesAreWaitedForInAnyOrder) {
  const Status made = create({{"rank", 0}, {"world_size", 1}, {"timeout_s", 60}});
  ASSERT_TRUE(made.ok()) << made.message;
  ASSERT_NE(vt().all_reduce_start, nullptr);
  ASSERT_NE(vt().all_reduce_wait, nullptr);
  constexpr int64_t kCount = 1 << 20;
  std::vector<float> want(kCount);
  for (int64_t i = 0; i < kCount; ++i) want[static_cast<size_t>(i)] = static_cast<float>(i % 977) * 0.25f - 3.0f;
  float* device = nullptr;
  float* managed = nullptr;
  ASSERT_EQ(cudaMalloc(reinterpret_cast<void**>(&device), sizeof(float) * kCount), cudaSuccess);
  ASSERT_EQ(cudaMallocManaged(reinterpret_cast<void**>(&managed), sizeof(float) * kCount), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(device, want.data(), sizeof(float) * kCount, cudaMemcpyHostToDevice), cudaSuccess);
  std::copy(want.begin(), want.end(), managed);
  std::vector<float> host = want;
  int64_t shape = kCount;
  DLTensor tensors[3] = {{device, {kDLCUDA, 0}, 1, {kDLFloat, 32, 1}, &shape, nullptr, 0},
                         {managed, {kDLCUDAManaged, 0}, 1, {kDLFloat, 32, 1}, &shape, nullptr, 0},
                         {host.data(), {kDLCPU, 0}, 1, {kDLFloat, 32, 1}, &shape, nullptr, 0}};
  const ramjet_collective_args args{sizeof(ramjet_collective_args), RAMJET_ABI_VERSION, RAMJET_REDUCE_MEAN, 0, nullptr};
  uint64_t handles[3] = {};
  for (int k = 0; k < 3; ++k) {
    const Status s = ramjet::test::call(
        [&](ramjet_error* e) { return vt().all_reduce_start(self(), &tensors[k], &args, &handles[k], e); });
    ASSERT_TRUE(s.ok()) << s.message;
  }
  EXPECT_NE(handles[0], handles[1]);
  EXPECT_NE(handles[1], handles[2]);
  for (int k : {1, 2, 0}) {
    const Status s = ramjet::test::call([&](ramjet_error* e) { return vt().all_reduce_wait(self(), handles[k], e); });
    EXPECT_TRUE(s.ok()) << s.message;
  }
  std::vector<float> back(kCount);
  ASSERT_EQ(cudaMemcpy(back.data(), device, sizeof(float) * kCount, cudaMemcpyDeviceToHost), cudaSuccess);
  EXPECT_EQ(back, want) << "device tensor";
  EXPECT_TRUE(std::equal(want.begin(), want.end(), managed)) << "managed tensor";
  EXPECT_EQ(host, want) << "CPU tensor";
  cudaFree(device);
  cudaFree(managed);
  const Status twice =
      ramjet::test::call([&](ramjet_error* e) { return vt().all_reduce_wait(self(), handles[0], e); });
  EXPECT_EQ(twice.code, RAMJET_ERR_INVALID_ARGUMENT);
  EXPECT_NE(twice.message.find("waited for already"), std::string::npos) << twice.message;
  const Status unknown = ramjet::test::call([&](ramjet_error* e) { return vt().all_reduce_wait(self(), 12345, e); });
  EXPECT_EQ(unknown.code, RAMJET_ERR_INVALID_ARGUMENT);
}

// An all-reduce started on the caller's stream comes after what that stream had queued, and its wait returns only
// once all of it has run: the backend's stream may be handed over with work still on it.
TEST_F(NcclStrategy, AStartedAllReduceOnTheCallersStreamWaitsForItsEarlierWork) {
  const Status made = create({{"rank", 0}, {"world_size", 1}, {"timeout_s", 60}});
  ASSERT_TRUE(made.ok()) << made.message;
  constexpr size_t kBytes = size_t{512} << 20;  // 16 copies of it queued ahead: milliseconds of work on an H200
  void *from = nullptr, *to = nullptr;
  ASSERT_EQ(cudaMalloc(&from, kBytes), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&to, kBytes), cudaSuccess);
  ASSERT_EQ(cudaMemset(from, 0x3f, kBytes), cudaSuccess);  // floats of about 0.75
  cudaStream_t stream = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
  for (int k = 0; k < 16; ++k) ASSERT_EQ(cudaMemcpyAsync(to, from, kBytes, cudaMemcpyDeviceToDevice, stream), cudaSuccess);
  int64_t shape = static_cast<int64_t>(kBytes / sizeof(float));
  DLTensor tensor{to, {kDLCUDA, 0}, 1, {kDLFloat, 32, 1}, &shape, nullptr, 0};
  const ramjet_collective_args args{sizeof(ramjet_collective_args), RAMJET_ABI_VERSION, RAMJET_REDUCE_SUM, 0, stream};
  uint64_t handle = 0;
  const Status started =
      ramjet::test::call([&](ramjet_error* e) { return vt().all_reduce_start(self(), &tensor, &args, &handle, e); });
  ASSERT_TRUE(started.ok()) << started.message;
  const Status waited = ramjet::test::call([&](ramjet_error* e) { return vt().all_reduce_wait(self(), handle, e); });
  EXPECT_TRUE(waited.ok()) << waited.message;
  EXPECT_EQ(cudaStreamQuery(stream), cudaSuccess) << "the copies queued before the all-reduce have all run";
  float last = 0;
  ASSERT_EQ(cudaMemcpy(&last, static_cast<char*>(to) + kBytes - sizeof(float), sizeof last, cudaMemcpyDeviceToHost),
            cudaSuccess);
  float want = 0;
  std::memset(&want, 0x3f, sizeof want);
  EXPECT_EQ(last, want);
  cudaStreamDestroy(stream);
  cudaFree(from);
  cudaFree(to);
}

// Rank 0 of two, alone: it serves the store and publishes the id, but rank 1 never joins, so building the
// communicator cannot finish. It must fail within the timeout (plus a margin), naming the rank and what it waited
// for.
TEST_F(NcclStrategy, ARankThatNeverComesIsAnErrorWithinTheTimeoutNotAHang) {
  const auto start = std::chrono::steady_clock::now();
  const Status made = create({{"rank", 0}, {"world_size", 2}, {"master_addr", "127.0.0.1"}, {"master_port", 29731},
                              {"timeout_s", 3}});
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_FALSE(made.ok());
  EXPECT_NE(made.message.find("nccl strategy, rank 0"), std::string::npos) << made.message;
  EXPECT_NE(made.message.find("building the communicator"), std::string::npos) << made.message;
  EXPECT_LT(seconds, 20.0) << "the wait is limited by timeout_s";
}

}  // namespace
