// Files that appear whole or not at all: written to a temporary file in the same directory, flushed to disk,
// then renamed over the target (and the directory entry flushed too). A crash at any point leaves either the old
// file or the new one, never a torn one.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace ramjet::core {

class AtomicFile {
 public:
  explicit AtomicFile(std::filesystem::path path);  // creates the temporary file; throws InvalidInput
  ~AtomicFile();                                   // removes the temporary file unless committed
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void write(std::string_view bytes);
  void commit();  // fsync, rename, fsync the directory

 private:
  [[noreturn]] void fail(const char* step);
  std::filesystem::path path_, temp_;
  int fd_ = -1;
  bool committed_ = false;
};

// The whole of `text`, atomically.
void write_file_atomically(const std::filesystem::path& path, const std::string& text);

}  // namespace ramjet::core
