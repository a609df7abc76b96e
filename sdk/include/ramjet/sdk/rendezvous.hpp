// How a distributed strategy's ranks find each other, in the words every strategy shares: rank, world size and
// rank 0's store address, from the manifest or, as with PyTorch's env:// launch, from RANK, WORLD_SIZE,
// MASTER_ADDR and MASTER_PORT (a field written in the manifest wins over the environment), and the timeout every
// wait for a peer has. A strategy adds its own fields to rendezvous_fields() and reads these with read_rendezvous.
#ifndef RAMJET_SDK_RENDEZVOUS_HPP
#define RAMJET_SDK_RENDEZVOUS_HPP

#include <ramjet/sdk/config.hpp>
#include <ramjet/sdk/error.hpp>
#include <ramjet/sdk/fields.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

namespace ramjet::net {

// The status of a failed rendezvous or collective: a runtime failure (exit 1), not bad input. The ABI has no status
// for a lost peer yet; RAMJET_ERR_DEVICE ("the accelerator or its runtime failed") is the nearest, and the host
// treats it as a runtime failure.
inline constexpr ramjet_status kPeerFailure = RAMJET_ERR_DEVICE;

// The seconds a collective may wait for its peers before it fails. PyTorch's default is 30 minutes; ramjet's
// ranks only ever wait on each other for a step's work plus rank 0's checkpoint writes, so 5 minutes is long
// enough for a slow step and short enough that a stalled job is noticed while someone still watches it.
inline constexpr double kDefaultTimeoutSeconds = 300;

struct Rendezvous {
  int rank = 0;
  int world_size = 1;
  std::string master_addr;  // rank 0's store; empty when not needed (one rank, or another rendezvous)
  int master_port = 0;
  std::chrono::milliseconds timeout{0};
};

// "3 s", "2.5 s" for messages.
inline std::string seconds_text(std::chrono::milliseconds duration) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", static_cast<double>(duration.count()) / 1000.0);
  return text;
}

inline Fields rendezvous_fields() {
  return {Field::string("master_addr").doc("host of rank 0's store; default: the environment's MASTER_ADDR"),
          Field::integer("master_port").at_least(1).at_most(65535).doc("default: the environment's MASTER_PORT"),
          Field::integer("rank").at_least(0).doc("this process's rank; default: the environment's RANK"),
          Field::integer("world_size").at_least(1).doc("how many ranks; default: the environment's WORLD_SIZE"),
          Field::number("timeout_s").above(0).at_most(7 * 24 * 3600).fallback(kDefaultTimeoutSeconds)
              .doc("seconds a collective or the rendezvous may wait for a peer before failing")};
}

// What the fields alone cannot say: a rank below the world size.
inline void check_rendezvous(const nlohmann::json& config, Problems& problems) {
  if (config.contains("rank") && config.contains("world_size") && config["rank"].is_number_integer() &&
      config["world_size"].is_number_integer() && config["rank"].get<int64_t>() >= config["world_size"].get<int64_t>())
    problems.push_back({"/rank", "must be below world_size (" + config["world_size"].dump() + "), got " +
                                     config["rank"].dump()});
}

namespace detail {

inline std::optional<std::string> environment(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

// An integer from the configuration, else from the environment variable; nullopt when neither has it.
inline std::optional<int64_t> integer_setting(const Config& config, const char* field, const char* variable) {
  if (config.has(field)) return config.get<int64_t>(field);
  const auto text = environment(variable);
  if (!text) return std::nullopt;
  char* end = nullptr;
  const long long value = std::strtoll(text->c_str(), &end, 10);
  if (end == text->c_str() || *end != '\0')
    throw Error(RAMJET_ERR_INVALID_ARGUMENT,
                config.where(field) + ": the environment's " + variable + "='" + *text + "' is not an integer");
  return value;
}

inline Error missing(const Config& config, const char* field, const char* variable, const std::string& why) {
  return Error(RAMJET_ERR_INVALID_ARGUMENT, config.where(field) + ": not set; " + why + " (write the field, set " +
                                                variable + ", or start the ranks with `ramjet run MANIFEST --nproc N`)");
}

}  // namespace detail

// Reads the configuration (already checked against rendezvous_fields()) and the environment; `needs_store`: a
// world of several ranks meets at rank 0's TCP store (master_addr, master_port). Throws ramjet::Error naming the
// field and the variable when something needed is missing or out of range.
inline Rendezvous read_rendezvous(const Config& config, bool needs_store) {
  Rendezvous r;
  const auto world = detail::integer_setting(config, "world_size", "WORLD_SIZE");
  if (!world) throw detail::missing(config, "world_size", "WORLD_SIZE", "how many ranks train together");
  if (*world < 1 || *world > 65536)
    throw Error(RAMJET_ERR_INVALID_ARGUMENT,
                config.where("world_size") + ": must be from 1 to 65536, got " + std::to_string(*world));
  const auto rank = detail::integer_setting(config, "rank", "RANK");
  if (!rank)
    throw detail::missing(config, "rank", "RANK", "which of the " + std::to_string(*world) + " ranks this process is");
  if (*rank < 0 || *rank >= *world)
    throw Error(RAMJET_ERR_INVALID_ARGUMENT, config.where("rank") + ": must be from 0 to " + std::to_string(*world - 1) +
                                                 " (world_size " + std::to_string(*world) + "), got " +
                                                 std::to_string(*rank));
  r.world_size = static_cast<int>(*world);
  r.rank = static_cast<int>(*rank);
  const double timeout_s = config.get_or<double>("timeout_s", kDefaultTimeoutSeconds);
  r.timeout = std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000.0 + 0.5));
  if (needs_store && r.world_size > 1) {
    std::optional<std::string> addr =
        config.has("master_addr") ? std::optional(config.get<std::string>("master_addr")) : detail::environment("MASTER_ADDR");
    if (!addr)
      throw detail::missing(config, "master_addr", "MASTER_ADDR", "the host where rank 0 serves the rendezvous store");
    r.master_addr = *addr;
    const auto port = detail::integer_setting(config, "master_port", "MASTER_PORT");
    if (!port)
      throw detail::missing(config, "master_port", "MASTER_PORT", "the port where rank 0 serves the rendezvous store");
    if (*port < 1 || *port > 65535)
      throw Error(RAMJET_ERR_INVALID_ARGUMENT,
                  config.where("master_port") + ": must be from 1 to 65535, got " + std::to_string(*port));
    r.master_port = static_cast<int>(*port);
  }
  return r;
}

}  // namespace ramjet::net

#endif  // RAMJET_SDK_RENDEZVOUS_HPP
