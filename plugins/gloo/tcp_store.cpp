#include "tcp_store.hpp"

#include "gloo_settings.hpp"

#include <ramjet/sdk/error.hpp>

#include <poll.h>
#include <sys/socket.h>

#include <cstdint>

namespace ramjet_gloo {
namespace {

// A request is one byte (kSet, kGet), a length-prefixed key and, for kSet, a length-prefixed value. kSet is
// answered with one byte; kGet with a byte saying whether the key is there and, if so, the length-prefixed value.
constexpr char kSet = 'S';
constexpr char kGet = 'G';
constexpr uint32_t kMaxBytes = 64u << 20;  // far above any gloo address table; below any accident

bool write_bytes(int fd, const std::string_view bytes) {
  const uint32_t n = static_cast<uint32_t>(bytes.size());
  return write_all(fd, &n, sizeof n) && write_all(fd, bytes.data(), bytes.size());
}

bool read_bytes(int fd, std::string& out) {
  uint32_t n = 0;
  if (!read_all(fd, &n, sizeof n) || n > kMaxBytes) return false;
  out.resize(n);
  return read_all(fd, out.data(), n);
}

}  // namespace

TcpStoreServer::TcpStoreServer(int port) : listener_(listen_on(port, "gloo rendezvous store (rank 0, master_port)")) {
  acceptor_ = std::thread([this] { accept_loop(); });
}

TcpStoreServer::~TcpStoreServer() {
  stopping_ = true;
  acceptor_.join();
  {
    std::lock_guard lock(mutex_);
    for (int fd : clients_) ::shutdown(fd, SHUT_RDWR);
  }
  for (auto& t : threads_) t.join();
}

void TcpStoreServer::accept_loop() {
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

void TcpStoreServer::serve(int fd) {
  Socket owned(fd);
  for (;;) {
    char op = 0;
    std::string key, value;
    if (!read_all(fd, &op, 1) || !read_bytes(fd, key)) break;
    if (op == kSet) {
      if (!read_bytes(fd, value)) break;
      {
        std::lock_guard lock(mutex_);
        values_[key].assign(value.begin(), value.end());
      }
      const char ok = 1;
      if (!write_all(fd, &ok, 1)) break;
    } else if (op == kGet) {
      bool found = false;
      {
        std::lock_guard lock(mutex_);
        if (auto it = values_.find(key); it != values_.end()) found = true, value.assign(it->second.begin(), it->second.end());
      }
      const char flag = found ? 1 : 0;
      if (!write_all(fd, &flag, 1) || (found && !write_bytes(fd, value))) break;
    } else {
      break;  // not a ramjet rank: drop the connection
    }
  }
  std::lock_guard lock(mutex_);
  std::erase(clients_, fd);
}

TcpStore::TcpStore(const std::string& host, int port, std::chrono::milliseconds timeout)
    : host_(host), port_(port), timeout_(timeout),
      socket_(connect_until(host, port, std::chrono::steady_clock::now() + timeout,
                            "gloo rendezvous store (rank 0 serves it at master_addr:master_port)")) {}

std::string TcpStore::where() const { return host_ + ":" + std::to_string(port_); }

void TcpStore::set(const std::string& key, const std::vector<char>& data) {
  std::lock_guard lock(mutex_);
  char ok = 0;
  if (!write_all(socket_.fd(), &kSet, 1) || !write_bytes(socket_.fd(), key) ||
      !write_bytes(socket_.fd(), std::string_view(data.data(), data.size())) || !read_all(socket_.fd(), &ok, 1))
    throw ramjet::Error(kPeerFailure, "gloo rendezvous store at " + where() + ": connection lost (did rank 0 exit?)");
}

bool TcpStore::try_get(const std::string& key, std::vector<char>* out) {
  std::lock_guard lock(mutex_);
  char found = 0;
  if (!write_all(socket_.fd(), &kGet, 1) || !write_bytes(socket_.fd(), key) || !read_all(socket_.fd(), &found, 1))
    throw ramjet::Error(kPeerFailure, "gloo rendezvous store at " + where() + ": connection lost (did rank 0 exit?)");
  if (!found) return false;
  std::string value;
  if (!read_bytes(socket_.fd(), value))
    throw ramjet::Error(kPeerFailure, "gloo rendezvous store at " + where() + ": connection lost (did rank 0 exit?)");
  if (out) out->assign(value.begin(), value.end());
  return true;
}

std::vector<char> TcpStore::get(const std::string& key) {
  wait({key}, timeout_);
  std::vector<char> out;
  try_get(key, &out);
  return out;
}

void TcpStore::wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const auto& key : keys) {
    while (!try_get(key, nullptr)) {
      if (std::chrono::steady_clock::now() >= deadline)
        throw ramjet::Error(kPeerFailure, "gloo rendezvous store at " + where() + ": key '" + key +
                                               "' did not appear within " + seconds_text(timeout) +
                                               " (a rank did not start, or joined another job)");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }
}

}  // namespace ramjet_gloo
