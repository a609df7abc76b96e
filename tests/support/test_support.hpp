// Shared helpers for the tests: temporary directories, files, running commands, and the paths CMake hands in.
#pragma once

#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>
#include <vector>

namespace ramjet::test {

namespace fs = std::filesystem;

// A fresh directory under the system temp dir, removed with everything in it when the object dies.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const fs::path& path() const { return path_; }
  fs::path operator/(const std::string& name) const { return path_ / name; }

 private:
  fs::path path_;
};

void write_file(const fs::path& path, const std::string& bytes);
std::string read_file(const fs::path& path);

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr together
};
// Runs a shell command line; never throws for a non-zero exit.
CommandResult run(const std::string& command);
std::string quote(const std::string& s);

fs::path fixture_dir(const std::string& plugin);  // e.g. "c_plugin" -> <build>/tests/fixtures/c_plugin
fs::path fixture_library(const std::string& plugin);
fs::path stock_plugin_dir();
fs::path host_binary();
fs::path source_dir();
fs::path binary_dir();
std::vector<fs::path> shipped_plugins();

// A plugin manifest as JSON text.
nlohmann::json plugin_manifest(const std::string& name, const fs::path& library, const nlohmann::json& provides,
                               int abi_min = 1, int abi_max = 1);

// The Python of the tests' readers (LiteRT, TensorBoard): ${RAMJET_VENV:-$HOME/.cache/ramjet/venv}/bin/python, where
// `./dev test` installs them. It may be missing: a test that needs it skips, saying so.
fs::path venv_python();

// How many times `needle` occurs in `text`, without overlaps.
size_t count_occurrences(const std::string& text, const std::string& needle);

// Fashion-MNIST from Debian's dataset-fashion-mnist (./dev installs it).
fs::path fashion_mnist(const std::string& file);

}  // namespace ramjet::test
