// Device memory for a backend, as TensorFlow offers it: grow on demand (the default), or never hold more than a
// fixed limit. Freed blocks are cached for the next request of a similar size instead of going back to the driver
// (cudaMalloc and cudaFree synchronise the device; a training step asks for the same sizes every time). When the
// device says no, the cache is emptied and the request tried once more; then the error names what the memory was
// for, how much was asked, and how much was held.
//
// The device calls are injected (`DeviceCalls`), so that the bookkeeping is tested on the CPU and the same class
// runs over cudaMalloc/cudaFree on a GPU. Not thread-safe: a backend program allocates from one thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>

namespace cuda_plugin {

struct MemorySettings {
  // 0: grow on demand, up to what the device has. Otherwise never hold (in use + cached) more than this.
  size_t limit_bytes = 0;
};

struct DeviceCalls {
  std::function<void*(size_t bytes)> allocate;  // null when the device has no room
  std::function<void(void* block)> free;
};

class CachingAllocator {
 public:
  // Requests are rounded up to this, so near sizes share cached blocks (and every block stays 512-aligned).
  static constexpr size_t kRound = 512;

  CachingAllocator(MemorySettings settings, DeviceCalls calls);
  ~CachingAllocator();  // returns every block, in use or cached, to the device
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // A block of at least `bytes`, owned by this allocator until release(). `purpose` ("layer conv1 output") goes
  // into the out-of-memory error (ramjet::Error, RAMJET_ERR_OUT_OF_MEMORY).
  void* allocate(size_t bytes, const std::string& purpose);
  // Back into the cache. `block` must come from allocate() and not have been released since.
  void release(void* block);
  // Every cached block back to the device.
  void empty_cache();

  size_t in_use_bytes() const { return in_use_bytes_; }
  size_t cached_bytes() const { return cached_bytes_; }
  size_t peak_bytes() const { return peak_bytes_; }
  int64_t device_allocations() const { return device_allocations_; }

 private:
  // A cached block for `rounded` bytes, and its own (possibly larger) size; {null, 0} when none fits.
  std::pair<void*, size_t> from_cache(size_t rounded);
  void* from_device(size_t rounded);
  [[noreturn]] void out_of_memory(size_t bytes, const std::string& purpose, const char* why) const;

  MemorySettings settings_;
  DeviceCalls calls_;
  std::multimap<size_t, void*> cached_;           // size → block, free for reuse
  std::unordered_map<void*, size_t> in_use_;      // block → size
  size_t in_use_bytes_ = 0, cached_bytes_ = 0, peak_bytes_ = 0;
  int64_t device_allocations_ = 0;
};

// Human-readable bytes for messages: "512 B", "3.0 MiB", "1.25 GiB".
std::string bytes_text(size_t bytes);

}  // namespace cuda_plugin

namespace cuda_plugin {

// cudaMalloc and cudaFree on the current device: allocate answers null for cudaErrorMemoryAllocation (clearing it)
// and throws, naming the call, for any other failure.
DeviceCalls cuda_device_calls();

}  // namespace cuda_plugin
