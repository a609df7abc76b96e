// Runs the `ramjet` host (or any program) on hostile input the way a user would meet it, and records what a
// bad-input test must judge: how it ended (exit code or signal), what it printed, how much memory it took at its
// peak, and whether it had to be killed for running too long.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

namespace ramjet::test {

struct HostileLimits {
  double seconds = 120;                           // killed (SIGKILL) after this long: a hang
  long long memory_bytes = 1LL << 30;             // address-space cap where no sanitizer owns the address space
  std::filesystem::path working_dir;              // empty: the current one
};

struct HostileResult {
  int exit_code = -1;     // -1 when it did not exit normally
  int signal = 0;         // the signal that ended it, 0 when it exited
  bool timed_out = false;
  long long peak_rss_bytes = 0;
  std::string output;     // stdout and stderr together
  std::string command;    // for failure messages
};

// Runs argv[0] with argv (no shell). Never throws for a failing program.
HostileResult run_hostile(const std::vector<std::string>& argv, const HostileLimits& limits = {});

// The contract for bad input: exited (no signal, no hang) with `exit_code`, no sanitizer report, peak memory under
// 1 GiB, a message under 16 KiB (echoed values are truncated), and every needle (a file name, a JSON pointer, a
// byte offset, a field) in what it printed.
::testing::AssertionResult refused_cleanly(const HostileResult& r, int exit_code, const std::vector<std::string>& needles);

}  // namespace ramjet::test
