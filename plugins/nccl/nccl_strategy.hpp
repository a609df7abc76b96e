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
//
// all_reduce_start/all_reduce_wait let the trainer's gradient buckets overlap with backward: start enqueues the
// all-reduce of a GPU tensor and returns at once (the cuda backend hands each gradient over once it is final, and
// its next layers run on its own stream beside NCCL's); wait polls for that all-reduce alone, within the timeout.
#pragma once

#include "nccl_settings.hpp"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <functional>
#include <map>
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
  // `done` (all_reduce_start's): record it once the all-reduce is enqueued, and return without waiting.
  void all_reduce(DLTensor& tensor, const ramjet_collective_args& args, cudaEvent_t done = nullptr);
  void barrier();
  // A GPU tensor's all-reduce enqueued (a CPU tensor's is done before this returns); the handle is waited for once.
  uint64_t all_reduce_start(DLTensor& tensor, const ramjet_collective_args& args);
  void all_reduce_wait(uint64_t handle);

 private:
  ncclUniqueId meet();
  // A collective on `tensor` (in place): `run` enqueues it on the stream given; waits for it within the timeout,
  // or, when `done` is given, records it there instead and returns once it is enqueued.
  template <class Enqueue>
  void collective(DLTensor& tensor, void* stream, const std::string& what, Enqueue run, cudaEvent_t done = nullptr);
  // Polls the communicator until it is no longer in progress, and `device_done` (when given: a stream's or an
  // event's query) until the GPU's work is done, within the timeout; aborts the communicator and throws on an error
  // or the deadline.
  void wait(const std::function<cudaError_t()>& device_done, const std::string& what);
  void wait(cudaStream_t stream, const std::string& what);
  std::string all_reduce_text(const DLTensor& tensor) const;
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
  struct Started {
    cudaEvent_t done = nullptr;  // recorded after the all-reduce; null for a CPU tensor's, done at start
    std::string what;
  };
  std::map<uint64_t, Started> started_;  // by handle, until waited for
  uint64_t next_handle_ = 1;
};

}  // namespace ramjet_nccl
