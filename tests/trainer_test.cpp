// The trainer, driven through an exact reference backend (tests/fixtures/linear_backend.cpp): it learns, reports
// what the issue asks for, makes k accumulated micro-batches equal one k-times larger batch, clips, and resumes
// after SIGKILL to the same weights as an uninterrupted run.
#include "ramjet/plan/plan.hpp"
#include "ramjet/train/checkpoint.hpp"
#include "ramjet/plugin/failure.hpp"
#include "ramjet/model/graph.hpp"
#include "ramjet/train/trainer.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <sstream>
#include <thread>

using namespace ramjet::core;
using namespace ramjet::test;

namespace {

nlohmann::json manifest_doc(int64_t take, int64_t batch, int64_t epochs, const nlohmann::json& train_extra = {}) {
  auto source = [](const char* images, const char* labels) {
    return nlohmann::json{{"type", "idx"},
                          {"images", fashion_mnist(images).string()},
                          {"labels", fashion_mnist(labels).string()},
                          {"num_classes", 10}};
  };
  nlohmann::json doc = {
      {"seed", 5},
      {"data",
       {{"train",
         {{"source", source("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")},
          {"map", {{{"type", "normalize"}, {"scale", 1.0 / 255}}}},
          {"take", take},
          {"batch", batch}}},
        {"eval",
         {{"source", source("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")},
          {"map", {{{"type", "normalize"}, {"scale", 1.0 / 255}}}},
          {"take", 500},
          {"batch", 250}}}}},
      {"model",
       {{"input", {{"image", {28, 28, 1}}}},
        {"layers", {{{"type", "flatten"}}, {{"type", "dense"}, {"units", 10}}}},
        {"loss", {{"type", "sparse_softmax_cross_entropy"}}}}},
      {"train", {{"backend", "linear"}, {"optimizer", {{"type", "sgd"}, {"learning_rate", 0.1}}}, {"epochs", epochs}}}};
  for (const auto& [k, v] : train_extra.items()) doc["train"][k] = v;
  return doc;
}

class TrainerTest : public ::testing::Test {
 protected:
  PluginRegistry registry{
      DiscoveryOptions{{stock_plugin_dir(), fixture_dir("linear_backend"), fixture_dir("mirror_fixture")}, {}, {}}};
  TempDir dir;

  PipelineManifest write_manifest(const nlohmann::json& doc, const std::string& name = "m.json") {
    write_file(dir / name, doc.dump());
    return load_pipeline_manifest(dir / name);
  }
  Plan write(const nlohmann::json& doc, const std::string& name = "m.json") {
    return require_plan(write_manifest(doc, name), registry);
  }
  static std::vector<float> params_of(const std::filesystem::path& checkpoint) {
    Checkpoint c = load_checkpoint(checkpoint);
    std::vector<float> all;
    for (const auto& e : c.parameters.entries) {
      const float* v = static_cast<const float*>(e.tensor->dl_tensor.data);
      all.insert(all.end(), v, v + element_count(e.tensor->dl_tensor));
    }
    return all;
  }
};

}  // namespace

TEST_F(TrainerTest, LearnsAndReportsWhatUsersNeed) {
  auto report = train_model(write(manifest_doc(2048, 64, 3)), registry, TrainOptions{});
  const auto& t = report["train"];
  EXPECT_EQ(t["steps"], 96);
  EXPECT_EQ(t["epochs_run"], 3);
  EXPECT_EQ(t["precision"], "float32");
  EXPECT_EQ(t["strategy"]["name"], "single");
  EXPECT_GT(t["samples_per_s"].get<double>(), 0);
  EXPECT_GE(t["input_wait_fraction"].get<double>(), 0);
  EXPECT_LT(t["input_wait_fraction"].get<double>(), 1);
  EXPECT_GT(t["wall_s"].get<double>(), 0);
  const auto& h = t["history"];
  EXPECT_LT(h[2]["loss"].get<double>(), h[0]["loss"].get<double>());
  EXPECT_EQ(t["final_loss"], h[2]["loss"]);
  EXPECT_GT(report["eval"]["accuracy"].get<double>(), 0.6);  // softmax regression; chance is 0.1
  EXPECT_GT(report["eval"]["loss"].get<double>(), 0);
  EXPECT_TRUE(report["data"]["train"].contains("parallelism"));
}

