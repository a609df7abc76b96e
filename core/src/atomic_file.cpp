#include "ramjet/core/failure.hpp"
#include "ramjet/core/run.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <random>

namespace ramjet::core {

void write_file_atomically(const std::filesystem::path& path, const std::string& text) {
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : ".";
  std::random_device rd;
  const std::filesystem::path tmp = dir / ("." + path.filename().string() + ".tmp" + std::to_string(rd()));
  auto fail = [&](const char* step) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw InvalidInput(path.string() + ": cannot write (" + step + "): " + why);
  };
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail("open");
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      fail("write");
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0) {
    ::close(fd);
    fail("fsync");
  }
  if (::close(fd) != 0) fail("close");
  if (::rename(tmp.c_str(), path.c_str()) != 0) fail("rename");
  // Make the rename itself durable.
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace ramjet::core
