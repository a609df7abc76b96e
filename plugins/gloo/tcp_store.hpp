// The SDK's rendezvous store (ramjet/sdk/tcp_store.hpp) as a gloo::rendezvous::Store, the interface gloo's
// connectFullMesh reads addresses through.
#pragma once

#include <ramjet/sdk/tcp_store.hpp>

#include <gloo/rendezvous/store.h>

#include <chrono>
#include <string>
#include <vector>

namespace ramjet_gloo {

using ramjet::net::TcpStoreServer;

class TcpStore : public gloo::rendezvous::Store {
 public:
  TcpStore(const std::string& host, int port, std::chrono::milliseconds timeout)
      : client_(host, port, timeout, "gloo rendezvous store") {}
  void set(const std::string& key, const std::vector<char>& data) override { client_.set(key, data); }
  std::vector<char> get(const std::string& key) override { return client_.get(key); }
  void wait(const std::vector<std::string>& keys) override { client_.wait(keys, client_.timeout()); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override {
    client_.wait(keys, timeout);
  }

 private:
  ramjet::net::TcpStoreClient client_;
};

}  // namespace ramjet_gloo
