// The mpi strategy end to end: ranks of the ramjet binary that Open MPI's mpirun starts. The same manifest that
// `ramjet run --nproc 2` trains with gloo trains unchanged under `mpirun -np 2`, and ends bit for bit where gloo
// ends — on one machine, and with one rank in each of two network namespaces launched through an agent (no ssh).
// A rank that stalls ends the job after train.strategy.timeout_s, naming the collective; a rank that dies ends it
// at once, named by mpirun; ranks that disagree are refused; --resume then finishes the job.
#include "multi_rank.hpp"
#include "test_support.hpp"

#include "ramjet/train/checkpoint.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <thread>

namespace ramjet::test {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

class MpiTest : public ::testing::Test {
 protected:
  TempDir dir;

  // mpirun's own flags for a job of `n` ranks on this machine: root is allowed (CI runs as root), ranks are not
  // pinned to one core each (two ranks of one thread would share it otherwise on some machines).
  static std::vector<std::string> mpirun_flags(int n) {
    return {"--allow-run-as-root", "--oversubscribe", "--bind-to", "none", "-np", std::to_string(n)};
  }
  static std::string mpirun_line(int n, const std::string& ramjet_args) {
    std::string line = quote(RAMJET_TEST_MPIEXEC);
    for (const auto& f : mpirun_flags(n)) line += " " + f;
    return line + " " + quote(host_binary().string()) + " " + ramjet_args;
  }
  // The job as a process of its own: mpirun, then ramjet `args` on `n` ranks.
  std::unique_ptr<RankProcess> start_job(int n, const std::vector<std::string>& args, const std::string& log) {
    std::vector<std::string> all = mpirun_flags(n);
    all.push_back(host_binary().string());
    all.insert(all.end(), args.begin(), args.end());
    return std::make_unique<RankProcess>(all, std::vector<std::string>{}, dir / log, RAMJET_TEST_MPIEXEC);
  }
  // Rank 1's process once the job trains (rank 0's first checkpoint exists), or -1 when that never came.
  static pid_t rank_one_once_training(const RankProcess& job, const fs::path& checkpoint_dir) {
    if (!training_under_way(checkpoint_dir, 60s)) return -1;
    return descendant_with(job.pid(), "OMPI_COMM_WORLD_RANK", "1");
  }
  std::string run_line(const fs::path& manifest, const std::string& checkpoint_dir, const std::string& more = "") {
    return "run " + quote(manifest.string()) + " --quiet --set /train/checkpoint/dir=" +
           quote((dir / checkpoint_dir).string()) + more;
  }
};

TEST_F(MpiTest, TwoRanksUnderMpirunEndBitForBitWhereTwoGlooRanksEnd) {
  // No train.strategy: --nproc makes it gloo, mpirun makes it mpi — the same manifest, unchanged.
  const fs::path m = small_training_manifest(dir.path(), 1024, 4);
  const auto gloo = run(quote(host_binary().string()) + " " + run_line(m, "gloo", " --nproc 2"));
  ASSERT_EQ(gloo.exit_code, 0) << gloo.output;
  const auto mpi = run(mpirun_line(2, run_line(m, "mpi", " --report " + quote((dir / "mpi.json").string()))));
  ASSERT_EQ(mpi.exit_code, 0) << mpi.output;
  // Two ranks sum each gradient in the same order with either library (a + b is b + a in float32).
  EXPECT_TRUE(same_bits(parameters_in(dir / "gloo"), parameters_in(dir / "mpi")));

  const auto report = nlohmann::json::parse(read_file(dir / "mpi.json"));
  EXPECT_EQ(report["train"]["strategy"]["name"], "mpi");
  EXPECT_EQ(report["train"]["strategy"]["world_size"], 2);
  EXPECT_EQ(report["train"]["replicas"], 2);
  EXPECT_EQ(report["train"]["steps"], 64);
  EXPECT_TRUE(report["train"]["strategy"]["overlapped"].get<bool>()) << report["train"]["strategy"].dump();
}

TEST_F(MpiTest, OneRankInEachOfTwoNetworkNamespacesThroughALaunchAgentEndsWithTheWeightsOfTwoLocalRanks) {
  TwoNamespaces machines;
  if (!machines.why_not().empty()) GTEST_SKIP() << machines.why_not();
  const fs::path m = small_training_manifest(dir.path(), 1024, 2);
  const auto local = run(quote(host_binary().string()) + " " + run_line(m, "local", " --nproc 2"));
  ASSERT_EQ(local.exit_code, 0) << local.output;
  // mpirun's launch agent, in place of ssh: "agent HOST COMMAND..." runs COMMAND in that host's namespace.
  const fs::path agent = dir / "netns-agent";
  write_file(agent, std::string("#!/bin/sh\nhost=$1; shift\ncase \"$host\" in\n") + "  " + TwoNamespaces::kAddressA +
                        ") ns=" + machines.name_a() + " ;;\n  " + TwoNamespaces::kAddressB + ") ns=" +
                        machines.name_b() + " ;;\n  *) echo \"netns-agent: unknown host $host\" >&2; exit 1 ;;\nesac\n" +
                        "exec ip netns exec \"$ns\" /bin/sh -c \"$*\"\n");
  ::chmod(agent.c_str(), 0755);
  // The README's two-machine command, with the agent and the veth's subnet named for Open MPI.
  const std::string subnet = "10.231.0.0/24";
  const std::string job = "timeout 120 " + quote(RAMJET_TEST_MPIEXEC) + " --allow-run-as-root -np 2 --host " +
                          TwoNamespaces::kAddressA + "," + TwoNamespaces::kAddressB +
                          " --bind-to none --mca plm_rsh_agent " + quote(agent.string()) +
                          " --mca btl tcp,self --mca btl_tcp_if_include " + subnet + " --mca oob_tcp_if_include " +
                          subnet + " " + quote(host_binary().string()) + " " + run_line(m, "netns");
  const auto both = run(machines.in_a("sh -c " + quote(job)));
  ASSERT_EQ(both.exit_code, 0) << both.output;
  EXPECT_TRUE(same_bits(parameters_in(dir / "local"), parameters_in(dir / "netns")));
}

TEST_F(MpiTest, AStoppedRankEndsTheJobAfterTimeoutSNamingTheCollective) {
  const fs::path m = small_training_manifest(dir.path(), 1024, 100000, {{"type", "mpi"}, {"timeout_s", 2}});
  auto job = start_job(2, {"run", m.string(), "--set", "/train/checkpoint/dir=" + (dir / "c").string()}, "job.log");
  const pid_t rank1 = rank_one_once_training(*job, dir / "c");
  ASSERT_GT(rank1, 0) << "the job did not start training within 60 s:\n" << read_file(dir / "job.log");
  ::kill(rank1, SIGSTOP);
  const auto stopped_at = Clock::now();
  const auto code = job->wait_for(15s);
  ::kill(rank1, SIGKILL);  // mpirun has done so already when the job ended as it should
  ASSERT_TRUE(code.has_value()) << "the job still runs 15 s after rank 1 stopped (timeout_s 2)";
  const double seconds = std::chrono::duration<double>(Clock::now() - stopped_at).count();
  const std::string log = read_file(dir / "job.log");
  EXPECT_NE(*code, 0) << log;
  EXPECT_GE(seconds, 1.5) << log;
  EXPECT_NE(log.find("mpi strategy, rank 0 of 2: all_reduce #"), std::string::npos) << log;
  EXPECT_NE(log.find("timed out after 2 s (train.strategy.timeout_s)"), std::string::npos) << log;
  RecordProperty("seconds_to_end", std::to_string(seconds));
}

// The communication thread (and what MPI starts from it) runs priority_boost nice levels above the rank's own
// threads, so that an all-reduce is served beside a busy backward; the main thread keeps the job's priority.
TEST_F(MpiTest, TheCommunicationThreadRunsPriorityBoostLevelsAboveTheRank) {
  if (!may_lower_nice(7)) GTEST_SKIP() << "lowering a nice value by 7 needs CAP_SYS_NICE, which this test lacks";
  const fs::path m = small_training_manifest(dir.path(), 1024, 100000, {{"type", "mpi"}, {"priority_boost", 7}});
  auto job = start_job(2, {"run", m.string(), "--set", "/train/checkpoint/dir=" + (dir / "c").string()}, "job.log");
  const pid_t rank1 = rank_one_once_training(*job, dir / "c");
  ASSERT_GT(rank1, 0) << "the job did not start training within 60 s:\n" << read_file(dir / "job.log");
  const std::map<pid_t, int> threads = thread_nice_values(rank1);
  ::kill(rank1, SIGKILL);
  EXPECT_TRUE(job->wait_for(10s).has_value()) << "the job still runs 10 s after rank 1 was killed";

  const int base = ::getpriority(PRIO_PROCESS, 0);
  ASSERT_TRUE(threads.contains(rank1)) << "rank 1's threads could not be read";
  EXPECT_EQ(threads.at(rank1), base) << "the rank's main thread keeps the job's priority";
  int raised = 0;
  for (const auto& [thread, nice] : threads) raised += nice == std::max(-20, base - 7) ? 1 : 0;
  EXPECT_GE(raised, 2) << "the communication thread and the threads Open MPI starts from it (its PMIx and event "
                          "threads) run 7 nice levels above the job";
}

TEST_F(MpiTest, AKilledRankEndsTheJobNamingItAndResumeFinishesTheJob) {
  const fs::path m = small_training_manifest(dir.path(), 1024, 40, "mpi");
  {
    auto doc = nlohmann::json::parse(read_file(m));
    doc["train"]["checkpoint"]["every_steps"] = 5;  // so a resume may start inside an epoch
    write_file(m, doc.dump(2));
  }
  const auto whole = run(mpirun_line(2, run_line(m, "whole")));
  ASSERT_EQ(whole.exit_code, 0) << whole.output;

  auto job = start_job(2, {"run", m.string(), "--set", "/train/checkpoint/dir=" + (dir / "part").string()}, "job.log");
  const pid_t rank1 = rank_one_once_training(*job, dir / "part");
  ASSERT_GT(rank1, 0) << "the job did not start training within 60 s:\n" << read_file(dir / "job.log");
  ::kill(rank1, SIGKILL);
  const auto killed_at = Clock::now();
  const auto code = job->wait_for(10s);
  ASSERT_TRUE(code.has_value()) << "the job still runs 10 s after rank 1 was killed";
  RecordProperty("seconds_to_end", std::to_string(std::chrono::duration<double>(Clock::now() - killed_at).count()));
  const std::string log = read_file(dir / "job.log");
  EXPECT_NE(*code, 0) << log;
  EXPECT_NE(log.find("process rank 1"), std::string::npos) << log;
  EXPECT_NE(log.find("signal 9"), std::string::npos) << log;
  ASSERT_FALSE(same_bits(parameters_in(dir / "part"), parameters_in(dir / "whole"))) << "killed after the end";

  const auto resumed = run(mpirun_line(2, run_line(m, "part", " --resume")));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  EXPECT_TRUE(same_bits(parameters_in(dir / "part"), parameters_in(dir / "whole")))
      << "a resumed two-rank job ends bit for bit where the uninterrupted one does";
}

TEST_F(MpiTest, RanksWithDifferentManifestsAreRefusedNamingTheDifference) {
  const fs::path m = small_training_manifest(dir.path(), 1024, 3, {{"type", "mpi"}, {"timeout_s", 30}});
  // One job, two programs (mpirun's "A : B"): rank 1 runs with another global batch.
  const auto start = Clock::now();
  const auto r = run("timeout 60 " + mpirun_line(1, run_line(m, "c")) + " : -np 1 " + quote(host_binary().string()) +
                     " " + run_line(m, "c", " --set /data/train/batch=128"));
  EXPECT_LT(std::chrono::duration<double>(Clock::now() - start).count(), 30.0) << "ranks that disagree must not hang";
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("the ranks disagree on the global batch (data.train.batch): rank 1 differs from rank 0"),
            std::string::npos)
      << r.output;
  EXPECT_FALSE(core::latest_checkpoint(dir / "c").has_value()) << "nothing was trained";
}

