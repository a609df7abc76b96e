// Where a piece of configuration came from, so every message names the file and the JSON pointer of the field.
#pragma once

#include <filesystem>
#include <string>

namespace ramjet::core {

// The pipeline manifest a configuration was read from.
struct Origin {
  std::filesystem::path file;

  // "file.json#/data/train/source"
  std::string where(const std::string& pointer) const { return file.string() + "#" + pointer; }
  // Relative paths in a manifest are relative to its folder.
  std::filesystem::path base_dir() const { return file.parent_path(); }
  std::filesystem::path resolve(const std::filesystem::path& p) const { return p.is_absolute() ? p : base_dir() / p; }
};

// One problem found in a manifest: the JSON pointer of the field and what is wrong with it.
struct Problem {
  std::string pointer;
  std::string message;
};

}  // namespace ramjet::core
