#include "atomic_write.hpp"

#include <ramjet/sdk.hpp>

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <string>
#include <unistd.h>

namespace tflite_plugin {
namespace {

[[noreturn]] void io_error(const std::filesystem::path& path, const std::string& what, int error) {
  throw ramjet::Error(RAMJET_ERR_IO, path.string() + ": " + what + ": " + std::strerror(error));
}

// Closes the descriptor and removes the temporary file unless the write was committed.
class TempFile {
 public:
  explicit TempFile(std::filesystem::path path) : path_(std::move(path)) {
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) io_error(path_, "cannot create the file", errno);
  }
  ~TempFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(path_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;

  void write_all(std::string_view bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) io_error(path_, "cannot write", errno);
      done += static_cast<size_t>(n);
    }
    if (::fsync(fd_) != 0) io_error(path_, "cannot flush to disk", errno);
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) io_error(path_, "cannot close", errno);
  }
  void commit_as(const std::filesystem::path& target) {
    if (::rename(path_.c_str(), target.c_str()) != 0) io_error(target, "cannot rename " + path_.string() + " to it", errno);
    committed_ = true;
  }

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace

void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  std::filesystem::path temporary = path;
  temporary += ".tmp";
  {
    TempFile file(temporary);
    file.write_all(bytes);
    file.commit_as(path);
  }
  // The rename is durable only once the directory entry is on disk too; a failure here is not worth failing for.
  const std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  const int dir_fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir_fd >= 0) {
    ::fsync(dir_fd);
    ::close(dir_fd);
  }
}

}  // namespace tflite_plugin
