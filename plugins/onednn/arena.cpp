#include "arena.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>

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

dnnl::memory ArenaCursor::place(const md& desc) {
  const size_t size = desc.get_size();
  const size_t offset = (used_ + kAlignment - 1) / kAlignment * kAlignment;
  if (!arena_.shared() || size == 0 || offset + size > arena_.reserved()) return dnnl::memory(desc, engine_);
  used_ = offset + size;
  return dnnl::memory(desc, engine_, arena_.base() + offset);
}

}  // namespace onednn
