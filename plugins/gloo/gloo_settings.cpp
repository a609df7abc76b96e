#include "gloo_settings.hpp"

#include <cstdio>
#include <cstdlib>
#include <optional>

namespace ramjet_gloo {
namespace {

using ramjet::Field;

std::optional<std::string> environment(const char* name) {
  const char* value = std::getenv(name);
  if (value == nullptr || *value == '\0') return std::nullopt;
  return std::string(value);
}

// An integer from the configuration, else from the environment variable; nullopt when neither has it.
std::optional<int64_t> integer_setting(const ramjet::Config& config, const char* field, const char* variable) {
  if (config.has(field)) return config.get<int64_t>(field);
  const auto text = environment(variable);
  if (!text) return std::nullopt;
  char* end = nullptr;
  const long long value = std::strtoll(text->c_str(), &end, 10);
  if (end == text->c_str() || *end != '\0')
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT,
                        config.where(field) + ": the environment's " + variable + "='" + *text + "' is not an integer");
  return value;
}

std::optional<std::string> string_setting(const ramjet::Config& config, const char* field, const char* variable) {
  if (config.has(field)) return config.get<std::string>(field);
  return environment(variable);
}

ramjet::Error missing(const ramjet::Config& config, const char* field, const char* variable, const std::string& why) {
  return ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT,
                       config.where(field) + ": not set; " + why + " (write the field, set " + variable +
                           ", or start the ranks with `ramjet run MANIFEST --nproc N`)");
}

}  // namespace

std::string seconds_text(std::chrono::milliseconds duration) {
  char text[32];
  std::snprintf(text, sizeof text, "%g s", static_cast<double>(duration.count()) / 1000.0);
  return text;
}

ramjet::Fields Settings::fields() {
  return {Field::string("rendezvous").one_of({"tcp", "file"}).fallback("tcp")
              .doc("tcp: rank 0 serves a key-value store at master_addr:master_port; file: a directory every rank sees"),
          Field::string("dir").doc("the file store's directory (rendezvous \"file\"); relative to the manifest"),
          Field::string("master_addr").doc("host of rank 0's store; default: the environment's MASTER_ADDR"),
          Field::integer("master_port").at_least(1).at_most(65535).doc("default: the environment's MASTER_PORT"),
          Field::integer("rank").at_least(0).doc("this process's rank; default: the environment's RANK"),
          Field::integer("world_size").at_least(1).doc("how many ranks; default: the environment's WORLD_SIZE"),
          Field::number("timeout_s").above(0).at_most(7 * 24 * 3600).fallback(kDefaultTimeoutSeconds)
              .doc("seconds a collective or the rendezvous may wait for a peer before failing"),
          Field::string("hostname").doc("address this rank binds for gloo's connections; default: the address that "
                                        "reaches master_addr"),
          Field::string("interface").doc("network interface to bind instead of hostname (e.g. eth0)")};
}

void Settings::check(const nlohmann::json& config, ramjet::Problems& problems) {
  if (config.value("rendezvous", "tcp") == "file" && !config.contains("dir"))
    problems.push_back({"/dir", "required with rendezvous \"file\": the directory every rank shares"});
  if (config.contains("rank") && config.contains("world_size") &&
      config["rank"].get<int64_t>() >= config["world_size"].get<int64_t>())
    problems.push_back({"/rank", "must be below world_size (" + config["world_size"].dump() + "), got " +
                                     config["rank"].dump()});
  if (config.contains("hostname") && config.contains("interface"))
    problems.push_back({"/interface", "give hostname or interface, not both"});
}

Settings Settings::read(const ramjet::Config& config) {
  const nlohmann::json c = fields().with_defaults(config.json());
  Settings s;
  const auto world = integer_setting(config, "world_size", "WORLD_SIZE");
  if (!world) throw missing(config, "world_size", "WORLD_SIZE", "how many ranks train together");
  if (*world < 1 || *world > 65536)
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT,
                        config.where("world_size") + ": must be from 1 to 65536, got " + std::to_string(*world));
  const auto rank = integer_setting(config, "rank", "RANK");
  if (!rank) throw missing(config, "rank", "RANK", "which of the " + std::to_string(*world) + " ranks this process is");
  if (*rank < 0 || *rank >= *world)
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, config.where("rank") + ": must be from 0 to " +
                                                         std::to_string(*world - 1) + " (world_size " +
                                                         std::to_string(*world) + "), got " + std::to_string(*rank));
  s.world_size = static_cast<int>(*world);
  s.rank = static_cast<int>(*rank);
  s.rendezvous = c.at("rendezvous").get<std::string>();
  s.timeout = std::chrono::milliseconds(static_cast<int64_t>(c.at("timeout_s").get<double>() * 1000.0 + 0.5));
  s.hostname = c.value("hostname", std::string());
  s.interface = c.value("interface", std::string());
  if (s.rendezvous == "file") {
    s.dir = config.path("dir").string();
  } else if (s.world_size > 1) {
    auto addr = string_setting(config, "master_addr", "MASTER_ADDR");
    if (!addr) throw missing(config, "master_addr", "MASTER_ADDR", "the host where rank 0 serves the rendezvous store");
    s.master_addr = *addr;
    const auto port = integer_setting(config, "master_port", "MASTER_PORT");
    if (!port) throw missing(config, "master_port", "MASTER_PORT", "the port where rank 0 serves the rendezvous store");
    if (*port < 1 || *port > 65535)
      throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT,
                          config.where("master_port") + ": must be from 1 to 65535, got " + std::to_string(*port));
    s.master_port = static_cast<int>(*port);
  }
  return s;
}

}  // namespace ramjet_gloo
