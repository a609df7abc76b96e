// Knows when a rank's connection to a peer has failed, whatever the rank is waiting on. Gloo wakes a waiting
// receive when its connection breaks, but not a send still queued on it: a rank whose last step was a send to a
// peer that then died would wait out the whole timeout. So each connection carries one receive that is never
// answered (no rank sends to its slot), and a thread waits on it; the connection's error wakes that thread.
#pragma once

#include <gloo/context.h>
#include <gloo/transport/unbound_buffer.h>

#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace ramjet_gloo {

class PeerWatch {
 public:
  struct Failure {
    int peer;
    std::string text;  // gloo's words
    std::chrono::steady_clock::time_point at;
  };

  // Posts the receive on every connection of `context` (connected) and starts one thread per peer.
  explicit PeerWatch(const std::shared_ptr<gloo::Context>& context);
  // Ends the waits and joins the threads.
  ~PeerWatch();
  PeerWatch(const PeerWatch&) = delete;
  PeerWatch& operator=(const PeerWatch&) = delete;

  // The first connection that failed, if one has.
  std::optional<Failure> failed() const;

 private:
  void record(int peer, const std::string& text);

  std::shared_ptr<gloo::Context> context_;
  unsigned char never_filled_ = 0;
  std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> receives_;
  std::vector<std::thread> threads_;
  mutable std::mutex mutex_;
  std::optional<Failure> first_;
};

}  // namespace ramjet_gloo