TEST_F(TrainerTest, AccumulatedMicroBatchesEqualOneLargerBatch) {
  auto run = [&](int64_t batch, int64_t accumulate, const std::string& sub) {
    auto doc = manifest_doc(512, batch, 2, {{"accumulate", accumulate}, {"checkpoint", {{"dir", sub}}}});
    doc["data"].erase("eval");
    train_model(write(doc, sub + ".json"), registry, TrainOptions{});
    return params_of(*latest_checkpoint(dir / sub));
  };
  const auto big = run(128, 1, "big");
  const auto micro = run(32, 4, "micro");
  ASSERT_EQ(big.size(), micro.size());
  double worst = 0;
  for (size_t i = 0; i < big.size(); ++i) worst = std::max(worst, static_cast<double>(std::fabs(big[i] - micro[i])));
  EXPECT_LT(worst, 1e-5);
  const auto single = run(32, 1, "single");
  double differs = 0;
  for (size_t i = 0; i < big.size(); ++i) differs = std::max(differs, static_cast<double>(std::fabs(big[i] - single[i])));
  EXPECT_GT(differs, 1e-3) << "the comparison must be able to fail";
}

TEST_F(TrainerTest, ClippingBoundsTheUpdateByTheGlobalNorm) {
  auto doc = manifest_doc(256, 64, 1, {{"clip_norm", 0.01}, {"checkpoint", {{"dir", "c"}, {"every_steps", 1}}}});
  doc["train"]["optimizer"]["learning_rate"] = 1.0;
  doc["data"].erase("eval");
  TrainOptions o;
  o.stop_after_steps = 1;
  auto manifest = write(doc);
  train_model(manifest, registry, o);
  // One SGD step of lr 1 moves the weights by exactly the clipped gradient norm.
  Example initial = initial_parameters(manifest.graph->ir, 5);
  std::vector<float> before;
  for (const char* name : {"dense/bias", "dense/kernel"}) {  // the checkpoint lists parameters in name order
    const DLTensor* t = initial.find(name);
    const float* v = static_cast<const float*>(t->data);
    before.insert(before.end(), v, v + element_count(*t));
  }
  const auto after = params_of(*latest_checkpoint(dir / "c"));
  ASSERT_EQ(after.size(), before.size());
  double norm = 0;
  for (size_t i = 0; i < after.size(); ++i) norm += std::pow(static_cast<double>(after[i]) - before[i], 2);
  EXPECT_NEAR(std::sqrt(norm), 0.01, 1e-5);
}

TEST_F(TrainerTest, ResumeAfterSigkillEndsWithTheSameWeights) {
  auto doc = manifest_doc(1024, 32, 3, {{"checkpoint", {{"dir", "run"}, {"every_steps", 10}, {"keep", 100}}}});
  doc["data"]["train"]["shuffle"] = 1024;
  doc["data"].erase("eval");
  doc["train"]["optimizer"] = {{"type", "adam"}, {"learning_rate", 0.01}};
  doc["train"]["backend"] = {{"type", "linear"}, {"delay_ms", 5}};
  // The uninterrupted run.
  auto whole = doc;
  whole["train"]["checkpoint"]["dir"] = "whole";
  write_manifest(whole, "whole.json");
  const std::string env = "env RAMJET_PLUGIN_PATH=" + quote(stock_plugin_dir().string() + ":" + fixture_dir("linear_backend").string()) + " ";
  auto r = run(env + quote(host_binary().string()) + " run " + quote((dir / "whole.json").string()) + " --quiet");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The same run, killed mid-epoch once a few checkpoints exist.
  write_manifest(doc, "killed.json");
  pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    const std::string command = env + quote(host_binary().string()) + " run " + quote((dir / "killed.json").string()) + " --quiet";
    execl("/bin/sh", "sh", "-c", ("exec " + command).c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::chrono::steady_clock::now() < deadline) {
    auto latest = latest_checkpoint(dir / "run");
    if (latest && latest->filename().string() >= "ckpt-000000000040") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  kill(child, SIGKILL);
  int status = 0;
  waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status)) << "the run finished before it could be killed";
  auto latest = latest_checkpoint(dir / "run");
  ASSERT_TRUE(latest);
  const int64_t killed_at = load_checkpoint(*latest).step;
  EXPECT_LT(killed_at, 96) << "killed mid-run";
  EXPECT_NE(killed_at % 32, 0) << "the kill should land mid-epoch for this test to mean something";
  // Resume and finish.
  r = run(env + quote(host_binary().string()) + " run " + quote((dir / "killed.json").string()) + " --quiet --resume");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(params_of(*latest_checkpoint(dir / "run")), params_of(*latest_checkpoint(dir / "whole")));
  EXPECT_EQ(load_checkpoint(*latest_checkpoint(dir / "run")).step, 96);
}

