#include "gloo_strategy.hpp"

#include "peer_watch.hpp"
#include "recursive_doubling.hpp"
#include "tcp_store.hpp"

#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <dlfcn.h>
#include <signal.h>

#include <filesystem>
#include <sstream>

namespace ramjet_gloo {

using ramjet::net::kPeerFailure;
namespace {

// How long a wait outlasts gloo's own timeout before ramjet gives up on gloo returning at all.
constexpr std::chrono::milliseconds kGrace{10000};

// How often a wait for a collective asks whether a peer's connection has failed.
constexpr std::chrono::milliseconds kPeerCheckInterval{100};

// How long a collective may still run after a peer's connection closed before the peer counts as lost. A peer that
// finished the job closes its connections as it exits, while this rank may still be combining what that peer sent
// in the last collective; that takes milliseconds, and the collective then ends on its own. Well under the
// launcher's 2 s for a rank to end on its own (core/run launch.cpp), so a surviving rank names the lost one itself.
constexpr std::chrono::milliseconds kAfterPeerClosed{500};

// Gloo's ring all-reduce moves a buffer in segments of at most this many bytes, each a round of messages and
// thread wake-ups; its default of 1 MiB makes a 46 MB bucket 92 rounds. 4 MiB measured 20 % faster here (35 against
// 43 ms for 46 MB between two local ranks, 56 against 72 ms with the CPUs busy); the scratch is two segments.
// Buffers up to this size go by recursive doubling instead (its scratch is one buffer).
constexpr size_t kRingSegmentBytes = size_t{4} << 20;

std::string shape_text(const DLTensor& t) {
  std::string out = ramjet::dtype_name(t.dtype) + "[";
  for (int i = 0; i < t.ndim; ++i) out += (i ? "," : "") + std::to_string(t.shape[i]);
  return out + "]";
}

int64_t elements_of(const DLTensor& t) {
  int64_t n = 1;
  for (int i = 0; i < t.ndim; ++i) n *= t.shape[i];
  return n;
}

// Collectives work on whole, dense CPU buffers in place.
void require_dense_cpu(const DLTensor& t, const std::string& what) {
  // Pinned host memory and managed memory (the cuda backend's gradients) are read and written in place like CPU
  // memory.
  if (t.device.device_type != kDLCPU && t.device.device_type != kDLCUDAHost && t.device.device_type != kDLCUDAManaged)
    throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, "gloo strategy: " + what + ": the tensor is not in CPU memory");
  if (t.strides != nullptr) {
    int64_t expected = 1;
    for (int i = t.ndim - 1; i >= 0; --i) {
      if (t.shape[i] != 1 && t.strides[i] != expected)
        throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, "gloo strategy: " + what + ": the tensor is not contiguous");
      expected *= t.shape[i];
    }
  }
  if (t.data == nullptr && elements_of(t) > 0)
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "gloo strategy: " + what + ": the tensor has no data");
}

template <class T>
gloo::AllreduceOptions::Func reduce_function(ramjet_reduce_op op) {
  switch (op) {
    case RAMJET_REDUCE_MAX: return [](void* c, const void* a, const void* b, size_t n) { gloo::max<T>(c, a, b, n); };
    case RAMJET_REDUCE_MIN: return [](void* c, const void* a, const void* b, size_t n) { gloo::min<T>(c, a, b, n); };
    default: return [](void* c, const void* a, const void* b, size_t n) { gloo::sum<T>(c, a, b, n); };
  }
}

// Small buffers among a power-of-two number of ranks by recursive doubling, the rest by gloo's ring.
template <class T>
void all_reduce_typed(const std::shared_ptr<gloo::Context>& context, T* data, size_t n, ramjet_reduce_op op,
                      uint32_t tag, std::chrono::milliseconds timeout, std::vector<unsigned char>& scratch) {
  if (n * sizeof(T) <= kRingSegmentBytes && is_power_of_two(context->size)) {
    recursive_doubling_all_reduce(*context, data, n, reduce_function<T>(op), tag, timeout, scratch);
  } else {
    gloo::AllreduceOptions opts(context);
    opts.setOutput(data, n);  // in place: the output is the input too
    opts.setReduceFunction(reduce_function<T>(op));
    opts.setTag(tag);
    opts.setTimeout(timeout);
    opts.setMaxSegmentSize(kRingSegmentBytes);
    gloo::allreduce(opts);
  }
  if (op == RAMJET_REDUCE_MEAN) {
    const T size = static_cast<T>(context->size);
    for (size_t i = 0; i < n; ++i) data[i] /= size;
  }
}

// Gloo's messages begin with "[file:line] "; the reader wants what happened.
std::string without_source_location(std::string text) {
  if (!text.empty() && text.front() == '[')
    if (const size_t end = text.find("] "); end != std::string::npos) text.erase(0, end + 2);
  return text;
}

