#include "ramjet/plugin/atomic_file.hpp"

#include "ramjet/plugin/failure.hpp"

namespace ramjet::core {
namespace {

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

}  // namespace ramjet::core
