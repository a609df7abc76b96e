// strategy "gloo": data-parallel collectives over Gloo's TCP transport (Debian's libgloo-dev). The ranks meet
// through a store (a directory, or rank 0's TCP store), connect a full mesh, and then run every collective on
// one queue thread in issue order with a timeout: a peer that dies or stalls becomes an error naming this rank,
// the peer when it can be told, and the collective — never a hang.
#pragma once

#include "gloo_settings.hpp"

#include <ramjet/sdk.hpp>

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <system_error>
#include <vector>

namespace gloo {
class Context;
namespace rendezvous {
class Store;
}
}  // namespace gloo

namespace ramjet::net {
class TcpStoreServer;
}  // namespace ramjet::net

namespace ramjet_gloo {

class PeerWatch;

class GlooStrategy {
 public:
  static ramjet::Fields fields() { return Settings::fields(); }
  static void check(const nlohmann::json& config, ramjet::Problems& problems) { Settings::check(config, problems); }

  explicit GlooStrategy(const ramjet::Config& config);
  ~GlooStrategy();

  int rank() const { return settings_.rank; }
  int world_size() const { return settings_.world_size; }
  void broadcast(DLTensor& tensor, const ramjet_collective_args& args);
  void all_reduce(DLTensor& tensor, const ramjet_collective_args& args);
  void barrier();
  uint64_t all_reduce_start(DLTensor& tensor, const ramjet_collective_args& args);
  void all_reduce_wait(uint64_t handle);

 private:
  void connect();
  void publish_pair_addresses();
  // Runs `work` (gloo calls) on the queue thread, translating gloo's failures into a message about `what`.
  uint64_t submit(const std::string& what, std::function<void()> work);
  void wait(uint64_t handle);

  Settings settings_;
  std::unique_ptr<ramjet::net::TcpStoreServer> server_;
  std::unique_ptr<gloo::rendezvous::Store> store_;
  std::shared_ptr<gloo::Context> context_;
  // What a failure message needs, shared with the queue thread (which may outlive this object when stuck).
  struct Identity {
    int rank = 0, world_size = 1;
    std::chrono::milliseconds timeout{0};
    std::vector<std::vector<std::string>> pair_addresses;  // [peer][rank]: the peer's local address toward rank
    // `peer` when the failing rank is known; otherwise it is read from gloo's text where possible.
    std::string describe_failure(const std::string& what, const std::string& gloo_text, int peer = -1) const;
    std::string peer_in(const std::string& gloo_text) const;
  };
  std::shared_ptr<Identity> identity_ = std::make_shared<Identity>();
  // The small all-reduces' scratch, used by the queue thread's jobs one at a time (shared: a job may outlive this).
  std::shared_ptr<std::vector<unsigned char>> scratch_ = std::make_shared<std::vector<unsigned char>>();
  std::optional<ramjet::CollectiveQueue> queue_;
  // The first failure, shared with the queue thread: once set, every later collective fails with it at once
  // instead of waiting out its own timeout on a mesh that is already broken.
  struct FirstFailure {
    std::mutex mutex;
    std::string message;
  };
  std::shared_ptr<FirstFailure> first_failure_ = std::make_shared<FirstFailure>();
  std::error_code ignored_error_;
  // What each collective still to be waited for is, for a failure found between its start and its end.
  std::map<uint64_t, std::string> in_flight_;
  // Gloo does not wake a wait for a send still queued on a connection that then breaks; a wait asks this instead.
  // Declared after context_: it ends first.
  std::unique_ptr<PeerWatch> watch_;
  uint32_t next_tag_ = 1;
  uint64_t collectives_ = 0;
};

}  // namespace ramjet_gloo
