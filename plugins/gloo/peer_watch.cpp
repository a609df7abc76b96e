#include "peer_watch.hpp"

#include <gloo/types.h>

#include <chrono>

namespace ramjet_gloo {
namespace {

// A slot none of gloo's collectives use (their prefixes are 0x01 to 0x08) and no rank ever sends to.
constexpr uint8_t kWatchSlotPrefix = 0xEE;

// Gloo takes a timeout on every wait and, when it passes, closes every connection. The watch's wait is meant to end
// only by the connection's error or the watch's own end, so its timeout is beyond any job's length.
constexpr std::chrono::milliseconds kBeyondAnyJob = std::chrono::hours(24 * 365 * 10);

}  // namespace

PeerWatch::PeerWatch(const std::shared_ptr<gloo::Context>& context) : context_(context) {
  const uint64_t slot = gloo::Slot::build(kWatchSlotPrefix, 0);
  for (int peer = 0; peer < context_->size; ++peer) {
    if (peer == context_->rank) continue;
    auto receive = context_->createUnboundBuffer(&never_filled_, 0);
    try {
      receive->recv(peer, slot);
    } catch (const std::exception& e) {
      record(peer, e.what());
      continue;
    }
    auto* waiting = receive.get();
    receives_.push_back(std::move(receive));
    threads_.emplace_back([this, waiting, peer] {
      try {
        waiting->waitRecv(nullptr, kBeyondAnyJob);  // false: aborted by the destructor
      } catch (const std::exception& e) {
        record(peer, e.what());
      }
    });
  }
}

PeerWatch::~PeerWatch() {
  for (auto& receive : receives_) receive->abortWaitRecv();
  for (auto& thread : threads_) thread.join();
}

std::optional<PeerWatch::Failure> PeerWatch::failed() const {
  std::lock_guard lock(mutex_);
  return first_;
}

void PeerWatch::record(int peer, const std::string& text) {
  std::lock_guard lock(mutex_);
  if (!first_) first_ = Failure{peer, text, std::chrono::steady_clock::now()};
}

}  // namespace ramjet_gloo
