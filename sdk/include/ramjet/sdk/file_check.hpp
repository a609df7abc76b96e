// Checks, for a component's check_files (boundary.hpp), that the files a configuration names are there: a path
// field, or one that takes a path, a glob pattern or an array of them. `ramjet validate` then reports a missing
// file with its JSON pointer before anything runs, instead of the run failing when the source opens it.
#ifndef RAMJET_SDK_FILE_CHECK_HPP
#define RAMJET_SDK_FILE_CHECK_HPP

#include <ramjet/sdk/config.hpp>
#include <ramjet/sdk/fields.hpp>

#include <glob.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace ramjet {

enum class PathKind { kFile, kFolder };

// A problem at `pointer` unless `entry` (resolved against the manifest's folder) is an existing file or folder as
// `kind` asks; with `patterns`, an entry holding *, ? or [ must match at least one file instead.
inline void check_path(const Config& config, const std::string& entry, const std::string& pointer, PathKind kind,
                       bool patterns, Problems& problems) {
  namespace fs = std::filesystem;
  const fs::path path = config.resolve(entry);
  if (patterns && entry.find_first_of("*?[") != std::string::npos) {
    glob_t matches{};
    const int rc = glob(path.c_str(), 0, nullptr, &matches);
    const size_t count = rc == 0 ? matches.gl_pathc : 0;
    globfree(&matches);
    if (count == 0) problems.push_back({pointer, "the pattern " + path.string() + " matches no files"});
    return;
  }
  std::error_code ec;
  const bool exists = fs::exists(path, ec), is_folder = fs::is_directory(path, ec);
  if (kind == PathKind::kFile && fs::is_regular_file(path, ec)) return;
  if (kind == PathKind::kFolder && is_folder) return;
  std::string why = kind == PathKind::kFile ? "no such file" : "no such folder";
  if (exists) why = kind == PathKind::kFolder ? "is not a folder" : is_folder ? "is a folder, not a file" : "is not a regular file";
  problems.push_back({pointer, path.string() + ": " + why});
}

// The field `key` of the configuration, when present: a path (or, with `patterns`, a pattern), or an array of them.
inline void check_paths(const Config& config, const std::string& key, PathKind kind, bool patterns,
                        Problems& problems) {
  auto it = config.json().find(key);
  if (it == config.json().end()) return;
  const std::string pointer = "/" + pointer_token(key);
  if (it->is_string()) return check_path(config, it->get<std::string>(), pointer, kind, patterns, problems);
  if (!it->is_array()) return;
  for (size_t i = 0; i < it->size(); ++i)
    if ((*it)[i].is_string())
      check_path(config, (*it)[i].get<std::string>(), pointer + "/" + std::to_string(i), kind, patterns, problems);
}

}  // namespace ramjet

#endif  // RAMJET_SDK_FILE_CHECK_HPP
