#include "arena.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>
#include <utility>

namespace onednn {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// oneDNN's own allocations are 64-byte aligned; its kernels assume no less.
constexpr size_t kAlignment = 64;

size_t physical_memory() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  return pages > 0 && page > 0 ? static_cast<size_t>(pages) * static_cast<size_t>(page) : size_t{0};
}

size_t aligned(size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }

}  // namespace

Arena::Arena() {
  if (kSanitized) return;
  // No plan can use more than the machine's memory; reserving that much costs address space only.
  const size_t size = std::max<size_t>(physical_memory(), size_t{1} << 30);
  void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) return;
  base_ = static_cast<char*>(p);
  reserved_ = size;
}

Arena::~Arena() {
  if (base_ != nullptr) munmap(base_, reserved_);
}

dnnl::memory ArenaCursor::place(const md& desc, Side side) {
  const size_t size = aligned(desc.get_size());
  if (!arena_.shared() || size == 0) return dnnl::memory(desc, engine_);
  size_t offset = used_;
  auto fit = side != reused_ ? free_.end()
                             : std::find_if(free_.begin(), free_.end(), [&](const auto& f) { return f.second >= size; });
  if (fit != free_.end()) {
    offset = fit->first;
    const size_t rest = fit->second - size;
    free_.erase(fit);
    if (rest > 0) free_.emplace(offset + size, rest);
  } else if (side == reused_ && !free_.empty() && std::prev(free_.end())->first + std::prev(free_.end())->second == used_) {
    offset = std::prev(free_.end())->first;  // the free block at the top grows into fresh space
    free_.erase(std::prev(free_.end()));
  }
  if (offset + size > arena_.reserved()) return dnnl::memory(desc, engine_);
  used_ = std::max(used_, offset + size);
  placed_.emplace(offset, size);
  recent_.push_back({offset, side});
  return dnnl::memory(desc, engine_, arena_.base() + offset);
}

dnnl::memory ArenaCursor::place_apart(const md& desc) {
  const size_t size = aligned(desc.get_size());
  if (!arena_.shared() || size == 0 || used_ + size > arena_.reserved()) return dnnl::memory(desc, engine_);
  const size_t offset = used_;
  used_ += size;
  return dnnl::memory(desc, engine_, arena_.base() + offset);
}

std::vector<ArenaCursor::Placed> ArenaCursor::take_recent() { return std::exchange(recent_, {}); }

bool ArenaCursor::block_of(const void* data, size_t& block) const {
  const char* p = static_cast<const char*>(data);
  if (!arena_.shared() || p < arena_.base() || p >= arena_.base() + used_) return false;
  const size_t offset = static_cast<size_t>(p - arena_.base());
  auto it = placed_.upper_bound(offset);
  if (it == placed_.begin()) return false;
  --it;
  if (offset >= it->first + it->second) return false;
  block = it->first;
  return true;
}

void ArenaCursor::release(size_t block) {
  auto it = placed_.find(block);
  if (it == placed_.end()) return;
  size_t offset = it->first, size = it->second;
  placed_.erase(it);
  auto next = free_.lower_bound(offset);
  if (next != free_.end() && next->first == offset + size) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == offset) {
      offset = prev->first;
      size += prev->second;
      free_.erase(prev);
    }
  }
  free_.emplace(offset, size);
}

}  // namespace onednn
