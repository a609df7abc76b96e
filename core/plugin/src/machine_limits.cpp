#include "ramjet/plugin/machine_limits.hpp"

#include <unistd.h>

#include <algorithm>
#include <thread>

namespace ramjet::core {

int64_t max_threads() {
  const int64_t cpus = std::max<unsigned>(1, std::thread::hardware_concurrency());
  return std::max<int64_t>(64, 4 * cpus);
}

int64_t physical_memory_bytes() {
  static const int64_t bytes = [] {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    return pages > 0 && page > 0 ? static_cast<int64_t>(pages) * page : int64_t{0};
  }();
  return bytes;
}

std::string max_threads_explained() {
  return std::to_string(max_threads()) + " (4 per CPU of this machine's " +
         std::to_string(std::max<unsigned>(1, std::thread::hardware_concurrency())) + ", at least 64)";
}

}  // namespace ramjet::core
