#include "nccl_strategy.hpp"

#include <ramjet/sdk/cuda_driver.hpp>
#include <ramjet/sdk/tcp_store.hpp>

#include <chrono>
#include <cstring>
#include <thread>

namespace ramjet_nccl {
namespace {

using ramjet::net::kPeerFailure;
using ramjet::net::seconds_text;
using Clock = std::chrono::steady_clock;

void check_cuda(cudaError_t status, const std::string& what) {
  if (status != cudaSuccess)
    throw ramjet::Error(RAMJET_ERR_DEVICE, "nccl strategy: " + what + ": " + cudaGetErrorString(status));
}

// The GPUs this process sees; "no CUDA device: <why>" when none.
int device_count() {
  int count = 0;
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw ramjet::Error(RAMJET_ERR_DEVICE, ramjet::no_cuda_device(cudaGetErrorString(status)));
  }
  if (count == 0) throw ramjet::Error(RAMJET_ERR_DEVICE, "no CUDA device: the driver reports none");
  return count;
}

ncclDataType_t nccl_type(const DLTensor& t, const std::string& what) {
  const auto code = t.dtype.code, bits = t.dtype.bits;
  if (t.dtype.lanes == 1) {
    if (code == kDLFloat && bits == 32) return ncclFloat32;
    if (code == kDLFloat && bits == 64) return ncclFloat64;
    if (code == kDLFloat && bits == 16) return ncclFloat16;
    if (code == kDLBfloat && bits == 16) return ncclBfloat16;
    if (code == kDLInt && bits == 32) return ncclInt32;
    if (code == kDLInt && bits == 64) return ncclInt64;
    if (code == kDLUInt && bits == 8) return ncclUint8;
  }
  throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, "nccl strategy: " + what + ": dtype " + ramjet::dtype_name(t.dtype) +
                                                  " has no NCCL type");
}

ncclRedOp_t nccl_op(ramjet_reduce_op op) {
  switch (op) {
    case RAMJET_REDUCE_SUM: return ncclSum;
    case RAMJET_REDUCE_MEAN: return ncclAvg;
    case RAMJET_REDUCE_MAX: return ncclMax;
    case RAMJET_REDUCE_MIN: return ncclMin;
    default: throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "nccl strategy: unknown reduce op " + std::to_string(op));
  }
}

bool on_device(const DLTensor& t) { return t.device.device_type == kDLCUDA || t.device.device_type == kDLCUDAManaged; }

}  // namespace

NcclStrategy::NcclStrategy(const ramjet::Config& config) : settings_(Settings::read(config)) {
  const int count = device_count();
  device_ = settings_.device.value_or(rank() % count);
  if (device_ >= count)
    throw ramjet::Error(RAMJET_ERR_DEVICE, config.where("device") + ": device " + std::to_string(device_) +
                                               " does not exist (this process sees " + std::to_string(count) + ")");
  check_cuda(cudaSetDevice(device_), "cudaSetDevice(" + std::to_string(device_) + ")");
  check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  const ncclUniqueId id = meet();
  ncclConfig_t nccl_config = NCCL_CONFIG_INITIALIZER;
  nccl_config.blocking = 0;  // every call returns at once; wait() polls, against the timeout
  const ncclResult_t r = ncclCommInitRankConfig(&comm_, world_size(), id, rank(), &nccl_config);
  if (r != ncclSuccess && r != ncclInProgress)
    throw ramjet::Error(kPeerFailure, who() + ": ncclCommInitRankConfig: " + ncclGetErrorString(r));
  wait(nullptr, "building the communicator (every rank must reach it)");
}

