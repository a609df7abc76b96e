#include "loop_share.hpp"

#include <immintrin.h>
#include <linux/futex.h>
#include <omp.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace onednn {
namespace {

// How long a finished thread watches a late one before judging whether it runs: long beside the wake-up of a
// sleeping thread, short beside the slice another process holds a CPU for (milliseconds).
constexpr int64_t kWatchNs = 20'000;
// A late thread that got less CPU time than this share of the watch is waiting for its CPU.
constexpr int64_t kRunningNs = kWatchNs / 4;
// Past this the finished thread leaves the wait to the region's barrier: a guard, never reached in a sound team.
constexpr int64_t kGiveUpNs = 50'000'000;

int64_t clock_ns(clockid_t clock) {
  timespec t{};
  if (clock_gettime(clock, &t) != 0) return -1;
  return t.tv_sec * 1'000'000'000LL + t.tv_nsec;
}
int64_t now_ns() { return clock_ns(CLOCK_MONOTONIC); }

// Whether `count` comes before `loop`, counting as they wrap.
bool loop_before(uint32_t count, uint32_t loop) { return static_cast<int32_t>(count - loop) < 0; }

pid_t this_thread_id() {
  static thread_local const pid_t id = gettid();
  return id;
}

bool pin_to(pid_t tid, int cpu) {
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  return sched_setaffinity(tid, sizeof one, &one) == 0;
}

// Sleeps while *word == value, 1 ms at most.
void futex_wait(std::atomic<uint32_t>& word, uint32_t value) {
  const timespec timeout{0, 1'000'000};
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAIT_PRIVATE, value, &timeout, nullptr, 0);
}
void futex_wake(std::atomic<uint32_t>& word) {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word), FUTEX_WAKE_PRIVATE, INT32_MAX, nullptr, nullptr, 0);
}

thread_local PinnedTeam started_team;
thread_local PinnedTeam* pinned_for = nullptr;

}  // namespace

PinnedTeam& own_team() { return started_team; }
PinnedTeam*& pinned_team() { return pinned_for; }

LoopTicket::LoopTicket() : team(pinned_for), loop(pinned_for ? ++pinned_for->loops : 0) {}

LoopShare::LoopShare(const LoopTicket& ticket) {
  PinnedTeam* team = ticket.team;
  if (team == nullptr || omp_get_level() != 1 || omp_get_num_threads() != team->size) return;
  team_ = team;
  lane_ = omp_get_thread_num();
  loop_ = ticket.loop;
  PinnedTeam::Lane& me = team->lanes[lane_];
  const pid_t tid = this_thread_id();
  // A thread new to the lane started on its master's CPU.
  const bool new_thread = me.tid.load(std::memory_order_relaxed) != tid;
  if (me.moved.exchange(false) || new_thread) pin_to(0, team->cpu[lane_]);
  if (new_thread) {
    clockid_t clock = CLOCK_THREAD_CPUTIME_ID;
    pthread_getcpuclockid(pthread_self(), &clock);
    me.clock.store(clock, std::memory_order_relaxed);
    me.tid.store(tid, std::memory_order_relaxed);
  }
  me.entered.store(loop_, std::memory_order_release);  // the lane's tid and clock are this thread's from here
}

LoopShare::~LoopShare() {
  if (team_ == nullptr) return;
  PinnedTeam::Lane& me = team_->lanes[lane_];
  me.finished.store(loop_);
  if (me.sleeper.exchange(false)) futex_wake(me.finished);
  for (int j = 0; j < team_->size; ++j)
    if (j != lane_) wait_for(team_->lanes[j]);
}

void LoopShare::wait_for(PinnedTeam::Lane& other) const {
  const int64_t give_up = now_ns() + kGiveUpNs;
  while (loop_before(other.finished.load(), loop_)) {
    // Only a thread inside this loop is judged and moved: before it has entered, the lane's tid may still be a
    // thread libgomp has since replaced.
    const bool inside = other.entered.load(std::memory_order_acquire) == loop_;
    const clockid_t clock = other.clock.load(std::memory_order_relaxed);
    const int64_t ran = inside ? clock_ns(clock) : -1, start = now_ns();
    int64_t now = start;
    while (loop_before(other.finished.load(std::memory_order_acquire), loop_) && now - start < kWatchNs) {
      for (int k = 0; k < 16; ++k) _mm_pause();
      now = now_ns();
    }
    if (!loop_before(other.finished.load(), loop_) || now > give_up) return;
    if (ran < 0 || clock_ns(clock) - ran >= kRunningNs) continue;  // outside, or it runs: watch on
    // It waits for its CPU, and this one would idle at the barrier: bring it here, and sleep until it has finished.
    other.moved = true;
    pin_to(other.tid.load(std::memory_order_relaxed), team_->cpu[lane_]);
    for (uint32_t seen = other.finished.load(); loop_before(seen, loop_) && now_ns() < give_up;
         seen = other.finished.load()) {
      other.sleeper.store(true);
      futex_wait(other.finished, seen);  // returns at once where `finished` moved past `seen` meanwhile
    }
    return;
  }
}

}  // namespace onednn
