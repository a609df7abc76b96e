#include "raised_priority.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ramjet_gloo {

RaisedPriority::RaisedPriority(int levels) : thread_(::gettid()) {
  if (levels <= 0) return;
  errno = 0;
  before_ = ::getpriority(PRIO_PROCESS, static_cast<id_t>(thread_));  // -1 is a valid nice value: errno tells
  if (errno != 0) {
    why_not_ = std::string("could not read the thread's nice value: ") + std::strerror(errno);
    return;
  }
  const int target = std::max(-20, before_ - levels);
  if (target == before_) return;
  if (::setpriority(PRIO_PROCESS, static_cast<id_t>(thread_), target) != 0) {
    why_not_ = errno == EPERM || errno == EACCES
                   ? "lowering a nice value needs CAP_SYS_NICE or RLIMIT_NICE room, which this process lacks"
                   : std::string("setpriority failed: ") + std::strerror(errno);
    return;
  }
  raised_ = true;
}

RaisedPriority::~RaisedPriority() {
  if (raised_) ::setpriority(PRIO_PROCESS, static_cast<id_t>(thread_), before_);
}

}  // namespace ramjet_gloo
