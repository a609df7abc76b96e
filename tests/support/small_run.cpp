#include "small_run.hpp"

namespace ramjet::test {
namespace {

nlohmann::json idx_source(const char* images, const char* labels) {
  return {{"type", "idx"},
          {"images", fashion_mnist(images).string()},
          {"labels", fashion_mnist(labels).string()},
          {"num_classes", 10}};
}

}  // namespace

nlohmann::json small_run_manifest(const SmallRun& run) {
  const nlohmann::json normalize = {{{"type", "normalize"}, {"scale", 1.0 / 255}}};
  nlohmann::json data = {{"train",
                          {{"source", idx_source("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")},
                           {"map", normalize},
                           {"take", run.train_take},
                           {"shuffle", run.train_take},
                           {"batch", run.train_batch}}}};
  if (run.eval_take > 0)
    data["eval"] = {{"source", idx_source("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")},
                    {"map", normalize},
                    {"take", run.eval_take},
                    {"batch", run.eval_batch}};
  return {{"seed", run.seed},
          {"data", data},
          {"model",
           {{"input", {{"image", {28, 28, 1}}}},
            {"layers", {{{"type", "flatten"}}, {{"type", "dense"}, {"units", 10}}}},
            {"loss", {{"type", "sparse_softmax_cross_entropy"}}}}},
          {"train",
           {{"backend", "linear"}, {"optimizer", {{"type", "sgd"}, {"learning_rate", 0.05}}}, {"epochs", run.epochs}}}};
}

CommandResult host_with_fixtures(const std::string& args) {
  const std::string path = fixture_dir("linear_backend").string() + ":" + fixture_dir("mirror_fixture").string() + ":" +
                           stock_plugin_dir().string();
  return run("env RAMJET_PLUGIN_PATH=" + quote(path) + " " + quote(host_binary().string()) + " " + args);
}

}  // namespace ramjet::test