TEST_F(TrainerTest, BadTrainSectionsNameTheirField) {
  auto doc = manifest_doc(64, 32, 1);
  doc["train"]["optimizer"] = {{"type", "adagrad"}};
  doc["train"]["epochs"] = 0;
  write_manifest(doc);
  try {
    train_model(require_plan(load_pipeline_manifest(dir / "m.json"), registry), registry, TrainOptions{});
    FAIL();
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("#/train/epochs: must be >= 1"), std::string::npos) << e.what();
  }
  doc = manifest_doc(64, 32, 1);
  doc["train"]["backend"] = "tpu";
  write_manifest(doc);
  try {
    train_model(require_plan(load_pipeline_manifest(dir / "m.json"), registry), registry, TrainOptions{});
    FAIL();
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find("#/train/backend: no plugin provides backend 'tpu'"), std::string::npos) << e.what();
  }
}

TEST_F(TrainerTest, EarlyStoppingStopsAndRestoresTheBestEpochsWeights) {
  // Two good epochs at a sane learning rate, then one far too large: validation loss gets worse, patience 1 ends
  // the run, and the weights of the best epoch come back.
  auto doc = manifest_doc(1024, 32, 6,
                          {{"schedule", {{"type", "step"}, {"boundaries", {64}}, {"values", {0.1, 3.0}}}},
                           {"early_stopping", {{"monitor", "val_loss"}, {"patience", 1}, {"restore_best_weights", true}}}});
  auto report = train_model(write(doc), registry, TrainOptions{});
  const auto& history = report["train"]["history"];
  ASSERT_EQ(history.size(), 3u) << history.dump();
  EXPECT_TRUE(report["train"]["stopped_early"].get<bool>());
  EXPECT_GT(history[2]["val_loss"].get<double>(), history[1]["val_loss"].get<double>());
  EXPECT_EQ(report["eval"]["restored_best_epoch"], 2);
  EXPECT_DOUBLE_EQ(report["eval"]["loss"].get<double>(), history[1]["val_loss"].get<double>());
}

TEST_F(TrainerTest, ResumedAfterItsBestEpochEndsWithTheSameRestoredWeights) {
  // Epochs 1-2 improve, 3-4 do not (the learning rate jumps), patience 2 stops after epoch 4 and restores epoch 2.
  auto doc = manifest_doc(1024, 32, 6,
                          {{"schedule", {{"type", "step"}, {"boundaries", {64}}, {"values", {0.1, 3.0}}}},
                           {"early_stopping", {{"monitor", "val_loss"}, {"patience", 2}, {"restore_best_weights", true}}},
                           {"checkpoint", {{"dir", "whole"}, {"every_steps", 32}, {"keep", 100}}}});
  Example whole_parameters;
  TrainOptions uninterrupted;
  uninterrupted.trained_parameters = &whole_parameters;
  auto whole = train_model(write(doc, "whole.json"), registry, uninterrupted);
  ASSERT_TRUE(whole["train"]["stopped_early"].get<bool>()) << whole["train"]["history"].dump();
  ASSERT_EQ(whole["eval"]["restored_best_epoch"], 2);
  // The same run interrupted in epoch 3 (after its best epoch, before it stops), then resumed.
  doc["train"]["checkpoint"]["dir"] = "part";
  TrainOptions interrupted;
  interrupted.stop_after_steps = 96;
  train_model(write(doc, "part.json"), registry, interrupted);
  Example resumed_parameters;
  TrainOptions resumed_options;
  resumed_options.resume = true;
  resumed_options.trained_parameters = &resumed_parameters;
  auto resumed = train_model(write(doc, "part.json"), registry, resumed_options);
  EXPECT_EQ(resumed["eval"]["restored_best_epoch"], 2);
  ASSERT_EQ(whole_parameters.entries.size(), resumed_parameters.entries.size());
  for (size_t i = 0; i < whole_parameters.entries.size(); ++i) {
    const DLTensor& a = whole_parameters.entries[i].tensor->dl_tensor;
    const DLTensor& b = resumed_parameters.entries[i].tensor->dl_tensor;
    ASSERT_EQ(byte_size(a), byte_size(b));
    EXPECT_EQ(std::memcmp(first_byte(a), first_byte(b), byte_size(a)), 0) << whole_parameters.entries[i].name;
  }
  // The final weights are the best epoch's, not the last epoch's: the comparison can fail.
  Checkpoint last = load_checkpoint(*latest_checkpoint(dir / "part"));
  const DLTensor& final_kernel = *resumed_parameters.find("dense/kernel");
  EXPECT_NE(std::memcmp(first_byte(final_kernel), first_byte(*last.parameters.find("dense/kernel")),
                        byte_size(final_kernel)),
            0);
}

