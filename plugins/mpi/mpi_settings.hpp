// The mpi strategy's words (train.strategy when its type is "mpi"), read and defaulted here only. Rank and world
// size are MPI's own (mpirun or the cluster's scheduler sets them), so the manifest has none to give.
#pragma once

#include <ramjet/sdk.hpp>

#include <chrono>
#include <string>

namespace ramjet_mpi {

struct Settings {
  std::chrono::milliseconds timeout{0};

  static ramjet::Fields fields();
  // Reads the configuration, already checked against fields().
  static Settings read(const ramjet::Config& config);
};

// The same default as the gloo strategy's, for the same reason: long enough for a slow step and a checkpoint, short
// enough that a stalled job is noticed while someone still watches it.
inline constexpr double kDefaultTimeoutSeconds = 300;

// "3 s", "2.5 s" for messages.
std::string seconds_text(std::chrono::milliseconds duration);

}  // namespace ramjet_mpi
