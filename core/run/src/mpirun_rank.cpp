#include "ramjet/run/mpirun_rank.hpp"

#include "ramjet/plugin/failure.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <thread>

namespace ramjet::core {
namespace {

int positive_environment_integer(const char* name) {
  const char* text = std::getenv(name);
  if (text == nullptr) return 0;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  return end != text && *end == '\0' && value > 0 && value < (1L << 24) ? static_cast<int>(value) : 0;
}

}  // namespace

int mpirun_world_size() { return positive_environment_integer("OMPI_COMM_WORLD_SIZE"); }

void adopt_mpirun_rank(PipelineManifest& manifest) {
  const int world = mpirun_world_size();
  if (world < 2 || !manifest.doc.is_object() || !manifest.doc.contains("train")) return;
  nlohmann::json& train = manifest.doc["train"];
  if (train.is_object() && !train.contains("strategy")) train["strategy"] = "mpi";
  else if (train.is_object() && train["strategy"] == "single")
    throw InvalidInput(manifest.where("/train/strategy") + ": \"single\" trains in one process, but mpirun started " +
                       std::to_string(world) + " ranks of this job; name \"mpi\" (or leave train.strategy out)");
  if (std::getenv("OMP_NUM_THREADS") == nullptr) {
    const int here = std::max(1, positive_environment_integer("OMPI_COMM_WORLD_LOCAL_SIZE"));
    const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const std::string share = std::to_string(std::max(1, cores / here));
    ::setenv("OMP_NUM_THREADS", share.c_str(), 1);
    ::setenv("RAMJET_CPUS", share.c_str(), 1);
  }
}

}  // namespace ramjet::core
