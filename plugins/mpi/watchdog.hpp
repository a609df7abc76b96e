// The mpi strategy's watchdog. Open MPI never gives up on a peer that stalls, so a blocking collective could wait
// forever. The communication thread marks each collective's start and end here; a thread of the watchdog's own
// checks a few times a second and, once one collective has been in flight for longer than the limit, hands its
// description to `expire` — which ends the job (it never returns).
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace ramjet_mpi {

class Watchdog {
 public:
  using Clock = std::chrono::steady_clock;
  Watchdog(std::chrono::milliseconds limit, std::function<void(const std::string& what)> expire);
  ~Watchdog();  // stops the watchdog's thread
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void begin(const std::string& what);
  void end();

 private:
  void watch();

  const std::chrono::milliseconds limit_;
  const std::function<void(const std::string&)> expire_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool stopping_ = false;
  bool in_flight_ = false;
  Clock::time_point since_;
  std::string what_;
  std::thread thread_;
};

}  // namespace ramjet_mpi
