// The nccl strategy's words (train.strategy when its type is "nccl"), read and defaulted here only: the
// rendezvous every strategy shares (rank, world size, rank 0's store at master_addr:master_port, from the manifest
// or PyTorch's env:// variables; ramjet/sdk/rendezvous.hpp) and the GPU this rank drives.
#pragma once

#include <ramjet/sdk.hpp>
#include <ramjet/sdk/rendezvous.hpp>

#include <optional>

namespace ramjet_nccl {

struct Settings {
  ramjet::net::Rendezvous rendezvous;
  // One process per GPU: the ordinal from the manifest, else LOCAL_RANK (what `ramjet run --nproc`, torchrun and
  // Open MPI's launchers set), else the rank modulo the GPUs this process sees (resolved when the device is open).
  std::optional<int> device;

  static ramjet::Fields fields();
  static void check(const nlohmann::json& config, ramjet::Problems& problems);
  static Settings read(const ramjet::Config& config);
};

}  // namespace ramjet_nccl
