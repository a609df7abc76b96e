// The one clock the trainer and its gradient buckets time steps, epochs and waits with.
#pragma once

#include <chrono>

namespace ramjet::core {

using Clock = std::chrono::steady_clock;

inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

}  // namespace ramjet::core
