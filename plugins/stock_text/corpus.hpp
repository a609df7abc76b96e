// The files of a `text` source: paths and glob(3) patterns resolved against the manifest, and whole files read
// under a bound on their total size.
#pragma once

#include <ramjet/sdk.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace stock_text {

// The files of config["files"] (a path or pattern, or an array of them), in the order given, each pattern's
// matches sorted by name (byte order, whatever the locale). A pattern that matches nothing, or a path that does not
// exist, throws ramjet::Error naming its JSON pointer (".../files" or ".../files/<i>") and the pattern.
std::vector<std::filesystem::path> expand_files(const ramjet::Config& config);

// The whole of a regular file (a FIFO, device or directory is refused: it could block or never end); more than
// `limit` bytes throws ramjet::Error (INVALID_ARGUMENT) naming the file. Throws ramjet::Error (IO) when unreadable.
std::string read_whole_file(const std::filesystem::path& path, uint64_t limit);

}  // namespace stock_text