bool mentions(const std::string& text, std::initializer_list<const char*> words) {
  for (const char* w : words)
    if (text.find(w) != std::string::npos) return true;
  return false;
}

// A thread left inside gloo must never find its code unmapped: keep libgloo and this plugin loaded for good.
void pin_loaded_code() {
  Dl_info self{};
  if (dladdr(reinterpret_cast<void*>(&pin_loaded_code), &self) != 0 && self.dli_fname != nullptr)
    if (void* h = dlopen(self.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) dlclose(h);
  if (void* h = dlopen("libgloo.so.0", RTLD_NOW | RTLD_NOLOAD | RTLD_NODELETE)) dlclose(h);
}

std::string join(const std::vector<std::string>& parts) {
  std::string out;
  for (const auto& p : parts) out += p + "\n";
  return out;
}

std::vector<std::string> split_lines(const std::vector<char>& bytes) {
  std::vector<std::string> out;
  std::istringstream in(std::string(bytes.begin(), bytes.end()));
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

// Gloo's TCP pairs write with writev(), which raises SIGPIPE when the peer has died; its default action ends this
// process at once (exit 141), before gloo can report the lost rank, so a surviving rank would vanish instead of
// naming the failure. Python, the usual host of gloo (PyTorch), ignores SIGPIPE from start-up; a host that installed
// its own handler keeps it.
void ignore_sigpipe_unless_handled() {
  struct sigaction current {};
  if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) ::signal(SIGPIPE, SIG_IGN);
}

}  // namespace

GlooStrategy::GlooStrategy(const ramjet::Config& config) : settings_(Settings::read(config)) {
  ignore_sigpipe_unless_handled();
  identity_->rank = settings_.rank;
  identity_->world_size = settings_.world_size;
  identity_->timeout = settings_.timeout;
  // Every thread this constructor starts (gloo's transport loop, the peer watch, the collective queue, and rank 0's
  // store server) inherits it.
  const ramjet::RaisedPriority raised(settings_.priority_boost);
  if (!raised.why_not().empty())
    ramjet::log(RAMJET_LOG_DEBUG, "gloo", "the transport threads run at the process's priority: " + raised.why_not() +
                                             " (train.strategy.priority_boost)");
  if (settings_.world_size > 1) connect();
  queue_.emplace();
}

GlooStrategy::~GlooStrategy() {
  const bool stuck = queue_ && queue_->stuck();
  queue_.reset();
  bool failed;
  {
    std::lock_guard lock(first_failure_->mutex);
    failed = !first_failure_->message.empty();
  }
  if (!stuck && !failed && settings_.rendezvous == "file" && store_) {
    // Every rank is past the rendezvous (they all took part in the same collectives): the keys are spent. Removing
    // them keeps the directory usable for the next job, which would otherwise read this one's addresses.
    if (auto* files = dynamic_cast<gloo::rendezvous::FileStore*>(store_.get()))
      for (const auto& path : files->getAllKeyFilePaths()) std::filesystem::remove(path, ignored_error_);
  }
  if (stuck) {
    // The queue thread is still inside gloo, using the context: leave both to the process's exit (it is on its way
    // out with the error) rather than free what that thread still reads.
    pin_loaded_code();
    new std::shared_ptr<gloo::Context>(std::move(context_));  // intentionally never freed
  }
}

void GlooStrategy::connect() {
  const std::string who = "gloo strategy, rank " + std::to_string(settings_.rank) + " of " +
                          std::to_string(settings_.world_size);
  try {
    if (settings_.rendezvous == "file") {
      std::filesystem::create_directories(settings_.dir);
      store_ = std::make_unique<gloo::rendezvous::FileStore>(settings_.dir);
    } else {
      if (settings_.rank == 0) server_ = std::make_unique<TcpStoreServer>(settings_.master_port, "gloo rendezvous store");
      store_ = std::make_unique<TcpStore>(settings_.master_addr, settings_.master_port, settings_.timeout);
    }
    gloo::transport::tcp::attr attr;
    if (!settings_.interface.empty()) attr.iface = settings_.interface;
    else if (!settings_.hostname.empty()) attr.hostname = settings_.hostname;
    else if (!settings_.master_addr.empty()) attr.hostname = ramjet::net::local_address_towards(settings_.master_addr);
    auto device = gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<gloo::rendezvous::Context>(settings_.rank, settings_.world_size);
    context->setTimeout(settings_.timeout);
    context->connectFullMesh(*store_, device);
    context_ = std::move(context);
    watch_ = std::make_unique<PeerWatch>(context_);
    publish_pair_addresses();
  } catch (const ramjet::Error& e) {
    throw ramjet::Error(e.status(), who + ": rendezvous failed: " + e.what());
  } catch (const std::exception& e) {
    const std::string where = settings_.rendezvous == "file" ? "the directory " + settings_.dir
                                                             : settings_.master_addr + ":" +
                                                                   std::to_string(settings_.master_port);
    throw ramjet::Error(kPeerFailure, who + ": rendezvous through " + where + " failed within " +
                                           seconds_text(settings_.timeout) + ": " +
                                           without_source_location(e.what()));
  }
}

