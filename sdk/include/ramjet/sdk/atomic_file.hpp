// Files that appear whole or not at all, for the core and for plugins alike (one implementation): the bytes go to
// a uniquely named temporary file beside the target (O_EXCL, so two writers never share one), are flushed to disk,
// and are renamed over the target; the directory entry is flushed too. A crash at any point leaves the old file or
// the new one, never a torn one; a failure removes the temporary file and leaves the target untouched. Leftover
// temporaries of killed processes are named ".<file>.tmp<random>".
#ifndef RAMJET_SDK_ATOMIC_FILE_HPP
#define RAMJET_SDK_ATOMIC_FILE_HPP

#include <ramjet/sdk/error.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <string_view>

namespace ramjet {

class AtomicFile {
 public:
  // Creates the temporary file. Throws ramjet::Error(RAMJET_ERR_IO) naming the target.
  explicit AtomicFile(std::filesystem::path path) : path_(std::move(path)) {
    const std::filesystem::path dir = directory();
    std::random_device random;
    for (int attempt = 0; attempt < 8 && fd_ < 0; ++attempt) {
      temp_ = dir / ("." + path_.filename().string() + ".tmp" + std::to_string(random()));
      fd_ = ::open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
      if (fd_ < 0 && errno != EEXIST) break;
    }
    if (fd_ < 0) fail("create");
  }
  // Removes the temporary file unless committed.
  ~AtomicFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_ && !temp_.empty()) ::unlink(temp_.c_str());
  }
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::string_view bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        if (n == 0) errno = ENOSPC;
        fail("write");
      }
      done += static_cast<size_t>(n);
    }
  }

  // fsync, rename over the target, fsync the directory.
  void commit() {
    if (::fsync(fd_) != 0) fail("fsync");
    const int fd = fd_;
    fd_ = -1;
    if (::close(fd) != 0) fail("close");
    if (::rename(temp_.c_str(), path_.c_str()) != 0) fail("rename");
    committed_ = true;
    const int dfd = ::open(directory().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
  }

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path directory() const { return path_.has_parent_path() ? path_.parent_path() : "."; }
  [[noreturn]] void fail(const char* step) {
    const std::string why = std::strerror(errno);
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    if (!temp_.empty()) ::unlink(temp_.c_str());
    throw Error(RAMJET_ERR_IO, path_.string() + ": cannot write (" + step + "): " + why);
  }

  std::filesystem::path path_, temp_;
  int fd_ = -1;
  bool committed_ = false;
};

// The whole of `bytes` at `path`, atomically. Throws ramjet::Error(RAMJET_ERR_IO) naming the path.
inline void write_file_atomically(const std::filesystem::path& path, std::string_view bytes) {
  AtomicFile file(path);
  file.write(bytes);
  file.commit();
}

}  // namespace ramjet

#endif  // RAMJET_SDK_ATOMIC_FILE_HPP
