// The mpi strategy's words (train.strategy when its type is "mpi"), read and defaulted here only. Rank and world
// size are MPI's own (mpirun or the cluster's scheduler sets them), so the manifest has none to give.
#pragma once

#include <ramjet/sdk.hpp>
#include <ramjet/sdk/rendezvous.hpp>

#include <chrono>
#include <string>

namespace ramjet_mpi {

struct Settings {
  std::chrono::milliseconds timeout{0};
  int priority_boost = 10;  // nice levels the communication thread runs above the rest (ramjet/sdk/raised_priority.hpp)

  static ramjet::Fields fields();
  // Reads the configuration, already checked against fields().
  static Settings read(const ramjet::Config& config);
};

// The same default as every strategy's (ramjet/sdk/rendezvous.hpp), and the same way of writing seconds.
using ramjet::net::kDefaultTimeoutSeconds;
using ramjet::net::seconds_text;

}  // namespace ramjet_mpi