// Each rank's local address toward every peer, so a failure that names a socket address can name the rank.
void GlooStrategy::publish_pair_addresses() {
  std::vector<std::string> mine(static_cast<size_t>(settings_.world_size));
  for (int j = 0; j < settings_.world_size; ++j)
    if (j != settings_.rank) mine[static_cast<size_t>(j)] = context_->getPair(j)->address().str();
  const std::string key = "ramjet/pair_addresses/" + std::to_string(settings_.rank);
  const std::string text = join(mine);
  store_->set(key, std::vector<char>(text.begin(), text.end()));
  auto& table = identity_->pair_addresses;
  table.resize(static_cast<size_t>(settings_.world_size));
  for (int j = 0; j < settings_.world_size; ++j) {
    const std::string k = "ramjet/pair_addresses/" + std::to_string(j);
    store_->wait({k}, settings_.timeout);
    table[static_cast<size_t>(j)] = split_lines(store_->get(k));
  }
}

std::string GlooStrategy::Identity::peer_in(const std::string& gloo_text) const {
  if (world_size == 2) return "rank " + std::to_string(1 - rank);
  for (int j = 0; j < world_size && static_cast<size_t>(j) < pair_addresses.size(); ++j) {
    if (j == rank) continue;
    const auto& theirs = pair_addresses[static_cast<size_t>(j)];
    const size_t me = static_cast<size_t>(rank);
    if (me < theirs.size() && !theirs[me].empty() && gloo_text.find(theirs[me]) != std::string::npos)
      return "rank " + std::to_string(j);
  }
  return "";
}

std::string GlooStrategy::Identity::describe_failure(const std::string& what, const std::string& gloo_text,
                                                     int known_peer) const {
  const std::string text = without_source_location(gloo_text);
  const std::string peer = known_peer >= 0 ? "rank " + std::to_string(known_peer) : peer_in(text);
  std::string out = "gloo strategy, rank " + std::to_string(rank) + " of " + std::to_string(world_size) + ": " + what +
                    " failed: ";
  if (mentions(text, {"Timed out", "timed out", "Timeout", "timeout"})) {
    out += "timed out after " + seconds_text(timeout) + " (train.strategy.timeout_s) waiting for " +
           (peer.empty() ? "a peer" : peer) + ", which stalled or fell behind";
  } else if (mentions(text, {"closed", "reset", "Broken pipe", "EOF", "refused"})) {
    out += "lost " + (peer.empty() ? "a peer" : peer) + ": its connection closed (the process died or was killed)";
  } else {
    out += peer.empty() ? "communication failed" : "communication with " + peer + " failed";
  }
  return out + " [gloo: " + text + "]";
}

uint64_t GlooStrategy::submit(const std::string& what, std::function<void()> work) {
  {
    std::lock_guard lock(first_failure_->mutex);
    if (!first_failure_->message.empty())
      throw ramjet::Error(kPeerFailure, "gloo strategy, rank " + std::to_string(settings_.rank) + ": " + what +
                                             " not started: an earlier collective failed: " + first_failure_->message);
  }
  ++collectives_;
  auto failure = first_failure_;
  const uint64_t handle = queue_->submit([identity = identity_, what, work = std::move(work), failure] {
    {
      std::lock_guard lock(failure->mutex);
      if (!failure->message.empty())
        throw ramjet::Error(kPeerFailure, what + " not started: an earlier collective failed: " + failure->message);
    }
    try {
      work();
    } catch (const std::exception& e) {
      const std::string message = identity->describe_failure(what, e.what());
      std::lock_guard lock(failure->mutex);
      if (failure->message.empty()) failure->message = message;
      throw ramjet::Error(kPeerFailure, message);
    }
  });
  in_flight_[handle] = what;
  return handle;
}

