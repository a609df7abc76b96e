#include "mpi_strategy.hpp"

#include <mpi.h>

#include "watchdog.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>

namespace ramjet_mpi {

using namespace std::chrono_literals;

namespace {
void check(int code, const std::string& what);
}  // namespace

// The communicator, as the communication thread's jobs see it (shared, by value: a job never reads the strategy).
struct Comm {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  bool thread_multiple = false;  // MPI_Abort may then be called from the watchdog's thread
  std::shared_ptr<Watchdog> watchdog;

  // Runs one blocking collective under the watchdog.
  template <class Call>
  void collective(const std::string& what, Call call) const {
    watchdog->begin(what);
    const int code = call();
    watchdog->end();
    check(code, what);
  }
};

namespace {

// MPI counts are ints: larger tensors travel in pieces of at most this many elements, one collective each.
constexpr int64_t kMaxCount = int64_t{1} << 30;

// MPI can start once per process; a second strategy in the same process is refused instead of breaking the first.
std::atomic<bool> g_started{false};

std::string shape_text(const DLTensor& t) {
  std::string out = ramjet::dtype_name(t.dtype) + "[";
  for (int i = 0; i < t.ndim; ++i) out += (i ? "," : "") + std::to_string(t.shape[i]);
  return out + "]";
}

std::string mpi_error_text(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(length));
}

void check(int code, const std::string& what) {
  if (code != MPI_SUCCESS) throw ramjet::Error(kPeerFailure, what + " failed: " + mpi_error_text(code));
}

MPI_Datatype mpi_type(DLDataType dtype) {
  if (dtype.code == kDLFloat) return dtype.bits == 32 ? MPI_FLOAT : MPI_DOUBLE;
  return dtype.bits == 32 ? MPI_INT32_T : MPI_INT64_T;
}

MPI_Op mpi_op(ramjet_reduce_op op) {
  switch (op) {
    case RAMJET_REDUCE_MAX: return MPI_MAX;
    case RAMJET_REDUCE_MIN: return MPI_MIN;
    default: return MPI_SUM;  // and a mean: the sum, divided here afterwards, as the gloo strategy does
  }
}

template <class T>
void divide(void* data, int64_t n, int size) {
  auto* p = static_cast<T*>(data);
  const T d = static_cast<T>(size);
  for (int64_t i = 0; i < n; ++i) p[i] /= d;
}

// Collectives work on whole, dense CPU buffers in place.
void require_dense_cpu(const DLTensor& t, const std::string& what) {
  // Pinned host memory and managed memory (the cuda backend's gradients) are read and written in place like CPU
  // memory.
  if (t.device.device_type != kDLCPU && t.device.device_type != kDLCUDAHost && t.device.device_type != kDLCUDAManaged)
    throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, what + ": the tensor is not in CPU memory");
  if (!ramjet::is_contiguous(t)) throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, what + ": the tensor is not contiguous");
  if (t.data == nullptr && ramjet::element_count(t) > 0)
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, what + ": the tensor has no data");
}

// Open MPI opens its own components (transports, the launcher's client) with dlopen and expects them to find
// libmpi's symbols globally. ramjet loads this plugin, and with it libmpi, locally: make libmpi global, and keep it
// and this plugin loaded for good (Open MPI cannot be unloaded and started again).
void make_mpi_global() {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(&MPI_Init_thread), &info) != 0 && info.dli_fname != nullptr)
    if (void* h = dlopen(info.dli_fname, RTLD_NOW | RTLD_GLOBAL | RTLD_NOLOAD | RTLD_NODELETE)) dlclose(h);
  if (dladdr(reinterpret_cast<void*>(&make_mpi_global), &info) != 0 && info.dli_fname != nullptr)
    if (void* h = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) dlclose(h);
}

}  // namespace

std::string MpiStrategy::who() const {
  return "mpi strategy, rank " + std::to_string(rank_) + " of " + std::to_string(world_size_);
}

