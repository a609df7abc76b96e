// strategy "mpi": data-parallel collectives over Open MPI, for jobs that mpirun or a cluster's scheduler starts;
// rank and world size are MPI's. Open MPI 4.1 moves a non-blocking collective's bytes only while someone is inside
// an MPI call, and never gives up on a stalled peer. So every collective runs as a blocking MPI call on one
// communication thread of its own — Open MPI progresses it there the whole time, while backward runs on the
// caller's threads — and a watchdog ends the job with a clear message (MPI_Abort, so mpirun ends every rank) once
// one collective has been in flight for train.strategy.timeout_s. A rank killed outright is mpirun's to report: it
// ends the job, naming it.
#pragma once

#include "mpi_settings.hpp"

#include <ramjet/sdk.hpp>

#include <memory>
#include <mutex>
#include <optional>
#include <string>

namespace ramjet_mpi {

struct Comm;

// A failure of a peer or of the transport, as every strategy reports it (a runtime failure, exit 1).
using ramjet::net::kPeerFailure;

class MpiStrategy {
 public:
  static ramjet::Fields fields() { return Settings::fields(); }

  // Initializes MPI on the communication thread (MPI_THREAD_MULTIPLE, for the watchdog's MPI_Abort): once per
  // process (MPI cannot start twice).
  explicit MpiStrategy(const ramjet::Config& config);
  // Finalizes MPI on that thread after a clean run; after a failure it leaves MPI as it is (finalizing would wait
  // for the peer that failed) and the process's exit tells mpirun to end the job.
  ~MpiStrategy();

  int rank() const { return rank_; }
  int world_size() const { return world_size_; }
  void broadcast(DLTensor& tensor, const ramjet_collective_args& args);
  void all_reduce(DLTensor& tensor, const ramjet_collective_args& args);
  void barrier();
  uint64_t all_reduce_start(DLTensor& tensor, const ramjet_collective_args& args);
  void all_reduce_wait(uint64_t handle);

 private:
  // Runs `work` on the communication thread; a failure there becomes this rank's first failure.
  uint64_t submit(const std::string& what, std::function<void()> work);
  void wait(uint64_t handle);
  std::string who() const;

  Settings settings_;
  std::shared_ptr<Comm> comm_;  // shared with the communication thread's jobs
  int rank_ = 0, world_size_ = 1;
  bool initialized_here_ = false;
  // Shared with the communication thread's jobs: once set, every later collective fails at once with it.
  struct FirstFailure {
    std::mutex mutex;
    std::string message;
  };
  std::shared_ptr<FirstFailure> first_failure_ = std::make_shared<FirstFailure>();
  std::optional<ramjet::CollectiveQueue> queue_;
  uint64_t collectives_ = 0;
};

}  // namespace ramjet_mpi
