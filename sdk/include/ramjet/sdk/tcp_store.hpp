// The rendezvous store strategies share: rank 0 serves a small key-value map over TCP at master_port, and every
// rank (rank 0 too) reaches it as a client with set/get/wait, each wait limited by a timeout. It carries only the
// rendezvous (addresses, a communicator's id), never tensors. (Gloo 0.5, Debian's libgloo-dev, ships only file,
// in-process and Redis stores, and PyTorch's TCPStore lives in PyTorch: this is the small piece ramjet adds.)
#ifndef RAMJET_SDK_TCP_STORE_HPP
#define RAMJET_SDK_TCP_STORE_HPP

#include <ramjet/sdk/error.hpp>
#include <ramjet/sdk/rendezvous.hpp>
#include <ramjet/sdk/socket_io.hpp>

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace ramjet::net {

// Rank 0's side: accepts connections and answers set/get requests until destroyed. `name` ("gloo rendezvous
// store") goes into its errors.
class TcpStoreServer {
 public:
  TcpStoreServer(int port, const std::string& name);
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

// Every rank's side. Waits poll the server until the keys are there or the timeout passes. Thread-safe.
class TcpStoreClient {
 public:
  TcpStoreClient(const std::string& host, int port, std::chrono::milliseconds timeout, std::string name);
  void set(const std::string& key, const std::vector<char>& data);
  // Waits (up to the timeout) for the key, then reads it.
  std::vector<char> get(const std::string& key);
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout);
  std::chrono::milliseconds timeout() const { return timeout_; }

 private:
  bool try_get(const std::string& key, std::vector<char>* out);
  std::string where() const;

  std::string name_;
  std::string host_;
  int port_;
  std::chrono::milliseconds timeout_;
  std::mutex mutex_;
  Socket socket_;
};

namespace detail {

// A request is one byte (kSet, kGet), a length-prefixed key and, for kSet, a length-prefixed value. kSet is
// answered with one byte; kGet with a byte saying whether the key is there and, if so, the length-prefixed value.
inline constexpr char kSet = 'S';
inline constexpr char kGet = 'G';
inline constexpr uint32_t kMaxBytes = 64u << 20;  // far above any address table; below any accident

inline bool write_bytes(int fd, const std::string_view bytes) {
  const uint32_t n = static_cast<uint32_t>(bytes.size());
  return write_all(fd, &n, sizeof n) && write_all(fd, bytes.data(), bytes.size());
}

inline bool read_bytes(int fd, std::string& out) {
  uint32_t n = 0;
  if (!read_all(fd, &n, sizeof n) || n > kMaxBytes) return false;
  out.resize(n);
  return read_all(fd, out.data(), n);
}

}  // namespace detail

inline TcpStoreServer::TcpStoreServer(int port, const std::string& name)
    : listener_(listen_on(port, name + " (rank 0, master_port)")) {
  acceptor_ = std::thread([this] { accept_loop(); });
}

inline TcpStoreServer::~TcpStoreServer() {
  stopping_ = true;
  acceptor_.join();
  {
    std::lock_guard lock(mutex_);
    for (int fd : clients_) ::shutdown(fd, SHUT_RDWR);
  }
  for (auto& t : threads_) t.join();
}

inline void TcpStoreServer::accept_loop() {
  while (!stopping_) {
    pollfd p{listener_.fd(), POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    const int fd = ::accept4(listener_.fd(), nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::lock_guard lock(mutex_);
    clients_.push_back(fd);
    threads_.emplace_back([this, fd] { serve(fd); });
  }
}

inline void TcpStoreServer::serve(int fd) {
  Socket owned(fd);
  for (;;) {
    char op = 0;
    std::string key, value;
    if (!read_all(fd, &op, 1) || !detail::read_bytes(fd, key)) break;
    if (op == detail::kSet) {
      if (!detail::read_bytes(fd, value)) break;
      {
        std::lock_guard lock(mutex_);
        values_[key].assign(value.begin(), value.end());
      }
      const char ok = 1;
      if (!write_all(fd, &ok, 1)) break;
    } else if (op == detail::kGet) {
      bool found = false;
      {
        std::lock_guard lock(mutex_);
        if (auto it = values_.find(key); it != values_.end()) found = true, value.assign(it->second.begin(), it->second.end());
      }
      const char flag = found ? 1 : 0;
      if (!write_all(fd, &flag, 1) || (found && !detail::write_bytes(fd, value))) break;
    } else {
      break;  // not a ramjet rank: drop the connection
    }
  }
  std::lock_guard lock(mutex_);
  std::erase(clients_, fd);
}

inline TcpStoreClient::TcpStoreClient(const std::string& host, int port, std::chrono::milliseconds timeout, std::string name)
    : name_(std::move(name)), host_(host), port_(port), timeout_(timeout),
      socket_(connect_until(host, port, std::chrono::steady_clock::now() + timeout,
                            name_ + " (rank 0 serves it at master_addr:master_port)")) {}

inline std::string TcpStoreClient::where() const { return name_ + " at " + host_ + ":" + std::to_string(port_); }

inline void TcpStoreClient::set(const std::string& key, const std::vector<char>& data) {
  std::lock_guard lock(mutex_);
  char ok = 0;
  if (!write_all(socket_.fd(), &detail::kSet, 1) || !detail::write_bytes(socket_.fd(), key) ||
      !detail::write_bytes(socket_.fd(), std::string_view(data.data(), data.size())) || !read_all(socket_.fd(), &ok, 1))
    throw ramjet::Error(kPeerFailure, where() + ": connection lost (did rank 0 exit?)");
}

inline bool TcpStoreClient::try_get(const std::string& key, std::vector<char>* out) {
  std::lock_guard lock(mutex_);
  char found = 0;
  if (!write_all(socket_.fd(), &detail::kGet, 1) || !detail::write_bytes(socket_.fd(), key) || !read_all(socket_.fd(), &found, 1))
    throw ramjet::Error(kPeerFailure, where() + ": connection lost (did rank 0 exit?)");
  if (!found) return false;
  std::string value;
  if (!detail::read_bytes(socket_.fd(), value))
    throw ramjet::Error(kPeerFailure, where() + ": connection lost (did rank 0 exit?)");
  if (out) out->assign(value.begin(), value.end());
  return true;
}

inline std::vector<char> TcpStoreClient::get(const std::string& key) {
  wait({key}, timeout_);
  std::vector<char> out;
  try_get(key, &out);
  return out;
}

inline void TcpStoreClient::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const auto& key : keys) {
    while (!try_get(key, nullptr)) {
      if (std::chrono::steady_clock::now() >= deadline)
        throw ramjet::Error(kPeerFailure, where() + ": key '" + key +
                                               "' did not appear within " + seconds_text(timeout) +
                                               " (a rank did not start, or joined another job)");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

}  // namespace ramjet::net

#endif  // RAMJET_SDK_TCP_STORE_HPP