MpiStrategy::MpiStrategy(const ramjet::Config& config) : settings_(Settings::read(config)) {
  if (g_started.exchange(true))
    throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, config.where("type") + ": MPI starts once per process and this "
                                                "process has started it already; run one rank per process "
                                                "(mpirun -np N ramjet run ...)");
  make_mpi_global();
  {
    // The communication thread, and whatever threads MPI starts from it, inherit the raise.
    const ramjet::RaisedPriority raised(settings_.priority_boost);
    if (!raised.why_not().empty())
      ramjet::log(RAMJET_LOG_DEBUG, "mpi", "the communication thread runs at the process's priority: " +
                                              raised.why_not() + " (train.strategy.priority_boost)");
    queue_.emplace();
  }
  auto comm = std::make_shared<Comm>();
  auto initialized_here = std::make_shared<bool>(false);
  const uint64_t init = queue_->submit([comm, initialized_here] {
    int finalized = 0, initialized = 0;
    MPI_Finalized(&finalized);
    if (finalized) throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, "MPI was finalized in this process already");
    MPI_Initialized(&initialized);
    int provided = 0;
    if (!initialized) {
      // Every collective runs on this thread; MPI_THREAD_MULTIPLE lets the watchdog's thread call MPI_Abort while
      // this one is inside a collective.
      check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
      *initialized_here = true;
    } else {
      MPI_Query_thread(&provided);
    }
    comm->thread_multiple = provided >= MPI_THREAD_MULTIPLE;
    check(MPI_Comm_dup(MPI_COMM_WORLD, &comm->comm), "MPI_Comm_dup");
    // Failures come back as codes, turned into messages here, instead of MPI's default of aborting at once.
    check(MPI_Comm_set_errhandler(comm->comm, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
    check(MPI_Comm_rank(comm->comm, &comm->rank), "MPI_Comm_rank");
    check(MPI_Comm_size(comm->comm, &comm->size), "MPI_Comm_size");
  });
  try {
    if (!queue_->wait(init, settings_.timeout))
      throw ramjet::Error(kPeerFailure, "mpi strategy: MPI_Init did not return within " +
                                            seconds_text(settings_.timeout) + " (train.strategy.timeout_s)");
  } catch (const ramjet::Error& e) {
    if (queue_->stuck()) throw;
    throw ramjet::Error(e.status(), std::string("mpi strategy: starting MPI: ") + e.what());
  }
  rank_ = comm->rank;
  world_size_ = comm->size;
  initialized_here_ = *initialized_here;
  comm->watchdog = std::make_shared<Watchdog>(
      settings_.timeout, [who = who(), timeout = settings_.timeout, multiple = comm->thread_multiple](const std::string& what) {
        ramjet::log(RAMJET_LOG_ERROR, "mpi",
                    who + ": " + what + " failed: timed out after " + seconds_text(timeout) +
                        " (train.strategy.timeout_s) waiting for a peer, which stalled, died or runs another step; "
                        "aborting the job");
        // MPI_Abort ends every rank through mpirun. Without MPI_THREAD_MULTIPLE it may not be called from here:
        // then this rank ends non-zero, and mpirun ends the others for that.
        if (multiple) MPI_Abort(MPI_COMM_WORLD, 1);
        std::_Exit(1);
      });
  comm_ = comm;
}

MpiStrategy::~MpiStrategy() {
  bool failed;
  {
    std::lock_guard lock(first_failure_->mutex);
    failed = !first_failure_->message.empty();
  }
  if (queue_ && !queue_->stuck() && !failed && comm_) {
    // Every rank took part in the same collectives, so every rank gets here and MPI_Finalize's own wait ends.
    const uint64_t done = queue_->submit([comm = comm_, finalize = initialized_here_] {
      MPI_Comm_free(&comm->comm);
      if (finalize) MPI_Finalize();
    });
    try {
      queue_->wait(done, settings_.timeout);
    } catch (...) {
      // Nothing to report from a destructor: the run's outcome was settled before.
    }
  }
  queue_.reset();
}

uint64_t MpiStrategy::submit(const std::string& what, std::function<void()> work) {
  {
    std::lock_guard lock(first_failure_->mutex);
    if (!first_failure_->message.empty())
      throw ramjet::Error(kPeerFailure, who() + ": " + what + " not started: an earlier collective failed: " +
                                            first_failure_->message);
  }
  ++collectives_;
  return queue_->submit([failure = first_failure_, who = who(), what, work = std::move(work)] {
    {
      std::lock_guard lock(failure->mutex);
      if (!failure->message.empty())
        throw ramjet::Error(kPeerFailure, who + ": " + what + " not started: an earlier collective failed: " +
                                              failure->message);
    }
    try {
      work();
    } catch (const ramjet::Error& e) {
      const std::string message = who + ": " + e.what();
      std::lock_guard lock(failure->mutex);
      if (failure->message.empty()) failure->message = message;
      throw ramjet::Error(e.status(), message);
    }
  });
}

