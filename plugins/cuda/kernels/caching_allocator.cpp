#include "caching_allocator.hpp"

#include <ramjet/sdk/error.hpp>

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <limits>

namespace cuda_plugin {
namespace {

// A cached block serves a request down to half its size: smaller, and a small tensor would pin a large block.
constexpr size_t kMaxWaste = 2;

}  // namespace

std::string bytes_text(size_t bytes) {
  char text[32];
  if (bytes < 1024) std::snprintf(text, sizeof text, "%zu B", bytes);
  else if (bytes < (size_t{1} << 20)) std::snprintf(text, sizeof text, "%.1f KiB", static_cast<double>(bytes) / 1024);
  else if (bytes < (size_t{1} << 30)) std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  else std::snprintf(text, sizeof text, "%.2f GiB", static_cast<double>(bytes) / (1 << 30));
  return text;
}

CachingAllocator::CachingAllocator(MemorySettings settings, DeviceCalls calls)
    : settings_(settings), calls_(std::move(calls)) {}

CachingAllocator::~CachingAllocator() {
  empty_cache();
  for (const auto& [block, size] : in_use_) calls_.free(block);
}

void* CachingAllocator::allocate(size_t bytes, const std::string& purpose) {
  if (bytes > std::numeric_limits<size_t>::max() / 2) out_of_memory(bytes, purpose, "more than can be addressed");
  const size_t rounded = bytes == 0 ? kRound : (bytes + kRound - 1) / kRound * kRound;
  auto [block, size] = from_cache(rounded);
  if (block == nullptr) {
    const size_t limit = settings_.limit_bytes;
    if (limit > 0 && rounded > limit) out_of_memory(bytes, purpose, "the memory limit");
    // Under a limit, cached blocks make room first, largest first.
    while (limit > 0 && in_use_bytes_ + cached_bytes_ + rounded > limit && !cached_.empty()) {
      auto largest = std::prev(cached_.end());
      calls_.free(largest->second);
      cached_bytes_ -= largest->first;
      cached_.erase(largest);
    }
    if (limit > 0 && in_use_bytes_ + rounded > limit) out_of_memory(bytes, purpose, "the memory limit");
    block = from_device(rounded);
    if (block == nullptr) {
      empty_cache();  // the device may be full of our own cached blocks
      block = from_device(rounded);
    }
    if (block == nullptr) out_of_memory(bytes, purpose, "the device's free memory");
    size = rounded;
  }
  in_use_.emplace(block, size);
  in_use_bytes_ += size;
  peak_bytes_ = std::max(peak_bytes_, in_use_bytes_);
  return block;
}

std::pair<void*, size_t> CachingAllocator::from_cache(size_t rounded) {
  auto it = cached_.lower_bound(rounded);
  if (it == cached_.end() || it->first > rounded * kMaxWaste) return {nullptr, 0};
  const std::pair<void*, size_t> found{it->second, it->first};
  cached_bytes_ -= it->first;
  cached_.erase(it);
  return found;
}

void* CachingAllocator::from_device(size_t rounded) {
  void* block = calls_.allocate(rounded);
  if (block != nullptr) ++device_allocations_;
  return block;
}

void CachingAllocator::release(void* block) {
  auto it = in_use_.find(block);
  if (it == in_use_.end())
    throw ramjet::Error(RAMJET_ERR_INTERNAL, "device memory: released a block this allocator does not hold in use");
  in_use_bytes_ -= it->second;
  cached_bytes_ += it->second;
  cached_.emplace(it->second, block);
  in_use_.erase(it);
}

void CachingAllocator::empty_cache() {
  for (const auto& [size, block] : cached_) calls_.free(block);
  cached_.clear();
  cached_bytes_ = 0;
}

void CachingAllocator::out_of_memory(size_t bytes, const std::string& purpose, const char* why) const {
  std::string message = "out of GPU memory: " + purpose + " asked for " + bytes_text(bytes) + ", more than " + why +
                        " allows (" + bytes_text(in_use_bytes_) + " in use";
  if (settings_.limit_bytes > 0) message += ", limit " + bytes_text(settings_.limit_bytes);
  message += ")";
  throw ramjet::Error(RAMJET_ERR_OUT_OF_MEMORY, message);
}

}  // namespace cuda_plugin
