// Small blocking-socket helpers for the rendezvous store: whole reads and writes, connecting with retries until a
// deadline, and the local address a route to some host leaves from.
#pragma once

#include <ramjet/abi.h>

#include <chrono>
#include <cstddef>
#include <string>

namespace ramjet_gloo {

// The status of a failed rendezvous or collective: a runtime failure (exit 1), not bad input. The ABI has no status
// for a lost peer yet; RAMJET_ERR_DEVICE ("the accelerator or its runtime failed") is the nearest, and the host
// treats it as a runtime failure.
inline constexpr ramjet_status kPeerFailure = RAMJET_ERR_DEVICE;

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
  int release() { const int fd = fd_; fd_ = -1; return fd; }
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

}  // namespace ramjet_gloo