NcclStrategy::~NcclStrategy() {
  if (comm_ != nullptr && !failed_) {
    // Flush and free within the timeout; a peer that is gone by now must not hang the exit either.
    const ncclResult_t finalized = ncclCommFinalize(comm_);
    ncclResult_t state = finalized == ncclSuccess || finalized == ncclInProgress ? ncclInProgress : finalized;
    const auto deadline = Clock::now() + settings_.rendezvous.timeout;
    while (state == ncclInProgress && Clock::now() < deadline) {
      if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (state == ncclSuccess) ncclCommDestroy(comm_);
    else ncclCommAbort(comm_);
  }
  for (auto& [handle, started] : started_)
    if (started.done != nullptr) cudaEventDestroy(started.done);
  if (staging_ != nullptr) cudaFree(staging_);
  if (stream_ != nullptr) cudaStreamDestroy(stream_);
}

std::string NcclStrategy::who() const {
  return "nccl strategy, rank " + std::to_string(rank()) + " (GPU " + std::to_string(device_) + ")";
}

ncclUniqueId NcclStrategy::meet() {
  ncclUniqueId id{};
  if (world_size() == 1) {
    const ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) throw ramjet::Error(kPeerFailure, who() + ": ncclGetUniqueId: " + ncclGetErrorString(r));
    return id;
  }
  const auto& rv = settings_.rendezvous;
  if (rank() == 0) server_ = std::make_unique<ramjet::net::TcpStoreServer>(rv.master_port, "nccl rendezvous store");
  ramjet::net::TcpStoreClient store(rv.master_addr, rv.master_port, rv.timeout, "nccl rendezvous store");
  if (rank() == 0) {
    const ncclResult_t r = ncclGetUniqueId(&id);
    if (r != ncclSuccess) throw ramjet::Error(kPeerFailure, who() + ": ncclGetUniqueId: " + ncclGetErrorString(r));
    store.set("nccl/unique_id", std::vector<char>(id.internal, id.internal + sizeof id.internal));
  } else {
    const std::vector<char> bytes = store.get("nccl/unique_id");  // waits up to the timeout
    if (bytes.size() != sizeof id.internal)
      throw ramjet::Error(kPeerFailure, who() + ": the rendezvous store holds a " + std::to_string(bytes.size()) +
                                            "-byte NCCL id, not " + std::to_string(sizeof id.internal) +
                                            " (another job on the same master_port?)");
    std::memcpy(id.internal, bytes.data(), bytes.size());
  }
  return id;
}

void NcclStrategy::abort_with(const std::string& message) {
  failed_ = true;
  failure_ = message;
  if (comm_ != nullptr) ncclCommAbort(comm_);  // frees it; any peer still waiting on this rank sees an error
  comm_ = nullptr;
  throw ramjet::Error(kPeerFailure, message);
}

void NcclStrategy::wait(cudaStream_t stream, const std::string& what) {
  if (stream == nullptr) wait(std::function<cudaError_t()>(), what);
  else wait([stream] { return cudaStreamQuery(stream); }, what);
}

void NcclStrategy::wait(const std::function<cudaError_t()>& device_done, const std::string& what) {
  const auto deadline = Clock::now() + settings_.rendezvous.timeout;
  for (;;) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t r = ncclCommGetAsyncError(comm_, &state);
    if (r != ncclSuccess) state = r;
    if (state != ncclSuccess && state != ncclInProgress) {
      const char* detail = ncclGetLastError(comm_);
      abort_with(who() + ": " + what + " failed: " + ncclGetErrorString(state) +
                 (detail != nullptr && *detail != '\0' ? std::string(" (") + detail + ")" : std::string()) +
                 "; the communicator was aborted");
    }
    bool done = state == ncclSuccess;
    if (done && device_done) {
      const cudaError_t q = device_done();
      if (q != cudaSuccess && q != cudaErrorNotReady)
        abort_with(who() + ": " + what + " failed on the GPU: " + cudaGetErrorString(q));
      done = q == cudaSuccess;
    }
    if (done) return;
    if (Clock::now() >= deadline)
      abort_with(who() + ": " + what + " timed out after " + seconds_text(settings_.rendezvous.timeout) +
                 " (train.strategy.timeout_s): a peer died or stalled; the communicator was aborted");
    std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

template <class Enqueue>
void NcclStrategy::collective(DLTensor& tensor, void* given_stream, const std::string& what, Enqueue run,
                              cudaEvent_t done) {
  if (failed_) throw ramjet::Error(kPeerFailure, who() + ": " + what + " not started: an earlier collective failed: " +
                                                     failure_);
  check_cuda(cudaSetDevice(device_), "cudaSetDevice(" + std::to_string(device_) + ")");
  if (!ramjet::is_contiguous(tensor))
    throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, who() + ": " + what + ": the tensor is not contiguous");
  const ncclDataType_t type = nccl_type(tensor, what);
  const size_t count = static_cast<size_t>(ramjet::element_count(tensor));
  const size_t bytes = count * ramjet::dtype_bytes(tensor.dtype);
  char* data = static_cast<char*>(tensor.data) + tensor.byte_offset;
  if (on_device(tensor)) {
    auto stream = given_stream != nullptr ? static_cast<cudaStream_t>(given_stream) : stream_;
    const ncclResult_t r = run(data, count, type, stream);
    if (r != ncclSuccess && r != ncclInProgress) abort_with(who() + ": " + what + ": " + ncclGetErrorString(r));
    if (done == nullptr) {
      wait(stream, what);
      return;
    }
    wait(nullptr, what + " (enqueueing it)");  // a non-blocking communicator may still be enqueueing
    check_cuda(cudaEventRecord(done, stream), "cudaEventRecord (" + what + ")");
    return;
  }
  if (tensor.device.device_type != kDLCPU && tensor.device.device_type != kDLCUDAHost)
    throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, who() + ": " + what + ": tensors on device type " +
                                                    std::to_string(tensor.device.device_type) + " are not supported");
  if (bytes > staging_bytes_) {
    if (staging_ != nullptr) cudaFree(staging_), staging_ = nullptr, staging_bytes_ = 0;
    check_cuda(cudaMalloc(&staging_, bytes), "cudaMalloc (" + std::to_string(bytes) + " bytes for a CPU tensor)");
    staging_bytes_ = bytes;
  }
  check_cuda(cudaMemcpyAsync(staging_, data, bytes, cudaMemcpyHostToDevice, stream_), "cudaMemcpyAsync (to the GPU)");
  const ncclResult_t r = run(staging_, count, type, stream_);
  if (r != ncclSuccess && r != ncclInProgress) abort_with(who() + ": " + what + ": " + ncclGetErrorString(r));
  wait(stream_, what);
  check_cuda(cudaMemcpyAsync(data, staging_, bytes, cudaMemcpyDeviceToHost, stream_), "cudaMemcpyAsync (to the CPU)");
  check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
}

