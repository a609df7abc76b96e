// The gloo strategy's words (train.strategy when its type is "gloo"), read and defaulted here only. Rank, world
// size and the rendezvous address come from the manifest or, as with PyTorch's env:// launch, from RANK,
// WORLD_SIZE, MASTER_ADDR and MASTER_PORT; a field written in the manifest wins over the environment.
#pragma once

#include <ramjet/sdk.hpp>
#include <ramjet/sdk/rendezvous.hpp>

#include <chrono>
#include <string>

namespace ramjet_gloo {

struct Settings {
  int rank = 0;
  int world_size = 1;
  std::string rendezvous = "tcp";  // "tcp": rank 0 serves a key-value store; "file": a directory all ranks share
  std::string dir;                 // the file store's directory
  std::string master_addr;         // the tcp store's host
  int master_port = 0;
  std::string hostname;            // address this rank's gloo device binds (gloo's tcp attr hostname)
  std::string interface;           // or the network interface to bind (gloo's tcp attr iface)
  std::chrono::milliseconds timeout{0};
  int priority_boost = 10;         // nice levels gloo's threads run above the process (ramjet/sdk/raised_priority.hpp)

  static ramjet::Fields fields();
  static void check(const nlohmann::json& config, ramjet::Problems& problems);
  // Reads the configuration (already checked against fields()) and the environment; throws ramjet::Error naming
  // the field and the variable when something needed is missing or out of range.
  static Settings read(const ramjet::Config& config);
};

using ramjet::net::kDefaultTimeoutSeconds;
using ramjet::net::seconds_text;

}  // namespace ramjet_gloo