TEST_F(TrainerTest, MirroredStrategyBroadcastsReducesShardsAndOnlyRankZeroWrites) {
  auto run = [&](int rank, const std::string& sub, std::ostream* progress) {
    auto doc = manifest_doc(512, 64, 2,
                            {{"strategy", {{"type", "fake_mirror"}, {"rank", rank}, {"world", 2},
                                           {"log", (dir / (sub + ".log")).string()}}},
                             {"checkpoint", {{"dir", sub}}}});
    TrainOptions o;
    o.progress = progress;
    auto report = train_model(write(doc, sub + ".json"), registry, o);
    return std::make_pair(report, nlohmann::json::parse(read_file(dir / (sub + ".log"))));
  };
  std::ostringstream rank0_out, rank1_out;
  auto [report0, calls0] = run(0, "rank0", &rank0_out);
  // The batch of 64 is the global batch: each replica reads half of every epoch, 32 at a time: 256 / 32 = 8 steps
  // per epoch.
  EXPECT_EQ(report0["train"]["steps"], 16);
  EXPECT_EQ(report0["train"]["replicas"], 2);
  EXPECT_EQ(report0["train"]["global_batch"], 64);
  EXPECT_EQ(report0["train"]["strategy"]["name"], "fake_mirror");
  EXPECT_EQ(calls0["broadcasts"], 1 + 2);          // the agreement check, then dense/kernel and dense/bias
  // The agreement check, every gradient at every update, and each epoch's metrics.
  EXPECT_EQ(calls0["all_reduces"], 1 + 16 * 2 + 2);
  EXPECT_EQ(calls0["means"], 16 * 2);
  EXPECT_NE(rank0_out.str().find("trained 16 steps"), std::string::npos);
  EXPECT_TRUE(latest_checkpoint(dir / "rank0").has_value());

  auto [report1, calls1] = run(1, "rank1", &rank1_out);
  EXPECT_EQ(report1["train"]["steps"], 16);
  EXPECT_EQ(calls1["all_reduces"], 1 + 16 * 2 + 2);
  EXPECT_EQ(rank1_out.str(), "") << "only rank 0 prints";
  EXPECT_FALSE(latest_checkpoint(dir / "rank1").has_value()) << "only rank 0 writes checkpoints";
}

TEST_F(TrainerTest, LossScalingPolicyLeavesTheUpdateUnchanged) {
  auto run = [&](const std::string& precision, const std::string& sub) {
    auto doc = manifest_doc(256, 64, 1, {{"precision", precision}, {"checkpoint", {{"dir", sub}}}});
    doc["data"].erase("eval");
    auto report = train_model(write(doc, sub + ".json"), registry, TrainOptions{});
    return std::make_pair(report, params_of(*latest_checkpoint(dir / sub)));
  };
  auto [plain_report, plain] = run("float32", "plain");
  // The fixture policy scales the loss by 128; the trainer must divide the gradients by the same factor.
  auto [scaled_report, scaled] = run("fixed_scale_128", "scaled");
  EXPECT_EQ(scaled_report["train"]["precision"], "fixed_scale_128");
  EXPECT_EQ(scaled_report["train"]["skipped_updates"], 0);
  ASSERT_EQ(plain.size(), scaled.size());
  double worst = 0;
  for (size_t i = 0; i < plain.size(); ++i) worst = std::max(worst, static_cast<double>(std::fabs(plain[i] - scaled[i])));
  EXPECT_LT(worst, 1e-5);
  Checkpoint c = load_checkpoint(*latest_checkpoint(dir / "scaled"));
  EXPECT_EQ(c.trainer["loss_scaler"], "7363616c653d313238") << "the policy's state (\"scale=128\") is checkpointed";
}

TEST_F(TrainerTest, ValidationNamesAPrecisionPolicyOrStrategyNoPluginProvides) {
  // Without the onednn plugin nothing provides mixed_bfloat16; the cuda plugin provides mixed_float16, the mirror
  // fixture fixed_scale_128.
  PluginRegistry without_onednn{DiscoveryOptions{
      {stock_plugin_dir(), fixture_dir("linear_backend"), fixture_dir("mirror_fixture")}, {}, {"onednn"}}};
  auto doc = manifest_doc(64, 32, 1, {{"precision", "mixed_bfloat16"}, {"strategy", {{"type", "horovod"}}}});
  std::string all;
  for (const auto& p : read_plan(write_manifest(doc), without_onednn).problems) all += p.pointer + ": " + p.message + "\n";
  EXPECT_NE(all.find("/train/precision: no plugin provides precision_policy 'mixed_bfloat16' (did you mean "
                     "'mixed_float16'?); available: fixed_scale_128, mixed_float16"),
            std::string::npos) << all;
  EXPECT_NE(all.find("/train/strategy/type: no plugin provides strategy 'horovod'; available: "), std::string::npos)
      << all;
  EXPECT_NE(all.find("fake_mirror"), std::string::npos) << all;
}
