// `ramjet run MANIFEST --nproc N`: N local ranks of this same program, each a child process told its place the
// way PyTorch's env:// launch does (RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, LOCAL_RANK), each given
// cores / N threads, their output lines prefixed with "[rank K] ". When one rank fails the others are ended and
// the launcher exits with the first failure's code.
#pragma once

#include "ramjet/plan/pipeline_manifest.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace ramjet::core {

struct LaunchOptions {
  int nproc = 1;
  // The arguments each rank runs with (after the program name), the same for every rank...
  std::vector<std::string> args;
  // ...except these, which ranks above 0 get with ".rank<K>" appended to the next argument (per-rank outputs such
  // as --trace FILE).
  std::vector<std::string> per_rank_file_flags;
  int threads_per_rank = 1;
  // --trace FILE: when every rank succeeded, the others' FILE.rank<K> are merged into FILE (one track per rank).
  std::optional<std::filesystem::path> trace;
};

// What `ramjet run ARGS --nproc N` starts: every rank runs `run` with ARGS less --nproc. A manifest that names no
// train.strategy gets "gloo" (written into `manifest`, and passed to the ranks as a --set); "single" and "mpi"
// (whose ranks mpirun starts) are refused, and so is a manifest without a train section. Each rank gets cores / N threads. Throws InvalidInput.
LaunchOptions local_launch(const std::vector<std::string>& run_args, PipelineManifest& manifest, int nproc);

// Runs the ranks to the end. Returns 0 when all succeeded, else the first failure's exit code (128 + the signal
// for a rank killed by a signal). Throws RuntimeFailure when a rank cannot be started.
int launch_local_ranks(const LaunchOptions& options);

}  // namespace ramjet::core