std::string NcclStrategy::all_reduce_text(const DLTensor& tensor) const {
  return "all-reduce of " + std::to_string(ramjet::element_count(tensor)) + " " + ramjet::dtype_name(tensor.dtype) +
         " elements";
}

void NcclStrategy::all_reduce(DLTensor& tensor, const ramjet_collective_args& args, cudaEvent_t done) {
  const ncclRedOp_t op = nccl_op(args.op);
  collective(
      tensor, args.stream, all_reduce_text(tensor),
      [&](void* buffer, size_t count, ncclDataType_t type, cudaStream_t stream) {
        return ncclAllReduce(buffer, buffer, count, type, op, comm_, stream);
      },
      done);
}

uint64_t NcclStrategy::all_reduce_start(DLTensor& tensor, const ramjet_collective_args& args) {
  Started started{nullptr, all_reduce_text(tensor)};
  if (on_device(tensor)) {
    check_cuda(cudaSetDevice(device_), "cudaSetDevice(" + std::to_string(device_) + ")");
    check_cuda(cudaEventCreateWithFlags(&started.done, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    try {
      all_reduce(tensor, args, started.done);
    } catch (...) {
      cudaEventDestroy(started.done);
      throw;
    }
  } else {
    all_reduce(tensor, args);  // through the staging buffer, one at a time: done before it returns
  }
  const uint64_t handle = next_handle_++;
  started_.emplace(handle, std::move(started));
  return handle;
}

void NcclStrategy::all_reduce_wait(uint64_t handle) {
  auto it = started_.find(handle);
  if (it == started_.end())
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, who() + ": all_reduce_wait: handle " + std::to_string(handle) +
                                                         " was not started, or was waited for already");
  const Started started = std::move(it->second);
  started_.erase(it);
  if (started.done == nullptr) return;
  struct EventOwner {
    cudaEvent_t event;
    ~EventOwner() { cudaEventDestroy(event); }
  } owner{started.done};
  if (failed_) throw ramjet::Error(kPeerFailure, who() + ": " + started.what + ": an earlier collective failed: " + failure_);
  check_cuda(cudaSetDevice(device_), "cudaSetDevice(" + std::to_string(device_) + ")");
  wait([&] { return cudaEventQuery(started.done); }, started.what);
}

void NcclStrategy::broadcast(DLTensor& tensor, const ramjet_collective_args& args) {
  if (args.root < 0 || args.root >= world_size())
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, who() + ": broadcast root " + std::to_string(args.root) +
                                                         " is not a rank");
  const std::string what = "broadcast of " + std::to_string(ramjet::element_count(tensor)) + " " +
                           ramjet::dtype_name(tensor.dtype) + " elements from rank " + std::to_string(args.root);
  collective(tensor, args.stream, what, [&](void* buffer, size_t count, ncclDataType_t type, cudaStream_t stream) {
    return ncclBroadcast(buffer, buffer, count, type, args.root, comm_, stream);
  });
}

void NcclStrategy::barrier() {
  int32_t one = 1;
  int64_t shape = 1;
  DLTensor t{&one, {kDLCPU, 0}, 1, {kDLInt, 32, 1}, &shape, nullptr, 0};
  const ramjet_collective_args args{sizeof(ramjet_collective_args), RAMJET_ABI_VERSION, RAMJET_REDUCE_SUM, 0, nullptr};
  all_reduce(t, args);
}

}  // namespace ramjet_nccl
