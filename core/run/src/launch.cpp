#include "ramjet/run/launch.hpp"

#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/machine_limits.hpp"
#include "ramjet/plugin/trace.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <optional>

namespace ramjet::core {
namespace {

using Clock = std::chrono::steady_clock;
// After one rank fails the others usually fail on their own within moments (a lost peer is an error at once) and
// say why: they get this long before SIGTERM, and then kTermGrace more before SIGKILL.
constexpr auto kOwnEndGrace = std::chrono::seconds(2);
constexpr auto kTermGrace = std::chrono::seconds(5);

volatile sig_atomic_t g_interrupted = 0;
void on_interrupt(int signal) { g_interrupted = signal; }

// A port nothing listens on now, for rank 0's rendezvous store (the kernel picks it; the short window before rank
// 0 binds it again is the same one torchrun accepts).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw RuntimeFailure(std::string("--nproc: cannot open a socket: ") + std::strerror(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof a;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &size) == 0;
  ::close(fd);
  if (!ok) throw RuntimeFailure(std::string("--nproc: cannot find a free port: ") + std::strerror(errno));
  return ntohs(a.sin_port);
}

std::string own_executable() {
  char path[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", path, sizeof path - 1);
  if (n <= 0) throw RuntimeFailure("--nproc: cannot find this program's own path (/proc/self/exe)");
  return std::string(path, static_cast<size_t>(n));
}

void write_out(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// One child's stdout or stderr, copied line by line with the rank's prefix.
struct Stream {
  int fd = -1;      // read end of the pipe; -1 once closed
  int target = 1;   // our stdout or stderr
  std::string prefix;
  std::string partial;

  void take(const char* data, size_t size) {
    partial.append(data, size);
    size_t start = 0;
    for (size_t end; (end = partial.find('\n', start)) != std::string::npos; start = end + 1)
      write_out(target, prefix + partial.substr(start, end - start + 1));
    partial.erase(0, start);
  }
  void finish() {
    if (!partial.empty()) write_out(target, prefix + partial + "\n");
    partial.clear();
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

struct Rank {
  pid_t pid = -1;
  bool running = false;
  std::optional<int> exit_code;
  Stream out, err;
};

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

std::string how_it_ended(int status) {
  if (WIFSIGNALED(status)) return std::string("was killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
                                  strsignal(WTERMSIG(status)) + ")";
  return "exited with code " + std::to_string(exit_code_of(status));
}

// One trace of the job, as --trace FILE promises: the other ranks' files (FILE.rank<K>) joined into rank 0's, each
// rank on its own process track.
void merge_traces(const std::filesystem::path& trace, int nproc) {
  std::vector<std::filesystem::path> parts;
  for (int k = 1; k < nproc; ++k) parts.push_back(trace.string() + ".rank" + std::to_string(k));
  merge_rank_traces(trace, parts);
}

std::vector<std::string> rank_args(const LaunchOptions& o, int rank) {
  std::vector<std::string> args = o.args;
  if (rank == 0) return args;
  for (size_t i = 0; i + 1 < args.size(); ++i)
    for (const auto& flag : o.per_rank_file_flags)
      if (args[i] == flag) args[i + 1] += ".rank" + std::to_string(rank);
  return args;
}

void start(Rank& r, int rank, const LaunchOptions& o, const std::string& program, int port, pid_t launcher) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0 || ::pipe2(err, O_CLOEXEC) != 0)
    throw RuntimeFailure(std::string("--nproc: cannot create pipes: ") + std::strerror(errno));
  // Everything the child needs is made before fork: after it, only async-signal-safe calls.
  std::vector<std::string> args = rank_args(o, rank);
  args.insert(args.begin(), program);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string threads = std::to_string(o.threads_per_rank);
  std::vector<std::string> env = {"RANK=" + std::to_string(rank),
                                  "WORLD_SIZE=" + std::to_string(o.nproc),
                                  "LOCAL_RANK=" + std::to_string(rank),
                                  "LOCAL_WORLD_SIZE=" + std::to_string(o.nproc),
                                  "MASTER_ADDR=127.0.0.1",
                                  "MASTER_PORT=" + std::to_string(port),
                                  "OMP_NUM_THREADS=" + threads,
                                  "RAMJET_CPUS=" + threads};
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string_view entry(*e);
    bool replaced = false;
    for (const auto& mine : env)
      if (entry.substr(0, entry.find('=') + 1) == std::string_view(mine).substr(0, mine.find('=') + 1)) replaced = true;
    if (!replaced) envp.push_back(*e);
  }
  envp.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid < 0) throw RuntimeFailure(std::string("--nproc: cannot start rank ") + std::to_string(rank) + ": " +
                                    std::strerror(errno));
  if (pid == 0) {
    // A rank never outlives its launcher: killed with it, it leaves no stray trainer behind.
    ::prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (::getppid() != launcher) ::_exit(1);
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    ::execve(argv[0], argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  r.pid = pid;
  r.running = true;
  const std::string prefix = "[rank " + std::to_string(rank) + "] ";
  r.out = Stream{out[0], STDOUT_FILENO, prefix, {}};
  r.err = Stream{err[0], STDERR_FILENO, prefix, {}};
}

}  // namespace

LaunchOptions local_launch(const std::vector<std::string>& run_args, PipelineManifest& manifest, int nproc) {
  if (nproc < 1 || nproc > 1024) throw InvalidInput("--nproc: must be from 1 to 1024, got " + std::to_string(nproc));
  if (!manifest.doc.is_object() || !manifest.doc.contains("train"))
    throw InvalidInput(manifest.where("/train") + ": --nproc trains on several ranks; the manifest has no train section");
  LaunchOptions o;
  o.nproc = nproc;
  o.args = {"run"};
  for (size_t i = 0; i < run_args.size(); ++i) {
    if (run_args[i] == "--nproc") ++i;  // and its value
    else if (run_args[i].rfind("--trace=", 0) == 0) o.args.insert(o.args.end(), {"--trace", run_args[i].substr(8)});
    else if (run_args[i].rfind("--nproc=", 0) != 0) o.args.push_back(run_args[i]);
  }
  nlohmann::json& train = manifest.doc["train"];
  if (!train.is_object() || !train.contains("strategy")) {
    if (train.is_object()) train["strategy"] = "gloo";
    o.args.insert(o.args.end(), {"--set", "/train/strategy=\"gloo\""});
  } else if (train["strategy"] == "single") {
    throw InvalidInput(manifest.where("/train/strategy") + ": \"single\" trains in one process; --nproc " +
                       std::to_string(nproc) + " needs a multi-process strategy (\"gloo\", or leave it out)");
  } else if (train["strategy"] == "mpi" || (train["strategy"].is_object() && train["strategy"].contains("type") &&
                                                train["strategy"]["type"] == "mpi")) {
    throw InvalidInput(manifest.where("/train/strategy") + ": the mpi strategy's ranks are started by mpirun (`mpirun -np " +
                       std::to_string(nproc) + " ramjet run MANIFEST`); --nproc starts gloo ranks");
  }
  o.per_rank_file_flags = {"--trace"};
  for (size_t i = 0; i + 1 < o.args.size(); ++i)
    if (o.args[i] == "--trace") o.trace = o.args[i + 1];
  o.threads_per_rank = std::max(1, cpu_count() / nproc);
  return o;
}

int launch_local_ranks(const LaunchOptions& o) {
  if (o.nproc < 1) throw InvalidInput("--nproc: must be at least 1, got " + std::to_string(o.nproc));
  const std::string program = own_executable();
  const int port = free_port();
  struct sigaction action {}, old_int {}, old_term {};
  action.sa_handler = on_interrupt;
  ::sigaction(SIGINT, &action, &old_int);
  ::sigaction(SIGTERM, &action, &old_term);
  g_interrupted = 0;

  std::vector<Rank> ranks(static_cast<size_t>(o.nproc));
  constexpr int kBadInputExit = 2;         // the host's exit code for bad input
  constexpr int kRuntimeFailureExit = 1;  // and for a failure at run time (a lost peer among them)
  std::optional<int> first_failure;
  std::optional<Clock::time_point> terminating_since;  // when the ranks were told to end
  bool terminated = false;                              // SIGTERM sent
  auto stop_others = [&] {
    if (!terminating_since) terminating_since = Clock::now();
  };
  auto signal_running = [&](int signal) {
    for (auto& r : ranks)
      if (r.running) ::kill(r.pid, signal);
  };
  try {
    for (int k = 0; k < o.nproc; ++k) start(ranks[static_cast<size_t>(k)], k, o, program, port, ::getpid());
  } catch (...) {
    signal_running(SIGTERM);
    for (auto& r : ranks)
      if (r.running) ::waitpid(r.pid, nullptr, 0);
    ::sigaction(SIGINT, &old_int, nullptr);
    ::sigaction(SIGTERM, &old_term, nullptr);
    throw;
  }

  for (;;) {
    std::vector<pollfd> fds;
    std::vector<Stream*> streams;
    for (auto& r : ranks)
      for (Stream* s : {&r.out, &r.err})
        if (s->fd >= 0) fds.push_back({s->fd, POLLIN, 0}), streams.push_back(s);
    bool any_running = false;
    for (auto& r : ranks) any_running = any_running || r.running;
    if (fds.empty() && !any_running) break;

    if (!fds.empty()) ::poll(fds.data(), fds.size(), 100);
    else ::usleep(20000);
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buffer[65536];
      const ssize_t n = ::read(fds[i].fd, buffer, sizeof buffer);
      if (n > 0) streams[i]->take(buffer, static_cast<size_t>(n));
      else if (n == 0 || errno != EINTR) streams[i]->finish();
    }
    for (size_t k = 0; k < ranks.size(); ++k) {
      Rank& r = ranks[k];
      if (!r.running) continue;
      int status = 0;
      if (::waitpid(r.pid, &status, WNOHANG) != r.pid) continue;
      r.running = false;
      r.exit_code = exit_code_of(status);
      if (*r.exit_code != 0 && !first_failure && !terminating_since) {
        first_failure = *r.exit_code;
        write_out(STDERR_FILENO, "ramjet: rank " + std::to_string(k) + " " + how_it_ended(status) +
                                     "; stopping the other ranks\n");
        stop_others();
      } else if (*r.exit_code == kBadInputExit && first_failure && *first_failure != kBadInputExit && !terminated) {
        // A rank that refused bad input ends its peers' rendezvous or collectives, and which of them the launcher
        // reaps first is a race: the bad input, ended on its own within the grace, is the job's verdict.
        first_failure = kBadInputExit;
      } else if (WIFSIGNALED(status) && first_failure && *first_failure == kRuntimeFailureExit && !terminated) {
        // Likewise a rank killed from outside: its peers see the lost connection and exit 1 within milliseconds,
        // often before this loop reaps the killed one. The kill is the cause, and the job's verdict.
        first_failure = *r.exit_code;
        write_out(STDERR_FILENO, "ramjet: rank " + std::to_string(k) + " " + how_it_ended(status) + "\n");
      }
    }
    if (g_interrupted && !terminating_since) {
      write_out(STDERR_FILENO, std::string("ramjet: ") + strsignal(g_interrupted) + "; stopping every rank\n");
      if (!first_failure) first_failure = 128 + g_interrupted;
      stop_others();
      signal_running(SIGTERM);  // asked to stop: no grace
      terminated = true;
    }
    if (terminating_since) {
      const auto waited = Clock::now() - *terminating_since;
      if (!terminated && waited > kOwnEndGrace) signal_running(SIGTERM), terminated = true;
      if (waited > kOwnEndGrace + kTermGrace) signal_running(SIGKILL);
    }
  }
  ::sigaction(SIGINT, &old_int, nullptr);
  ::sigaction(SIGTERM, &old_term, nullptr);
  if (first_failure) return *first_failure;
  for (const auto& r : ranks)
    if (r.exit_code && *r.exit_code != 0) return *r.exit_code;
  if (o.trace) merge_traces(*o.trace, o.nproc);
  return 0;
}

}  // namespace ramjet::core