TEST_F(MpiTest, MpiRanksComeFromMpirunNotFromTheLocalLauncherAndSingleIsRefusedUnderMpirun) {
  const fs::path m = small_training_manifest(dir.path(), 256, 1);
  const auto nproc = run(quote(host_binary().string()) + " " + run_line(m, "c", " --nproc 2 --set /train/strategy=mpi"));
  EXPECT_EQ(nproc.exit_code, 2) << nproc.output;
  EXPECT_NE(nproc.output.find("train.json#/train/strategy: the mpi strategy's ranks are started by mpirun"),
            std::string::npos)
      << nproc.output;

  const auto single = run(mpirun_line(2, run_line(m, "c", " --set /train/strategy=single")));
  EXPECT_EQ(single.exit_code, 2) << single.output;
  EXPECT_NE(single.output.find("\"single\" trains in one process, but mpirun started 2 ranks"), std::string::npos)
      << single.output;

  // Unknown words are refused like any strategy's: rank and size are MPI's to give.
  const auto words = run(mpirun_line(2, run_line(m, "c", " --set '/train/strategy={\"type\":\"mpi\",\"rank\":0}'")));
  EXPECT_EQ(words.exit_code, 2) << words.output;
  EXPECT_NE(words.output.find("train.json#/train/strategy/rank"), std::string::npos) << words.output;
  EXPECT_FALSE(core::latest_checkpoint(dir / "c").has_value());
}

}  // namespace
}  // namespace ramjet::test
