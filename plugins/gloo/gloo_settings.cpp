#include "gloo_settings.hpp"

namespace ramjet_gloo {

using ramjet::Field;

ramjet::Fields Settings::fields() {
  ramjet::Fields fields{
      Field::string("rendezvous").one_of({"tcp", "file"}).fallback("tcp")
          .doc("tcp: rank 0 serves a key-value store at master_addr:master_port; file: a directory every rank sees"),
      Field::string("dir").doc("the file store's directory (rendezvous \"file\"); relative to the manifest")};
  const ramjet::Fields shared = ramjet::net::rendezvous_fields();  // a named object: the loop must not outlive it
  for (const auto& f : shared.list()) fields.add(f);
  fields.add(Field::string("hostname").doc("address this rank binds for gloo's connections; default: the address "
                                           "that reaches master_addr"));
  fields.add(Field::string("interface").doc("network interface to bind instead of hostname (e.g. eth0)"));
  fields.add(ramjet::priority_boost_field());
  return fields;
}

void Settings::check(const nlohmann::json& config, ramjet::Problems& problems) {
  if (config.value("rendezvous", "tcp") == "file" && !config.contains("dir"))
    problems.push_back({"/dir", "required with rendezvous \"file\": the directory every rank shares"});
  ramjet::net::check_rendezvous(config, problems);
  if (config.contains("hostname") && config.contains("interface"))
    problems.push_back({"/interface", "give hostname or interface, not both"});
}

Settings Settings::read(const ramjet::Config& config) {
  const nlohmann::json c = fields().with_defaults(config.json());
  Settings s;
  s.rendezvous = c.at("rendezvous").get<std::string>();
  const ramjet::net::Rendezvous r = ramjet::net::read_rendezvous(config, s.rendezvous == "tcp");
  s.rank = r.rank;
  s.world_size = r.world_size;
  s.master_addr = r.master_addr;
  s.master_port = r.master_port;
  s.timeout = r.timeout;
  s.hostname = c.value("hostname", std::string());
  s.interface = c.value("interface", std::string());
  s.priority_boost = c.at("priority_boost").get<int>();
  if (s.rendezvous == "file") s.dir = config.path("dir").string();
  return s;
}

}  // namespace ramjet_gloo
