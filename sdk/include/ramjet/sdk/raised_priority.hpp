// A strategy's communication threads at a raised scheduling priority. Linux keeps a nice value per thread and a new
// thread starts with its creator's, so a strategy makes its threads (its own and its library's) under a
// RaisedPriority. While backward keeps every core busy, the scheduler then serves an all-reduce's transfers first
// and backward with what is left, so a bucket travels beside backward instead of waiting behind it. Lowering a nice
// value needs CAP_SYS_NICE (root has it, except in a container that drops it) or room under RLIMIT_NICE (ulimit -e);
// with part of the room, the threads go as far as it allows; with none, nothing changes.
#ifndef RAMJET_SDK_RAISED_PRIORITY_HPP
#define RAMJET_SDK_RAISED_PRIORITY_HPP

#include <ramjet/sdk/fields.hpp>

#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace ramjet {

// The strategy field that sets it, the same words for every strategy.
inline Field priority_boost_field() {
  return Field::integer("priority_boost").at_least(0).at_most(39).fallback(10)
      .doc("nice levels the strategy's communication threads run above the rest of the process, so that an "
           "all-reduce is served beside a busy backward; needs CAP_SYS_NICE or RLIMIT_NICE room, else ignored; "
           "0: off");
}

// Raises the calling thread for the life of the object, which never leaves that thread (it cannot be moved).
class RaisedPriority {
 public:
  // `levels` nice steps above the calling thread's own, at most to -20 (the highest) or to what RLIMIT_NICE allows;
  // 0 changes nothing.
  explicit RaisedPriority(int levels) {
    if (levels <= 0) return;
    errno = 0;
    before_ = ::getpriority(PRIO_PROCESS, kThisThread);  // -1 is a valid nice value: errno tells
    if (errno != 0) {
      why_not_ = std::string("could not read the thread's nice value: ") + std::strerror(errno);
      return;
    }
    int target = std::max(-20, before_ - levels);
    if (target == before_) return;
    if (::setpriority(PRIO_PROCESS, kThisThread, target) == 0) {
      raised_ = true;
      return;
    }
    if (errno == EPERM || errno == EACCES) {
      // Without CAP_SYS_NICE a thread may go down to 20 - RLIMIT_NICE: as far as that, when it is any higher.
      rlimit limit{};
      if (::getrlimit(RLIMIT_NICE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY && limit.rlim_cur <= 40) {
        target = std::max(target, 20 - static_cast<int>(limit.rlim_cur));
        if (target < before_ && ::setpriority(PRIO_PROCESS, kThisThread, target) == 0) {
          raised_ = true;
          return;
        }
      }
      why_not_ = "lowering a nice value needs CAP_SYS_NICE or RLIMIT_NICE room, which this process lacks";
    } else {
      why_not_ = std::string("setpriority failed: ") + std::strerror(errno);
    }
  }
  // Puts the calling thread's own priority back (raising a nice value needs no privilege).
  ~RaisedPriority() {
    if (raised_) ::setpriority(PRIO_PROCESS, kThisThread, before_);
  }
  RaisedPriority(const RaisedPriority&) = delete;
  RaisedPriority& operator=(const RaisedPriority&) = delete;

  bool raised() const { return raised_; }
  // Why a raise that was asked for did not happen; empty when it did or when none was asked for.
  const std::string& why_not() const { return why_not_; }

 private:
  // On Linux, PRIO_PROCESS with 0 names the calling thread alone, not its whole process.
  static constexpr id_t kThisThread = 0;
  int before_ = 0;
  bool raised_ = false;
  std::string why_not_;
};

}  // namespace ramjet

#endif
