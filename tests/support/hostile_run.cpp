#include "hostile_run.hpp"

#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#if defined(__SANITIZE_ADDRESS__)
#define RAMJET_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define RAMJET_TEST_UNDER_ASAN 1
#endif
#endif

namespace ramjet::test {

HostileResult run_hostile(const std::vector<std::string>& argv, const HostileLimits& limits) {
  HostileResult r;
  for (const auto& a : argv) r.command += (r.command.empty() ? "" : " ") + a.substr(0, 200);
  int pipe_fds[2];
  if (pipe(pipe_fds) != 0) return r;
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fds[1], STDOUT_FILENO);
    dup2(pipe_fds[1], STDERR_FILENO);
    close(pipe_fds[0]);
    close(pipe_fds[1]);
    if (!limits.working_dir.empty() && chdir(limits.working_dir.c_str()) != 0) _exit(125);
#ifndef RAMJET_TEST_UNDER_ASAN
    // AddressSanitizer reserves terabytes of address space, so the cap applies to the plain build only; the peak
    // resident size is checked in both.
    const rlimit cap{static_cast<rlim_t>(limits.memory_bytes), static_cast<rlim_t>(limits.memory_bytes)};
    setrlimit(RLIMIT_AS, &cap);
#endif
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(pipe_fds[1]);
  std::thread reader([&] {
    char buf[65536];
    ssize_t n;
    while ((n = read(pipe_fds[0], buf, sizeof buf)) > 0)
      if (r.output.size() < (8u << 20)) r.output.append(buf, static_cast<size_t>(n));
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(limits.seconds);
  int status = 0;
  rusage usage{};
  for (;;) {
    const pid_t done = wait4(pid, &status, WNOHANG, &usage);
    if (done == pid) break;
    if (std::chrono::steady_clock::now() > deadline && !r.timed_out) {
      r.timed_out = true;
      kill(pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  reader.join();
  close(pipe_fds[0]);
  r.peak_rss_bytes = static_cast<long long>(usage.ru_maxrss) * 1024;
  if (WIFEXITED(status)) r.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) r.signal = WTERMSIG(status);
  return r;
}

::testing::AssertionResult refused_cleanly(const HostileResult& r, int exit_code, const std::vector<std::string>& needles) {
  auto fail = [&](const std::string& why) {
    return ::testing::AssertionFailure() << why << "\n  command: " << r.command << "\n  output (first 4 KiB):\n"
                                         << r.output.substr(0, 4096);
  };
  if (r.timed_out) return fail("it did not finish in time (a hang)");
  if (r.signal != 0) return fail("it was killed by signal " + std::to_string(r.signal) + " (" + strsignal(r.signal) + ")");
  if (r.output.find("AddressSanitizer") != std::string::npos || r.output.find("runtime error:") != std::string::npos ||
      r.output.find("LeakSanitizer") != std::string::npos)
    return fail("a sanitizer reported an error");
  if (r.exit_code != exit_code)
    return fail("exit code " + std::to_string(r.exit_code) + ", expected " + std::to_string(exit_code));
  if (r.peak_rss_bytes > (1LL << 30))
    return fail("peak memory " + std::to_string(r.peak_rss_bytes >> 20) + " MiB, over the 1 GiB bound");
  if (r.output.size() > 16384) return fail("the message is " + std::to_string(r.output.size()) + " bytes (not truncated)");
  for (const auto& n : needles)
    if (r.output.find(n) == std::string::npos) return fail("the message does not name '" + n + "'");
  return ::testing::AssertionSuccess();
}

}  // namespace ramjet::test
