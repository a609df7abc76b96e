// What every fuzz target shares: the host API table that plugin code compiled into a target calls (Tensor,
// Example), and a scratch file for readers that take a path rather than bytes.
//
// A target returns normally when the code under test refuses the input with its documented error type; any other
// exception escapes LLVMFuzzerTestOneInput and libFuzzer reports it (a raw library exception is a finding too: its
// text is what a user would have seen).
#pragma once

#include "ramjet/plugin/host_api.hpp"

#include <ramjet/sdk/host.hpp>

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

namespace ramjet::fuzz {

// Plugin sources compiled into a target read the host table the plugin entry call would have stored.
inline void install_host_api() { ramjet::detail::host_table.store(ramjet::core::host_api()); }

// A per-process folder (fuzzing runs one process per core; each needs its own files), removed at exit.
inline const std::filesystem::path& scratch_dir() {
  static const std::filesystem::path dir = [] {
    const char* base = std::getenv("TMPDIR");
    std::filesystem::path d = std::filesystem::path(base && *base ? base : "/tmp") /
                              ("ramjet-fuzz-" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(), ec);
    });
    return d;
  }();
  return dir;
}

// Writes the input to scratch_dir()/name and returns the path.
inline std::filesystem::path write_scratch(const std::string& name, const uint8_t* data, size_t size) {
  const std::filesystem::path path = scratch_dir() / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) std::abort();  // the harness itself failed: not a finding in the code under test
  return path;
}

}  // namespace ramjet::fuzz
