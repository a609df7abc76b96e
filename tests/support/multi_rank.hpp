// What the multi-rank tests (gloo, mpi) share: a small training manifest, ranks started by hand, the newest
// checkpoint's parameters compared bit for bit, and two "machines" made of network namespaces.
#pragma once

#include "test_support.hpp"

#include "ramjet/plugin/example.hpp"

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ramjet::test {

// Fashion-MNIST, a dense classifier, plain SGD, global batch 64, checkpoints every epoch: deterministic, and seconds
// to train on any CPU. Written to dir/train.json; `strategy` (when not null) becomes train.strategy.
fs::path small_training_manifest(const fs::path& dir, int64_t take, int64_t epochs,
                                 const nlohmann::json& strategy = nullptr);

// The parameters of the newest checkpoint in the directory; throws when there is none.
core::Example parameters_in(const fs::path& checkpoint_dir);
bool same_bits(const core::Example& a, const core::Example& b);
// Waits until rank 0 has trained at least one epoch (its first checkpoint exists): the run is mid-training.
bool training_under_way(const fs::path& checkpoint_dir, std::chrono::seconds limit);

int free_port();

// One process started by hand (no launcher, which would end the others itself), its output in a file. Killed
// when the object dies, if still running.
class RankProcess {
 public:
  // `program` defaults to the ramjet binary.
  RankProcess(const std::vector<std::string>& args, const std::vector<std::string>& env, const fs::path& log,
              const fs::path& program = host_binary());
  ~RankProcess();
  RankProcess(const RankProcess&) = delete;
  RankProcess& operator=(const RankProcess&) = delete;
  pid_t pid() const { return pid_; }
  // The exit code (128 + signal when killed), or nullopt when still running after `limit`.
  std::optional<int> wait_for(std::chrono::milliseconds limit);

 private:
  pid_t pid_ = -1;
  bool exited_ = false;
};

// Every thread's stack in a running process (gdb attached in batch mode), for a failure message: what a process
// that should have ended is waiting on. Says why not when gdb is missing or cannot attach.
std::string thread_stacks(pid_t pid);

// The descendant of `ancestor` whose environment holds `variable`=`value` (e.g. RANK=1), or -1.
pid_t descendant_with(pid_t ancestor, const std::string& variable, const std::string& value);

// The nice value of each of a process's threads, by thread ID (a strategy's threads run at a raised priority).
std::map<pid_t, int> thread_nice_values(pid_t pid);
// Whether this process may lower a thread's nice value by `levels` (CAP_SYS_NICE, or that much RLIMIT_NICE room):
// tried on the calling thread, and put back.
bool may_lower_nice(int levels);

// Two "machines": network namespaces joined by a veth pair, with private addresses on the veth only. Needs root
// (CAP_NET_ADMIN); the constructor says why not when it cannot make them, and the test skips with that reason.
class TwoNamespaces {
 public:
  TwoNamespaces();
  ~TwoNamespaces();  // deleting a namespace deletes the veth end inside it, and with it the pair
  TwoNamespaces(const TwoNamespaces&) = delete;
  TwoNamespaces& operator=(const TwoNamespaces&) = delete;
  const std::string& why_not() const { return why_not_; }
  const std::string& name_a() const { return a_; }
  const std::string& name_b() const { return b_; }
  std::string in_a(const std::string& command) const { return "ip netns exec " + a_ + " " + command; }
  std::string in_b(const std::string& command) const { return "ip netns exec " + b_ + " " + command; }
  static constexpr const char* kAddressA = "10.231.0.1";
  static constexpr const char* kAddressB = "10.231.0.2";

 private:
  std::string a_, b_, why_not_;
};

}  // namespace ramjet::test