void GlooStrategy::wait(uint64_t handle) {
  if (!queue_->knows(handle))
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT,
                        "gloo strategy: all_reduce_wait: handle " + std::to_string(handle) + " is not in flight");
  const auto node = in_flight_.extract(handle);
  const std::string what = node.empty() ? "a collective" : node.mapped();
  std::function<void()> check;
  if (watch_) {
    check = [&] {
      const auto failure = watch_->failed();
      if (!failure || std::chrono::steady_clock::now() - failure->at < kAfterPeerClosed) return;
      const std::string message = identity_->describe_failure(what, failure->text, failure->peer);
      std::lock_guard lock(first_failure_->mutex);
      if (first_failure_->message.empty()) first_failure_->message = message;
      throw ramjet::Error(kPeerFailure, message);
    };
  }
  if (queue_->wait(handle, settings_.timeout + kGrace, check, kPeerCheckInterval)) return;
  const std::string message = "gloo strategy, rank " + std::to_string(settings_.rank) + " of " +
                              std::to_string(settings_.world_size) + ": a collective did not return within " +
                              seconds_text(settings_.timeout + kGrace) + " (train.strategy.timeout_s plus " +
                              seconds_text(kGrace) + ")";
  std::lock_guard lock(first_failure_->mutex);
  if (first_failure_->message.empty()) first_failure_->message = message;
  throw ramjet::Error(kPeerFailure, message);
}

uint64_t GlooStrategy::all_reduce_start(DLTensor& t, const ramjet_collective_args& args) {
  const std::string what = "all_reduce #" + std::to_string(collectives_ + 1) + " of " + shape_text(t);
  require_dense_cpu(t, what);
  const ramjet_reduce_op op = args.op;
  if (op != RAMJET_REDUCE_SUM && op != RAMJET_REDUCE_MEAN && op != RAMJET_REDUCE_MAX && op != RAMJET_REDUCE_MIN)
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "gloo strategy: " + what + ": unknown reduce op " +
                                                         std::to_string(op));
  const bool is_float = t.dtype.code == kDLFloat && t.dtype.lanes == 1 && (t.dtype.bits == 32 || t.dtype.bits == 64);
  const bool is_int = t.dtype.code == kDLInt && t.dtype.lanes == 1 && (t.dtype.bits == 32 || t.dtype.bits == 64);
  if (!is_float && !(is_int && op != RAMJET_REDUCE_MEAN))
    throw ramjet::Error(RAMJET_ERR_UNSUPPORTED, "gloo strategy: " + what + ": all-reduce takes float32 or float64 "
                                                "(and int32 or int64 except for a mean)");
  const size_t n = static_cast<size_t>(elements_of(t));
  void* data = static_cast<char*>(t.data) + t.byte_offset;
  const DLDataType dtype = t.dtype;
  auto context = context_;
  const uint32_t tag = next_tag_++;
  const auto timeout = settings_.timeout;
  return submit(what, [=, scratch = scratch_] {
    if (!context || n == 0) return;  // one rank: its values are already the result
    auto& s = *scratch;
    if (dtype.code == kDLFloat && dtype.bits == 32) all_reduce_typed(context, static_cast<float*>(data), n, op, tag, timeout, s);
    else if (dtype.code == kDLFloat) all_reduce_typed(context, static_cast<double*>(data), n, op, tag, timeout, s);
    else if (dtype.bits == 32) all_reduce_typed(context, static_cast<int32_t*>(data), n, op, tag, timeout, s);
    else all_reduce_typed(context, static_cast<int64_t*>(data), n, op, tag, timeout, s);
  });
}

void GlooStrategy::all_reduce_wait(uint64_t handle) { wait(handle); }

void GlooStrategy::all_reduce(DLTensor& t, const ramjet_collective_args& args) { wait(all_reduce_start(t, args)); }

void GlooStrategy::broadcast(DLTensor& t, const ramjet_collective_args& args) {
  const std::string what = "broadcast #" + std::to_string(collectives_ + 1) + " of " + shape_text(t) +
                           " from rank " + std::to_string(args.root);
  require_dense_cpu(t, what);
  if (args.root < 0 || args.root >= settings_.world_size)
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, "gloo strategy: " + what + ": no such rank (world size " +
                                                         std::to_string(settings_.world_size) + ")");
  const size_t bytes = static_cast<size_t>(elements_of(t)) * ((t.dtype.bits * t.dtype.lanes + 7u) / 8u);
  auto* data = static_cast<uint8_t*>(t.data) + t.byte_offset;
  auto context = context_;
  const uint32_t tag = next_tag_++;
  const auto timeout = settings_.timeout;
  const int root = args.root;
  wait(submit(what, [=] {
    if (!context || bytes == 0) return;
    gloo::BroadcastOptions opts(context);
    opts.setOutput(data, bytes);
    opts.setRoot(root);
    opts.setTag(tag);
    opts.setTimeout(timeout);
    gloo::broadcast(opts);
  }));
}

void GlooStrategy::barrier() {
  const std::string what = "barrier #" + std::to_string(collectives_ + 1);
  auto context = context_;
  const uint32_t tag = next_tag_++;
  const auto timeout = settings_.timeout;
  wait(submit(what, [=] {
    if (!context) return;
    gloo::BarrierOptions opts(context);
    opts.setTag(tag);
    opts.setTimeout(timeout);
    gloo::barrier(opts);
  }));
}

}  // namespace ramjet_gloo
