// Files that appear whole or not at all, through the SDK's writer (sdk/include/ramjet/sdk/atomic_file.hpp: one
// implementation for the core and the plugins). Here a failed write is a RuntimeFailure (exit 1): the disk or the
// folder's permissions failed, not the user's input.
#pragma once

#include <ramjet/sdk/atomic_file.hpp>

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace ramjet::core {

class AtomicFile {
 public:
  explicit AtomicFile(const std::filesystem::path& path);  // creates the temporary file
  void write(std::string_view bytes);
  void commit();  // fsync, rename, fsync the directory

 private:
  std::unique_ptr<ramjet::AtomicFile> file_;  // removes the temporary file unless committed
};

// The whole of `text`, atomically.
void write_file_atomically(const std::filesystem::path& path, std::string_view text);

// Made ready before hours of work end in writing `path`: creates its folder, removes the temporaries that killed
// writers left for it (".<name>.tmp<digits>"), and tries a temporary of its own there. Returns why `path` cannot be
// written (it is a folder, the folder cannot be created or written), naming the path, or an empty string.
std::string prepare_destination(const std::filesystem::path& path);

// After a failed run: removes the folders prepare_destination created that are still empty, innermost first, so
// that a run that wrote nothing leaves nothing behind. A folder holding anything stays.
void remove_made_folders_left_empty();

}  // namespace ramjet::core
