#include "ramjet/plugin/atomic_file.hpp"

#include "ramjet/plugin/failure.hpp"

#include <mutex>
#include <vector>

namespace ramjet::core {
namespace {

// The folders prepare_destination made in this process, outermost first.
std::mutex g_made_mutex;
std::vector<std::filesystem::path> g_made;

template <class F>
void as_runtime_failure(F&& body) {
  try {
    body();
  } catch (const ramjet::Error& e) {
    throw RuntimeFailure(e.what());
  }
}

}  // namespace

AtomicFile::AtomicFile(const std::filesystem::path& path) {
  as_runtime_failure([&] { file_ = std::make_unique<ramjet::AtomicFile>(path); });
}

void AtomicFile::write(std::string_view bytes) {
  as_runtime_failure([&] { file_->write(bytes); });
}

void AtomicFile::commit() {
  as_runtime_failure([&] { file_->commit(); });
}

void write_file_atomically(const std::filesystem::path& path, std::string_view text) {
  as_runtime_failure([&] { ramjet::write_file_atomically(path, text); });
}

std::string prepare_destination(const std::filesystem::path& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (path.filename().empty()) return path.string() + " names a folder, not a file";
  const fs::path folder = path.has_parent_path() ? path.parent_path() : fs::path(".");
  std::vector<fs::path> missing;  // innermost first
  for (fs::path p = folder; !p.empty() && p != p.parent_path() && !fs::exists(p, ec); p = p.parent_path())
    missing.push_back(p);
  fs::create_directories(folder, ec);
  if (ec || !fs::is_directory(folder)) return "cannot create the folder " + folder.string() + (ec ? ": " + ec.message() : "");
  {
    const std::lock_guard lock(g_made_mutex);
    g_made.insert(g_made.end(), missing.rbegin(), missing.rend());
  }
  if (fs::is_directory(fs::status(path, ec))) return path.string() + " is a folder";
  const std::string stale = "." + path.filename().string() + ".tmp";
  for (const auto& entry : fs::directory_iterator(folder, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() > stale.size() && name.compare(0, stale.size(), stale) == 0 &&
        name.find_first_not_of("0123456789", stale.size()) == std::string::npos && entry.is_regular_file(ec))
      fs::remove(entry.path(), ec);  // a killed writer's; a live one's would be ours to race anyway
  }
  try {
    ramjet::AtomicFile probe(path);  // removed again when it goes out of scope uncommitted
  } catch (const ramjet::Error& e) {
    return e.what();
  }
  return {};
}

void remove_made_folders_left_empty() {
  const std::lock_guard lock(g_made_mutex);
  std::error_code ec;
  for (auto it = g_made.rbegin(); it != g_made.rend(); ++it) std::filesystem::remove(*it, ec);  // fails unless empty
  g_made.clear();
}

}  // namespace ramjet::core
