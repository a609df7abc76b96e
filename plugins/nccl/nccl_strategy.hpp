// The nccl strategy: data-parallel collectives between GPUs over NCCL, one process per GPU. The ranks meet through
// the rendezvous every strategy shares (rank 0's TCP store, ramjet/sdk/tcp_store.hpp), where rank 0 publishes the
// NCCL unique id. The communicator is non-blocking (NCCL's `blocking = 0`): every call returns at once, and this
// class polls it — and the stream the collective runs on — against train.strategy.timeout_s, so a rank that died
// or stalls ends the job with an error naming the rank and the collective (ncclCommAbort), never a hang: the
// complaint NCCL's and Horovod's trackers hear most.
//
// Tensors may live on the GPU (the cuda backend's gradients: device or managed memory) and are reduced in place
// on the backend's stream (ramjet_collective_args.stream) or this strategy's own; CPU tensors (initial weights,
// metrics) travel through a device buffer.
#pragma once

#include "nccl_settings.hpp"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <memory>
#include <string>

namespace ramjet::net {
class TcpStoreServer;
}  // namespace ramjet::net

namespace ramjet_nccl {

class NcclStrategy {
 public:
  static ramjet::Fields fields() { return Settings::fields(); }
  static void check(const nlohmann::json& config, ramjet::Problems& problems) { Settings::check(config, problems); }

  // Opens the rank's GPU ("no CUDA device: ..." without one), meets the other ranks and builds the communicator,
  // each within the timeout.
  explicit NcclStrategy(const ramjet::Config& config);
  ~NcclStrategy();
  NcclStrategy(const NcclStrategy&) = delete;
  NcclStrategy& operator=(const NcclStrategy&) = delete;

  int rank() const { return settings_.rendezvous.rank; }
  int world_size() const { return settings_.rendezvous.world_size; }
  void broadcast(DLTensor& tensor, const ramjet_collective_args& args);
  void all_reduce(DLTensor& tensor, const ramjet_collective_args& args);
  void barrier();

 private:
  ncclUniqueId meet();
  // A collective on `tensor` (in place): `run` enqueues it on the stream given; waits for it within the timeout.
  template <class Enqueue>
  void collective(DLTensor& tensor, void* stream, const std::string& what, Enqueue run);
  // Polls the communicator until it is no longer in progress, and `stream` (when given) until its work is done,
  // within the timeout; aborts the communicator and throws on an error or the deadline.
  void wait(cudaStream_t stream, const std::string& what);
  [[noreturn]] void abort_with(const std::string& message);
  std::string who() const;

  Settings settings_;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
  bool failed_ = false;  // an earlier collective failed and the communicator was aborted
  std::string failure_;
  std::unique_ptr<ramjet::net::TcpStoreServer> server_;  // rank 0's, alive as long as the communicator
  void* staging_ = nullptr;  // device memory for CPU tensors
  size_t staging_bytes_ = 0;
};

}  // namespace ramjet_nccl
