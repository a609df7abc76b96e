#include "ramjet/data/cache_fingerprint.hpp"

#include "ramjet/data/file_pattern.hpp"

#include <sys/stat.h>

#include <string>

namespace ramjet::core {
namespace {

class Hasher {
 public:
  void add(std::string_view bytes) {
    for (unsigned char c : bytes) h_ = (h_ ^ c) * 0x100000001B3ull;
    h_ = (h_ ^ 0xff) * 0x100000001B3ull;  // field separator
  }
  void add(uint64_t v) { add(std::string_view(reinterpret_cast<const char*>(&v), sizeof v)); }
  uint64_t value() const { return h_; }

 private:
  uint64_t h_ = 0xCBF29CE484222325ull;  // FNV-1a
};

void add_file_state(Hasher& h, const std::filesystem::path& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return;
  h.add(path.string());
  h.add(static_cast<uint64_t>(st.st_size));
  h.add(static_cast<uint64_t>(st.st_mtim.tv_sec) * 1000000000ull + static_cast<uint64_t>(st.st_mtim.tv_nsec));
}

// Every path a glob(3) pattern matches now, with each one's state: a file added, removed or changed under the
// pattern changes the fingerprint (sources such as `text` and `tfrecord` take patterns).
void add_pattern_matches(Hasher& h, const std::filesystem::path& pattern) {
  h.add(pattern.string());
  for (const std::string& match : pattern_matches(pattern.string(), pattern.string())) add_file_state(h, match);
}

// Strings in the configuration that name existing files or folders, or are patterns that match some.
void add_named_files(Hasher& h, const nlohmann::json& value, const std::filesystem::path& base_dir) {
  if (value.is_string()) {
    std::filesystem::path p = value.get<std::string>();
    if (p.empty()) return;
    if (p.is_relative()) p = base_dir / p;
    std::error_code ec;
    if (is_file_pattern(value.get<std::string>()) && !std::filesystem::exists(p, ec)) {
      add_pattern_matches(h, p);
    } else if (std::filesystem::is_regular_file(p, ec)) {
      add_file_state(h, p);
    } else if (std::filesystem::is_directory(p, ec)) {
      add_file_state(h, p);
      for (const auto& entry : std::filesystem::directory_iterator(p, ec))
        if (entry.is_directory(ec)) add_file_state(h, entry.path());
    }
  } else if (value.is_structured()) {
    for (const auto& item : value) add_named_files(h, item, base_dir);
  }
}

}  // namespace

uint64_t upstream_fingerprint(const PipelineSpec& spec, const std::filesystem::path& base_dir, uint64_t seed,
                              const std::vector<const ComponentInstance*>& components) {
  Hasher h;
  h.add("ramjet-cache-v1");
  h.add(spec.source.config.dump());
  for (const auto& m : spec.map) h.add(m.config.dump());
  for (const auto* c : components) {
    h.add(c->ref().library->manifest().name);
    h.add(c->ref().library->manifest().version);
  }
  h.add(static_cast<uint64_t>(spec.take));
  h.add(static_cast<uint64_t>(spec.shard_count));
  h.add(static_cast<uint64_t>(spec.shard_index));
  if (spec.even_shards) h.add("even-shards");
  h.add(seed);
  add_named_files(h, spec.source.config, base_dir);
  return h.value();
}

}  // namespace ramjet::core
