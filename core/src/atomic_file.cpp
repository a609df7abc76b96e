#include "ramjet/core/atomic_file.hpp"

#include "ramjet/core/failure.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

namespace ramjet::core {

AtomicFile::AtomicFile(std::filesystem::path path) : path_(std::move(path)) {
  const std::filesystem::path dir = path_.has_parent_path() ? path_.parent_path() : ".";
  std::random_device rd;
  temp_ = dir / ("." + path_.filename().string() + ".tmp" + std::to_string(rd()));
  fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd_ < 0) fail("create");
}

AtomicFile::~AtomicFile() {
  if (fd_ >= 0) ::close(fd_);
  if (!committed_) ::unlink(temp_.c_str());
}

void AtomicFile::fail(const char* step) {
  const std::string why = std::strerror(errno);
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(temp_.c_str());
  throw InvalidInput(path_.string() + ": cannot write (" + step + "): " + why);
}

void AtomicFile::write(std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write");
    done += static_cast<size_t>(n);
  }
}

void AtomicFile::commit() {
  if (::fsync(fd_) != 0) fail("fsync");
  if (::close(fd_) != 0) {
    fd_ = -1;
    fail("close");
  }
  fd_ = -1;
  if (::rename(temp_.c_str(), path_.c_str()) != 0) fail("rename");
  committed_ = true;
  // Make the rename itself durable.
  const std::filesystem::path dir = path_.has_parent_path() ? path_.parent_path() : ".";
  const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_file_atomically(const std::filesystem::path& path, const std::string& text) {
  AtomicFile file(path);
  file.write(text);
  file.commit();
}

}  // namespace ramjet::core
