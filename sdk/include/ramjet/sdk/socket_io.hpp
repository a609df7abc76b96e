// Small blocking-socket helpers for a strategy's rendezvous (tcp_store.hpp): whole reads and writes, connecting
// with retries until a deadline, listening, and the local address a route to some host leaves from. POSIX only.
#ifndef RAMJET_SDK_SOCKET_IO_HPP
#define RAMJET_SDK_SOCKET_IO_HPP

#include <ramjet/abi.h>
#include <ramjet/sdk/error.hpp>
#include <ramjet/sdk/rendezvous.hpp>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <string>
#include <thread>

namespace ramjet::net {

using Deadline = std::chrono::steady_clock::time_point;

// An open file descriptor, closed once.
class Socket {
 public:
  Socket() = default;
  explicit Socket(int fd) : fd_(fd) {}
  Socket(Socket&& other) noexcept : fd_(other.release()) {}
  Socket& operator=(Socket&& other) noexcept;
  ~Socket();
  int fd() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// False when the peer closed the connection or the socket failed.
bool write_all(int fd, const void* data, size_t size);
bool read_all(int fd, void* data, size_t size);
// Connects to host:port, retrying (the server may not listen yet) until `deadline`. Throws ramjet::Error with
// `what` and the last reason on failure.
Socket connect_until(const std::string& host, int port, Deadline deadline, const std::string& what);
// Listens on every address at `port`. Throws ramjet::Error naming `what` when the port cannot be had.
Socket listen_on(int port, const std::string& what);
// The address of this machine's interface that traffic to `host` leaves from (a UDP connect sends nothing);
// empty when `host` does not resolve or has no route.
std::string local_address_towards(const std::string& host);

inline Socket& Socket::operator=(Socket&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = other.release();
  }
  return *this;
}

inline Socket::~Socket() {
  if (fd_ >= 0) ::close(fd_);
}

inline bool write_all(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

inline bool read_all(int fd, void* data, size_t size) {
  char* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t n = ::recv(fd, p, size, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

inline Socket connect_until(const std::string& host, int port, Deadline deadline, const std::string& what) {
  std::string reason = "no attempt";
  const std::string service = std::to_string(port);
  do {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found);
    if (rc != 0) {
      reason = std::string("cannot resolve '") + host + "': " + gai_strerror(rc);
    } else {
      for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
        Socket s(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol));
        if (!s) continue;
        if (::connect(s.fd(), a->ai_addr, a->ai_addrlen) == 0) {
          const int one = 1;
          ::setsockopt(s.fd(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          ::freeaddrinfo(found);
          return s;
        }
        reason = std::strerror(errno);
      }
      ::freeaddrinfo(found);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  } while (std::chrono::steady_clock::now() < deadline);
  throw ramjet::Error(kPeerFailure, what + ": cannot connect to " + host + ":" + service + " (" + reason + ")");
}

inline Socket listen_on(int port, const std::string& what) {
  Socket s(::socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0));
  bool v6 = static_cast<bool>(s);
  if (!v6) s = Socket(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!s) throw ramjet::Error(kPeerFailure, what + ": cannot open a socket: " + std::strerror(errno));
  const int one = 1, zero = 0;
  ::setsockopt(s.fd(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  int rc;
  if (v6) {
    ::setsockopt(s.fd(), IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);  // IPv4 peers too
    sockaddr_in6 a{};
    a.sin6_family = AF_INET6;
    a.sin6_addr = in6addr_any;
    a.sin6_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(s.fd(), reinterpret_cast<sockaddr*>(&a), sizeof a);
  } else {
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = htons(static_cast<uint16_t>(port));
    rc = ::bind(s.fd(), reinterpret_cast<sockaddr*>(&a), sizeof a);
  }
  if (rc != 0 || ::listen(s.fd(), 128) != 0)
    throw ramjet::Error(kPeerFailure, what + ": cannot listen on port " + std::to_string(port) + ": " +
                                           std::strerror(errno));
  return s;
}

inline std::string local_address_towards(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_DGRAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), "9", &hints, &found) != 0) return "";
  std::string out;
  for (addrinfo* a = found; a != nullptr && out.empty(); a = a->ai_next) {
    Socket s(::socket(a->ai_family, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (!s || ::connect(s.fd(), a->ai_addr, a->ai_addrlen) != 0) continue;
    sockaddr_storage local{};
    socklen_t size = sizeof local;
    if (::getsockname(s.fd(), reinterpret_cast<sockaddr*>(&local), &size) != 0) continue;
    char text[INET6_ADDRSTRLEN] = {};
    const void* where = local.ss_family == AF_INET
                            ? static_cast<const void*>(&reinterpret_cast<sockaddr_in*>(&local)->sin_addr)
                            : static_cast<const void*>(&reinterpret_cast<sockaddr_in6*>(&local)->sin6_addr);
    if (::inet_ntop(local.ss_family, where, text, sizeof text) != nullptr) out = text;
  }
  ::freeaddrinfo(found);
  return out;
}

}  // namespace ramjet::net

#endif  // RAMJET_SDK_SOCKET_IO_HPP
