// Raises the calling thread's scheduling priority (a lower nice value) for the life of this object, so that every
// thread it starts meanwhile inherits the raise (Linux keeps a nice value per thread and copies it to new threads).
// The gloo strategy starts its transport threads under one: while backward keeps every core busy they are served
// first, so a bucket's all-reduce runs beside backward instead of waiting behind it (NCCL runs its communication on
// a high-priority stream for the same reason). Lowering a nice value needs CAP_SYS_NICE or room under RLIMIT_NICE;
// without either nothing changes and why_not() says so.
#pragma once

#include <string>
#include <sys/types.h>

namespace ramjet_gloo {

class RaisedPriority {
 public:
  // `levels` nice steps above the calling thread's own (clamped at -20, the highest); 0 changes nothing.
  explicit RaisedPriority(int levels);
  // Puts the calling thread's own priority back (raising a nice value needs no privilege).
  ~RaisedPriority();
  RaisedPriority(const RaisedPriority&) = delete;
  RaisedPriority& operator=(const RaisedPriority&) = delete;

  bool raised() const { return raised_; }
  // Why a raise that was asked for did not happen; empty when it did or when none was asked for.
  const std::string& why_not() const { return why_not_; }

 private:
  pid_t thread_;
  int before_ = 0;
  bool raised_ = false;
  std::string why_not_;
};

}  // namespace ramjet_gloo
