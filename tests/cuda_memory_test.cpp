// The cuda plugin's caching allocator: its bookkeeping on the CPU over a pretend device with a fixed capacity
// (reuse, rounding, the limit, eviction, the retry after emptying the cache, nothing leaked), and over cudaMalloc on
// a GPU when there is one (the limit, and a request larger than the device named in the error).
#include "caching_allocator.hpp"
#include "cuda_check.hpp"
#include "require_gpu.hpp"

#include <ramjet/sdk/error.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>
#include <string>

using namespace cuda_plugin;

namespace {

// A device of `capacity` bytes that hands out host memory and remembers what is live.
struct PretendDevice {
  explicit PretendDevice(size_t bytes) : capacity(bytes) {}
  size_t capacity, used = 0;
  std::set<void*> live;
  std::map<void*, size_t> sizes;
  int64_t frees = 0;

  DeviceCalls calls() {
    return {[this](size_t bytes) -> void* {
              if (used + bytes > capacity) return nullptr;
              void* p = std::malloc(bytes);
              used += bytes;
              live.insert(p);
              sizes[p] = bytes;
              return p;
            },
            [this](void* p) {
              ASSERT_TRUE(live.erase(p)) << "freed a block the device never gave or freed twice";
              used -= sizes[p];
              sizes.erase(p);
              ++frees;
              std::free(p);
            }};
  }
};

std::string oom_message(CachingAllocator& a, size_t bytes, const std::string& purpose) {
  try {
    a.allocate(bytes, purpose);
  } catch (const ramjet::Error& e) {
    EXPECT_EQ(e.status(), RAMJET_ERR_OUT_OF_MEMORY);
    return e.what();
  }
  ADD_FAILURE() << "no out-of-memory error";
  return {};
}

TEST(CachingAllocator, ReusesARoundedBlockAndNotOneTwiceTooLarge) {
  PretendDevice device(1 << 20);
  CachingAllocator a({}, device.calls());
  void* first = a.allocate(1000, "x");
  EXPECT_EQ(a.in_use_bytes(), 1024u) << "rounded to 512";
  a.release(first);
  EXPECT_EQ(a.cached_bytes(), 1024u);
  EXPECT_EQ(a.allocate(900, "y"), first) << "the cached block serves a near size";
  EXPECT_EQ(a.device_allocations(), 1);
  void* big = a.allocate(8192, "z");
  a.release(big);
  void* small = a.allocate(1024, "w");
  EXPECT_NE(small, big) << "an 8 KiB block is not pinned by a 1 KiB tensor";
  EXPECT_EQ(a.device_allocations(), 3);
  EXPECT_EQ(a.peak_bytes(), 1024u + 8192u);
}

TEST(CachingAllocator, AFixedLimitEvictsTheCacheThenNamesTheRequest) {
  PretendDevice device(1 << 20);
  CachingAllocator a({.limit_bytes = 4096}, device.calls());
  void* one = a.allocate(3584, "layer dense_1 output");
  a.release(one);
  void* two = a.allocate(1024, "layer dense_2 output");  // 3584 is too large to reuse and too large to keep
  EXPECT_EQ(device.frees, 1) << "the cached block made room under the limit";
  EXPECT_EQ(a.cached_bytes(), 0u);
  void* three = a.allocate(2048, "layer dense_3 output");
  EXPECT_EQ(oom_message(a, 1500, "layer conv1 output"),
            "out of GPU memory: layer conv1 output asked for 1.5 KiB, more than the memory limit allows (3.0 KiB in "
            "use, limit 4.0 KiB)");
  EXPECT_EQ(oom_message(a, 8192, "the workspace"),
            "out of GPU memory: the workspace asked for 8.0 KiB, more than the memory limit allows (3.0 KiB in use, "
            "limit 4.0 KiB)");
  a.release(two);
  a.release(three);
  EXPECT_LE(device.used, 4096u);
}

TEST(CachingAllocator, AFullDeviceIsRetriedAfterEmptyingTheCache) {
  PretendDevice device(8192);
  CachingAllocator a({}, device.calls());
  a.release(a.allocate(4096, "a"));
  void* whole = a.allocate(8192, "b");  // fits only once the cached 4 KiB went back
  EXPECT_NE(whole, nullptr);
  EXPECT_EQ(a.cached_bytes(), 0u);
  EXPECT_EQ(oom_message(a, 512, "layer c"),
            "out of GPU memory: layer c asked for 512 B, more than the device's free memory allows (8.0 KiB in use)");
}

TEST(CachingAllocator, GivesEverythingBackAndRefusesAForeignBlock) {
  PretendDevice device(1 << 20);
  {
    CachingAllocator a({}, device.calls());
    a.allocate(100, "kept");
    a.release(a.allocate(5000, "cached"));
    int local = 0;
    try {
      a.release(&local);
      ADD_FAILURE() << "released a foreign block";
    } catch (const ramjet::Error& e) {
      EXPECT_EQ(e.status(), RAMJET_ERR_INTERNAL);
    }
  }
  EXPECT_TRUE(device.live.empty()) << "blocks in use and cached both went back";
}

TEST(CachingAllocatorOnGpu, TheLimitAndTheDevicesOwnSizeAreNamed) {
  RAMJET_REQUIRE_GPU();
  {
    CachingAllocator a({.limit_bytes = size_t{64} << 20}, cuda_device_calls());
    void* block = a.allocate(size_t{32} << 20, "layer dense_1 output");
    check(cudaMemset(block, 0, size_t{32} << 20), "cudaMemset");
    EXPECT_NE(oom_message(a, size_t{40} << 20, "layer dense_2 output").find("more than the memory limit allows"),
              std::string::npos);
    a.release(block);
    EXPECT_EQ(a.allocate(size_t{30} << 20, "again"), block) << "the cached block is reused";
  }
  CachingAllocator grow({}, cuda_device_calls());
  const std::string message = oom_message(grow, size_t{1} << 40, "layer huge output");
  EXPECT_EQ(message.rfind("out of GPU memory: layer huge output asked for 1024.00 GiB, more than the device's free "
                          "memory allows", 0),
            0u)
      << message;
  void* after = grow.allocate(1 << 20, "after a refusal");  // the runtime is still usable
  EXPECT_EQ(cudaMemset(after, 0, 1 << 20), cudaSuccess);
}

}  // namespace