void MpiStrategy::wait(uint64_t handle) {
  if (!queue_->knows(handle))
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT,
                        "mpi strategy: all_reduce_wait: handle " + std::to_string(handle) + " is not in flight");
  // The communication thread gives up on its own at the deadline; this limit only guards against MPI itself
  // never returning from a call.
  if (queue_->wait(handle, settings_.timeout + 10s)) return;
  const std::string message = who() + ": a collective did not return within " +
                              seconds_text(settings_.timeout + 10s) + " (train.strategy.timeout_s plus 10 s)";
  std::lock_guard lock(first_failure_->mutex);
  if (first_failure_->message.empty()) first_failure_->message = message;
  throw ramjet::Error(kPeerFailure, message);
}

uint64_t MpiStrategy::all_reduce_start(DLTensor& t, const ramjet_collective_args& args) {
  const std::string what = "all_reduce #" + std::to_string(collectives_ + 1) + " of " + shape_text(t);
  require_dense_cpu(t, who() + ": " + what);
  const ramjet_reduce_op op = args.op;
  if (op != RAMJET_REDUCE_SUM && op != RAMJET_REDUCE_MEAN && op != RAMJET_REDUCE_MAX && op != RAMJET_REDUCE_MIN)
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, who() + ": " + what + ": unknown reduce op " + std::to_string(op));
  const bool is_float = t.dtype.code == kDLFloat && t.dtype.lanes == 1 && (t.dtype.bits == 32 || t.dtype.bits == 64);
  const bool is_int = t.dtype.code == kDLInt && t.dtype.lanes == 1 && (t.dtype.bits == 32 || t.dtype.bits == 64);
  if (!is_float && !(is_int && op != RAMJET_REDUCE_MEAN))
    throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, who() + ": " + what + ": all-reduce takes float32 or float64 "
                                                "(and int32 or int64 except for a mean)");
  const int64_t n = ramjet::element_count(t);
  char* data = static_cast<char*>(t.data) + t.byte_offset;
  const DLDataType dtype = t.dtype;
  const size_t element_bytes = ramjet::dtype_bytes(dtype);
  return submit(what, [comm = comm_, what, data, n, dtype, element_bytes, op] {
    if (comm->size == 1 || n == 0) return;  // one rank: its values are already the result
    for (int64_t done = 0; done < n; done += kMaxCount) {
      const int count = static_cast<int>(std::min(kMaxCount, n - done));
      char* part = data + done * static_cast<int64_t>(element_bytes);
      comm->collective(what, [&] {
        return MPI_Allreduce(MPI_IN_PLACE, part, count, mpi_type(dtype), mpi_op(op), comm->comm);
      });
    }
    if (op == RAMJET_REDUCE_MEAN) {
      if (dtype.bits == 32) divide<float>(data, n, comm->size);
      else divide<double>(data, n, comm->size);
    }
  });
}

void MpiStrategy::all_reduce_wait(uint64_t handle) { wait(handle); }

void MpiStrategy::all_reduce(DLTensor& t, const ramjet_collective_args& args) { wait(all_reduce_start(t, args)); }

void MpiStrategy::broadcast(DLTensor& t, const ramjet_collective_args& args) {
  const std::string what = "broadcast #" + std::to_string(collectives_ + 1) + " of " + shape_text(t) +
                           " from rank " + std::to_string(args.root);
  require_dense_cpu(t, who() + ": " + what);
  if (args.root < 0 || args.root >= world_size_)
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, who() + ": " + what + ": no such rank (world size " +
                                                         std::to_string(world_size_) + ")");
  const int64_t bytes = ramjet::element_count(t) * static_cast<int64_t>(ramjet::dtype_bytes(t.dtype));
  char* data = static_cast<char*>(t.data) + t.byte_offset;
  const int root = args.root;
  wait(submit(what, [comm = comm_, what, data, bytes, root] {
    if (comm->size == 1) return;
    for (int64_t done = 0; done < bytes; done += kMaxCount) {
      const int count = static_cast<int>(std::min(kMaxCount, bytes - done));
      comm->collective(what, [&] { return MPI_Bcast(data + done, count, MPI_BYTE, root, comm->comm); });
    }
  }));
}

void MpiStrategy::barrier() {
  const std::string what = "barrier #" + std::to_string(collectives_ + 1);
  wait(submit(what, [comm = comm_, what] {
    if (comm->size == 1) return;
    comm->collective(what, [&] { return MPI_Barrier(comm->comm); });
  }));
}

}  // namespace ramjet_mpi
