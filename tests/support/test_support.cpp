#include "test_support.hpp"

#include <array>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <sys/wait.h>

namespace ramjet::test {

TempDir::TempDir() {
  std::random_device rd;
  path_ = fs::temp_directory_path() / ("ramjet-test-" + std::to_string(rd()) + std::to_string(rd()));
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

void write_file(const fs::path& path, const std::string& bytes) {
  fs::create_directories(path.parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

CommandResult run(const std::string& command) {
  CommandResult result;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return result;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) result.output.append(buffer.data(), n);
  int status = pclose(pipe);
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

fs::path fixture_dir(const std::string& plugin) { return fs::path(RAMJET_TEST_FIXTURES) / plugin; }
fs::path fixture_library(const std::string& plugin) {
  return fixture_dir(plugin) / ("libramjet_" + plugin + ".so");
}
// RAMJET_TEST_PLUGIN_DIR in the environment: the plugins of a build copied elsewhere (a GPU machine's bundle).
fs::path stock_plugin_dir() {
  const char* moved = std::getenv("RAMJET_TEST_PLUGIN_DIR");
  return moved != nullptr && *moved != '\0' ? fs::path(moved) : fs::path(RAMJET_TEST_PLUGIN_DIR);
}
fs::path host_binary() { return RAMJET_TEST_HOST; }
fs::path source_dir() { return RAMJET_TEST_SOURCE_DIR; }
fs::path binary_dir() { return RAMJET_TEST_BINARY_DIR; }

std::vector<fs::path> shipped_plugins() {
  std::vector<fs::path> out;
  std::stringstream list(RAMJET_TEST_SHIPPED_PLUGINS);
  std::string item;
  while (std::getline(list, item, ':'))
    if (!item.empty()) out.emplace_back(item);
  return out;
}

nlohmann::json plugin_manifest(const std::string& name, const fs::path& library, const nlohmann::json& provides,
                               int abi_min, int abi_max) {
  return {{"file_format_version", "1.0"}, {"name", name},         {"version", "1.0.0"},
          {"abi", {{"min", abi_min}, {"max", abi_max}}}, {"library", library.string()}, {"provides", provides}};
}

fs::path venv_python() {
  const char* venv = std::getenv("RAMJET_VENV");
  const char* home = std::getenv("HOME");
  const fs::path root = venv ? fs::path(venv) : fs::path(home ? home : "/root") / ".cache/ramjet/venv";
  return root / "bin/python";
}

size_t count_occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + needle.size())) ++n;
  return n;
}

fs::path fashion_mnist(const std::string& file) { return fs::path("/usr/share/datasets/fashion-mnist") / file; }

}  // namespace ramjet::test
