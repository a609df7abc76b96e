#include "ramjet/train/checkpoint.hpp"

#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/log.hpp"
#include "ramjet/train/safetensors.hpp"

#include <algorithm>
#include <cstdio>
#include <vector>

namespace ramjet::core {
namespace {

constexpr const char* kFormat = "ramjet-checkpoint-1";
constexpr const char* kParam = "param/";
constexpr const char* kOptimizer = "optimizer/";
constexpr const char* kBest = "best/";

std::vector<std::pair<int64_t, std::filesystem::path>> checkpoints_in(const std::filesystem::path& dir) {
  std::vector<std::pair<int64_t, std::filesystem::path>> found;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    long long step;
    char tail[32];
    if (std::sscanf(name.c_str(), "ckpt-%lld.%31s", &step, tail) == 2 && std::string(tail) == "safetensors")
      found.emplace_back(step, entry.path());
  }
  std::sort(found.begin(), found.end());
  return found;
}

void add_prefixed(Example& out, const char* prefix, const Example& in) {
  for (const auto& e : in.entries) {
    const DLTensor& t = e.tensor->dl_tensor;
    TensorPtr copy = make_tensor(t.dtype, std::span<const int64_t>(t.shape, static_cast<size_t>(t.ndim)), false);
    std::memcpy(copy->dl_tensor.data, first_byte(t), byte_size(t));
    out.set(prefix + e.name, std::move(copy));
  }
}

}  // namespace

std::filesystem::path save_checkpoint(const std::filesystem::path& dir, const Checkpoint& c, int64_t keep) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw RuntimeFailure(dir.string() + ": cannot create the checkpoint directory: " + ec.message());
  Example tensors;
  add_prefixed(tensors, kParam, c.parameters);
  add_prefixed(tensors, kOptimizer, c.optimizer);
  add_prefixed(tensors, kBest, c.best_parameters);
  char name[64];
  std::snprintf(name, sizeof name, "ckpt-%012lld.safetensors", static_cast<long long>(c.step));
  const auto path = dir / name;
  write_safetensors(path, tensors,
                    {{"format", kFormat},
                     {"step", std::to_string(c.step)},
                     {"pipeline", c.pipeline.to_json().dump()},
                     {"trainer", c.trainer.dump()}});
  auto all = checkpoints_in(dir);
  for (size_t i = 0; i + static_cast<size_t>(keep) < all.size(); ++i) std::filesystem::remove(all[i].second, ec);
  return path;
}

std::optional<std::filesystem::path> latest_checkpoint(const std::filesystem::path& dir) {
  auto all = checkpoints_in(dir);
  if (all.empty()) return std::nullopt;
  return all.back().second;
}

Checkpoint load_checkpoint(const std::filesystem::path& path) {
  TensorFile file = read_safetensors(path);
  auto meta = [&](const char* key) -> const std::string& {
    auto it = file.metadata.find(key);
    if (it == file.metadata.end()) throw InvalidInput(path.string() + ": not a ramjet checkpoint (no '" + key + "' metadata)");
    return it->second;
  };
  if (meta("format") != kFormat) throw InvalidInput(path.string() + ": unknown checkpoint format '" + meta("format") + "'");
  Checkpoint c;
  try {
    c.step = std::stoll(meta("step"));
    const auto pipeline = nlohmann::json::parse(meta("pipeline"));
    c.pipeline = {pipeline.at("epoch").get<int64_t>(), pipeline.at("position").get<int64_t>()};
    c.trainer = nlohmann::json::parse(meta("trainer"));
  } catch (const InvalidInput&) {
    throw;
  } catch (const std::exception& e) {
    throw InvalidInput(path.string() + ": damaged checkpoint metadata: " + e.what());
  }
  for (auto& e : file.tensors.entries) {
    if (e.name.rfind(kParam, 0) == 0) c.parameters.set(e.name.substr(std::strlen(kParam)), std::move(e.tensor));
    else if (e.name.rfind(kOptimizer, 0) == 0) c.optimizer.set(e.name.substr(std::strlen(kOptimizer)), std::move(e.tensor));
    else if (e.name.rfind(kBest, 0) == 0) c.best_parameters.set(e.name.substr(std::strlen(kBest)), std::move(e.tensor));
  }
  log(RAMJET_LOG_INFO, "checkpoint", "loaded " + path.string() + " (step " + std::to_string(c.step) + ")");
  return c;
}

}  // namespace ramjet::core
