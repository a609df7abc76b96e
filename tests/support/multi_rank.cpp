#include "multi_rank.hpp"

#include "ramjet/train/checkpoint.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <thread>

namespace ramjet::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// The parent's pid from /proc/PID/stat, or 0.
pid_t parent_of(pid_t pid) {
  std::string stat;
  try {
    stat = read_file("/proc/" + std::to_string(pid) + "/stat");
  } catch (...) {
    return 0;
  }
  // "pid (comm) state ppid ...": the command may hold spaces, the last ')' ends it.
  const size_t close = stat.rfind(')');
  int ppid = 0;
  char state = 0;
  if (close == std::string::npos || std::sscanf(stat.c_str() + close + 1, " %c %d", &state, &ppid) != 2) return 0;
  return ppid;
}

}  // namespace

fs::path small_training_manifest(const fs::path& dir, int64_t take, int64_t epochs, const nlohmann::json& strategy) {
  nlohmann::json doc = {
      {"seed", 11},
      {"data",
       {{"train",
         {{"source",
           {{"type", "idx"},
            {"images", fashion_mnist("train-images-idx3-ubyte.gz").string()},
            {"labels", fashion_mnist("train-labels-idx1-ubyte.gz").string()}}},
          {"map", {{{"type", "normalize"}, {"scale", 1.0 / 255}}}},
          {"take", take},
          {"batch", 64}}}}},
      {"model",
       {{"input", {{"image", {28, 28, 1}}}},
        {"layers", {{{"type", "flatten"}}, {{"type", "dense"}, {"units", 32}, {"activation", "relu"}},
                    {{"type", "dense"}, {"units", 10}}}},
        {"loss", {{"type", "sparse_softmax_cross_entropy"}}}}},
      {"train",
       {{"optimizer", {{"type", "sgd"}, {"learning_rate", 0.05}}},
        {"epochs", epochs},
        {"threads", 1},
        {"checkpoint", {{"dir", "ckpt"}}}}}};
  if (!strategy.is_null()) doc["train"]["strategy"] = strategy;
  const fs::path path = dir / "train.json";
  write_file(path, doc.dump(2));
  return path;
}

core::Example parameters_in(const fs::path& checkpoint_dir) {
  auto latest = core::latest_checkpoint(checkpoint_dir);
  if (!latest) throw std::runtime_error("no checkpoint in " + checkpoint_dir.string());
  return core::load_checkpoint(*latest).parameters;
}

bool same_bits(const core::Example& a, const core::Example& b) {
  if (a.entries.size() != b.entries.size()) return false;
  for (const auto& entry : a.entries) {
    const DLTensor* other = b.find(entry.name.c_str());
    if (other == nullptr || core::byte_size(*other) != core::byte_size(entry.tensor->dl_tensor) ||
        std::memcmp(other->data, entry.tensor->dl_tensor.data, core::byte_size(*other)) != 0)
      return false;
  }
  return true;
}

bool training_under_way(const fs::path& checkpoint_dir, std::chrono::seconds limit) {
  const auto deadline = Clock::now() + limit;
  while (Clock::now() < deadline) {
    if (core::latest_checkpoint(checkpoint_dir)) return true;
    std::this_thread::sleep_for(50ms);
  }
  return false;
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t size = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &size);
  ::close(fd);
  return ntohs(a.sin_port);
}

RankProcess::RankProcess(const std::vector<std::string>& args, const std::vector<std::string>& env,
                         const fs::path& log, const fs::path& program) {
  std::vector<std::string> argv_text = {program.string()};
  argv_text.insert(argv_text.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_text) argv.push_back(a.data());
  argv.push_back(nullptr);
  std::vector<std::string> env_text = env;
  pid_ = ::fork();
  if (pid_ == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    for (auto& e : env_text) ::putenv(e.data());
    ::execvp(argv[0], argv.data());
    ::_exit(127);
  }
}

RankProcess::~RankProcess() {
  if (!exited_) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
}

std::optional<int> RankProcess::wait_for(std::chrono::milliseconds limit) {
  const auto deadline = Clock::now() + limit;
  do {
    int status = 0;
    if (::waitpid(pid_, &status, WNOHANG) == pid_) {
      exited_ = true;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(20ms);
  } while (Clock::now() < deadline);
  return std::nullopt;
}

std::string thread_stacks(pid_t pid) {
  const auto r = run("timeout 60 gdb -batch -nx -p " + std::to_string(pid) + " -ex 'thread apply all bt' 2>&1");
  if (r.exit_code != 0) return "(no stacks: gdb exited with " + std::to_string(r.exit_code) + ")\n" + r.output;
  return r.output;
}

std::map<pid_t, int> thread_nice_values(pid_t pid) {
  std::map<pid_t, int> out;
  std::error_code gone;  // the process may end while it is read
  for (const auto& entry : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", gone)) {
    const pid_t thread = static_cast<pid_t>(std::stoi(entry.path().filename().string()));
    errno = 0;
    const int nice = ::getpriority(PRIO_PROCESS, static_cast<id_t>(thread));
    if (errno == 0) out[thread] = nice;
  }
  return out;
}

bool may_lower_nice(int levels) {
  const id_t me = static_cast<id_t>(::gettid());
  const int now = ::getpriority(PRIO_PROCESS, me);
  if (now - levels < -20 || ::setpriority(PRIO_PROCESS, me, now - levels) != 0) return false;
  ::setpriority(PRIO_PROCESS, me, now);
  return true;
}

pid_t descendant_with(pid_t ancestor, const std::string& variable, const std::string& value) {
  const std::string wanted = variable + "=" + value + '\0';
  for (const auto& entry : fs::directory_iterator("/proc")) {
    const std::string name = entry.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string environ;
    try {
      environ = read_file(entry.path() / "environ");
    } catch (...) {
      continue;
    }
    if (environ.rfind(wanted, 0) != 0 && environ.find('\0' + wanted) == std::string::npos) continue;
    const pid_t pid = static_cast<pid_t>(std::stol(name));
    pid_t up = parent_of(pid);
    for (int depth = 0; depth < 8 && up > 1; ++depth, up = parent_of(up))
      if (up == ancestor) return pid;
  }
  return -1;
}

TwoNamespaces::TwoNamespaces() {
  const std::string id = std::to_string(::getpid());
  a_ = "rj" + id + "a", b_ = "rj" + id + "b";
  if (::geteuid() != 0) {
    why_not_ = "network namespaces need root (ip netns); this test runs as uid " + std::to_string(::geteuid());
    return;
  }
  const std::string va = "rj" + id + "x", vb = "rj" + id + "y";
  const std::vector<std::string> steps = {
      "ip netns add " + a_, "ip netns add " + b_, "ip link add " + va + " type veth peer name " + vb,
      "ip link set " + va + " netns " + a_, "ip link set " + vb + " netns " + b_,
      "ip -n " + a_ + " addr add " + kAddressA + "/24 dev " + va, "ip -n " + b_ + " addr add " + kAddressB + "/24 dev " + vb,
      "ip -n " + a_ + " link set " + va + " up", "ip -n " + b_ + " link set " + vb + " up",
      "ip -n " + a_ + " link set lo up", "ip -n " + b_ + " link set lo up"};
  for (const auto& step : steps) {
    const auto r = run(step);
    if (r.exit_code != 0) {
      why_not_ = "cannot set up network namespaces (`" + step + "`: " + r.output + ")";
      return;
    }
  }
}
TwoNamespaces::~TwoNamespaces() {
  run("ip netns del " + a_ + " 2>/dev/null");
  run("ip netns del " + b_ + " 2>/dev/null");
}

}  // namespace ramjet::test
