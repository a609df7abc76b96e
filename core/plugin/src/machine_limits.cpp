#include "ramjet/plugin/machine_limits.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

namespace ramjet::core {

int cpu_count() {
  // A launcher that runs several ranks on one machine gives each its share (ramjet run --nproc sets it).
  if (const char* share = std::getenv("RAMJET_CPUS"))
    if (const int n = std::atoi(share); n > 0) return n;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

int64_t max_threads() { return std::max<int64_t>(64, 4 * int64_t{cpu_count()}); }

int64_t physical_memory_bytes() {
  static const int64_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : int64_t{0};
  }();
  return bytes;
}

std::string max_threads_explained() {
  return std::to_string(max_threads()) + " (4 per CPU of this machine's " +
         std::to_string(cpu_count()) + ", at least 64)";
}

}  // namespace ramjet::core
