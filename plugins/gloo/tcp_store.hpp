// The rendezvous store for `rendezvous: "tcp"`: rank 0 serves a small key-value map over TCP at
// master_port, and every rank (rank 0 too) reaches it as a gloo::rendezvous::Store. Gloo 0.5 (Debian's
// libgloo-dev, 2022) ships only file, hash (in-process) and Redis stores; PyTorch's TCPStore lives in PyTorch, so
// this is the small piece ramjet adds. It carries only the rendezvous (each rank's gloo address), never tensors.
#pragma once

#include "socket_io.hpp"

#include <gloo/rendezvous/store.h>

#include <atomic>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace ramjet_gloo {

// Rank 0's side: accepts connections and answers set/get requests until destroyed.
class TcpStoreServer {
 public:
  explicit TcpStoreServer(int port);
  ~TcpStoreServer();
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

 private:
  void accept_loop();
  void serve(int fd);

  Socket listener_;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::map<std::string, std::vector<char>> values_;
  std::vector<int> clients_;  // open connections, shut down when stopping
  std::vector<std::thread> threads_;
  std::thread acceptor_;
};

// Every rank's side. Waits poll the server until the keys are there or the timeout passes.
class TcpStore : public gloo::rendezvous::Store {
 public:
  TcpStore(const std::string& host, int port, std::chrono::milliseconds timeout);
  void set(const std::string& key, const std::vector<char>& data) override;
  std::vector<char> get(const std::string& key) override;
  void wait(const std::vector<std::string>& keys) override { wait(keys, timeout_); }
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;

 private:
  bool try_get(const std::string& key, std::vector<char>* out);
  std::string where() const;

  std::string host_;
  int port_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  Socket socket_;
};

}  // namespace ramjet_gloo
