// `train.tensorboard`: a real training run writes event files that TensorBoard's own reader (its EventAccumulator and
// record reader, from the tests' venv) loads, with the scalars Keras's callback writes and the report's numbers; a
// resumed run adds a file whose steps continue; bad settings are refused with the file, pointer and path.
#include "ramjet/train/tensorboard_writer.hpp"
#include "small_run.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>
#include <thread>

using namespace ramjet::test;
using nlohmann::json;

namespace {

// 256 examples in batches of 32: 8 optimizer steps an epoch, every batch full. A cosine schedule makes each step's
// learning rate differ. `tensorboard` is relative: it resolves against the manifest's folder.
json manifest(int64_t epochs, const json& tensorboard = "tb") {
  auto m = small_run_manifest({.seed = 3, .epochs = epochs});
  m["train"]["schedule"] = {{"type", "cosine"}};
  m["train"]["tensorboard"] = tensorboard;
  return m;
}

// TensorBoard's reader over each path (a folder or one event file): {"<path>": {"scalars": {tag: [[step, value]]},
// "file_version": ..., "records": [records per file]}}. The record reader raises on a bad checksum or a torn record.
constexpr const char* kEventReader = R"(
import glob, json, os, sys
from tensorboard.backend.event_processing import event_accumulator
from tensorboard.compat.tensorflow_stub import errors, pywrap_tensorflow

def records(path):
    reader = pywrap_tensorflow.PyRecordReader_New(path, 0, None, None)
    count = 0
    while True:
        try:
            reader.GetNext()
        except errors.OutOfRangeError:
            return count
        count += 1

out = {}
for path in sys.argv[1:]:
    acc = event_accumulator.EventAccumulator(path, size_guidance={event_accumulator.SCALARS: 0})
    acc.Reload()
    files = sorted(glob.glob(os.path.join(path, "*tfevents*"))) if os.path.isdir(path) else [path]
    out[path] = {
        "scalars": {tag: [[e.step, e.value] for e in acc.Scalars(tag)] for tag in acc.Tags()["scalars"]},
        "file_version": acc.file_version,
        "first_wall_time": acc.FirstEventTimestamp(),
        "records": [records(f) for f in files],
    }
print(json.dumps(out))
)";

// Why TensorBoard cannot be used here, or nothing.
std::optional<std::string> tensorboard_missing() {
  const fs::path python = venv_python();
  if (!fs::exists(python)) return "no Python venv at " + python.string() + "; `./dev test` creates it with TensorBoard";
  if (run(quote(python.string()) + " -c 'import tensorboard.backend.event_processing.event_accumulator'").exit_code != 0)
    return "TensorBoard is not installed in " + python.string() + "; `./dev test` installs it";
  return std::nullopt;
}

json read_with_tensorboard(const TempDir& dir, const std::vector<fs::path>& paths) {
  write_file(dir / "read_events.py", kEventReader);
  std::string command = quote(venv_python().string()) + " " + quote((dir / "read_events.py").string());
  for (const auto& p : paths) command += " " + quote(p.string());
  const auto r = run(command);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  // Only the last line is the JSON: TensorBoard may warn on stderr (here merged) before it.
  const auto last = r.output.find_last_of('\n', r.output.size() - 2);
  return json::parse(last == std::string::npos ? r.output : r.output.substr(last + 1));
}

std::vector<fs::path> event_files(const fs::path& folder) {
  std::vector<fs::path> files;
  if (!fs::is_directory(folder)) return files;
  for (const auto& e : fs::directory_iterator(folder)) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<int64_t> steps_of(const json& series) {
  std::vector<int64_t> steps;
  for (const auto& point : series) steps.push_back(point[0].get<int64_t>());
  return steps;
}

std::vector<int64_t> one_to(int64_t first, int64_t last) {
  std::vector<int64_t> v;
  for (int64_t i = first; i <= last; ++i) v.push_back(i);
  return v;
}

// A value TensorBoard read (float32) against the report's (double): within 1e-6 relative.
void expect_same(const json& series, int64_t step, double expected, const std::string& what) {
  for (const auto& point : series)
    if (point[0].get<int64_t>() == step) {
      const double got = point[1].get<double>();
      EXPECT_NEAR(got, expected, 1e-6 * std::fabs(expected) + 1e-12) << what << " at step " << step;
      return;
    }
  ADD_FAILURE() << what << ": no value at step " << step;
}

// The epoch scalars of `train` and `validation` against history entry `h` (its "epoch" is the step).
void expect_epoch_matches(const json& train, const json& validation, const json& h) {
  const int64_t epoch = h["epoch"];
  expect_same(train["epoch_loss"], epoch, h["loss"], "epoch_loss");
  expect_same(train["epoch_accuracy"], epoch, h["accuracy"], "epoch_accuracy");
  expect_same(train["epoch_learning_rate"], epoch, h["lr"], "epoch_learning_rate");
  expect_same(train["epoch_samples_per_s"], epoch, h["samples_per_s"], "epoch_samples_per_s");
  expect_same(validation["epoch_loss"], epoch, h["val_loss"], "validation epoch_loss");
  expect_same(validation["epoch_accuracy"], epoch, h["val_accuracy"], "validation epoch_accuracy");
}

}  // namespace

TEST(TensorBoard, MaskedCrc32cIsTfRecordsChecksum) {
  // CRC-32C's check value (RFC 3720's "123456789" -> 0xE3069283), rotated right by 15 and offset as TFRecord does.
  const uint32_t crc = 0xE3069283u;
  EXPECT_EQ(ramjet::core::masked_crc32c("123456789"), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
  EXPECT_NE(ramjet::core::masked_crc32c("123456788"), ramjet::core::masked_crc32c("123456789"));
}

TEST(TensorBoard, TensorBoardReadsTheScalarsOfATrainingRun) {
  if (auto why = tensorboard_missing()) GTEST_SKIP() << *why;
  TempDir dir;
  write_file(dir / "m.json", manifest(3).dump());
  auto r = host_with_fixtures("run " + quote((dir / "m.json").string()) + " --report " + quote((dir / "report.json").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json report = json::parse(read_file(dir / "report.json"));
  const int64_t steps = report["train"]["steps"];
  ASSERT_EQ(steps, 24);
  const json& history = report["train"]["history"];
  ASSERT_EQ(history.size(), 3u);

  // Keras's layout, relative to the manifest's folder: one new file in train/ and one in validation/.
  for (const char* sub : {"train", "validation"}) {
    const auto files = event_files(dir / "tb" / sub);
    ASSERT_EQ(files.size(), 1u) << sub;
    const std::string name = files[0].filename().string();
    EXPECT_EQ(name.rfind("events.out.tfevents.", 0), 0u) << name;
    EXPECT_EQ(name.substr(name.size() - 3), ".v2") << name;
  }
  const json read = read_with_tensorboard(dir, {dir / "tb/train", dir / "tb/validation"});
  const json& train = read[(dir / "tb/train").string()];
  const json& validation = read[(dir / "tb/validation").string()];
  EXPECT_EQ(train["file_version"], 2.0) << "the first record says brain.Event:2";
  EXPECT_GT(train["first_wall_time"].get<double>(), 1.6e9);
  // One record for the file version, one per optimizer step, one per epoch: nothing torn, every checksum right.
  EXPECT_EQ(train["records"], json::array({1 + steps + 3}));
  EXPECT_EQ(validation["records"], json::array({1 + 3}));

  const json& s = train["scalars"];
  for (const char* tag : {"batch_loss", "batch_learning_rate", "epoch_loss", "epoch_accuracy", "epoch_learning_rate",
                          "epoch_samples_per_s", "epoch_input_wait_fraction"})
    ASSERT_TRUE(s.contains(tag)) << "train/ has no " << tag << ": " << s.dump();
  std::set<std::string> validation_tags;
  for (const auto& [tag, series] : validation["scalars"].items()) validation_tags.insert(tag);
  EXPECT_EQ(validation_tags, (std::set<std::string>{"epoch_loss", "epoch_accuracy"}));

  // Per optimizer step, 1-based like the report's steps; per epoch, 1-based like its history.
  EXPECT_EQ(steps_of(s["batch_loss"]), one_to(1, steps));
  EXPECT_EQ(steps_of(s["batch_learning_rate"]), one_to(1, steps));
  for (const char* tag : {"epoch_loss", "epoch_accuracy", "epoch_learning_rate", "epoch_samples_per_s",
                          "epoch_input_wait_fraction"})
    EXPECT_EQ(steps_of(s[tag]), one_to(1, 3)) << tag;
  EXPECT_EQ(steps_of(validation["scalars"]["epoch_loss"]), one_to(1, 3));
  for (const auto& h : history) expect_epoch_matches(s, validation["scalars"], h);
  for (const auto& point : s["epoch_input_wait_fraction"]) {
    EXPECT_GE(point[1].get<double>(), 0.0);
    EXPECT_LE(point[1].get<double>(), 1.0);
  }

  // batch_loss is each step's own loss: with every batch full, an epoch's mean of them is its epoch_loss.
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    double sum = 0;
    for (int64_t i = 0; i < 8; ++i) sum += s["batch_loss"][static_cast<size_t>(epoch * 8 + i)][1].get<double>();
    EXPECT_NEAR(sum / 8, history[static_cast<size_t>(epoch)]["loss"].get<double>(),
                1e-5 * history[static_cast<size_t>(epoch)]["loss"].get<double>());
  }
  // The cosine schedule: the first step runs at the base rate, later ones lower, never rising.
  const json& lr = s["batch_learning_rate"];
  EXPECT_NEAR(lr[0][1].get<double>(), 0.05, 1e-8);
  for (size_t i = 1; i < lr.size(); ++i) EXPECT_LE(lr[i][1].get<double>(), lr[i - 1][1].get<double>()) << i;
  EXPECT_LT(lr[lr.size() - 1][1].get<double>(), 0.01);
}

TEST(TensorBoard, BatchScalarsComeAtOptimizerStepsWhenMicroBatchesAccumulate) {
  if (auto why = tensorboard_missing()) GTEST_SKIP() << *why;
  TempDir dir;
  json doc = manifest(2);
  doc["train"]["accumulate"] = 2;  // 8 micro-batches an epoch: 4 optimizer steps
  write_file(dir / "m.json", doc.dump());
  auto r = host_with_fixtures("run " + quote((dir / "m.json").string()) + " --quiet --report " + quote((dir / "report.json").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const json report = json::parse(read_file(dir / "report.json"));
  ASSERT_EQ(report["train"]["steps"], 8);
  const json read = read_with_tensorboard(dir, {dir / "tb/train"});
  const json& s = read[(dir / "tb/train").string()]["scalars"];
  EXPECT_EQ(steps_of(s["batch_loss"]), one_to(1, 8));
  // Each step's loss is the mean of its two equal micro-batches, so an epoch's four average to its loss.
  for (size_t epoch = 0; epoch < 2; ++epoch) {
    double sum = 0;
    for (size_t i = 0; i < 4; ++i) sum += s["batch_loss"][epoch * 4 + i][1].get<double>();
    const double loss = report["train"]["history"][epoch]["loss"];
    EXPECT_NEAR(sum / 4, loss, 1e-5 * loss) << "epoch " << epoch + 1;
  }
}

TEST(TensorBoard, AResumedRunAddsAFileWhoseStepsContinue) {
  if (auto why = tensorboard_missing()) GTEST_SKIP() << *why;
  TempDir dir;
  json doc = manifest(1);
  doc["train"]["checkpoint"] = {{"dir", "checkpoints"}};
  write_file(dir / "m.json", doc.dump());
  auto first = host_with_fixtures("run " + quote((dir / "m.json").string()) + " --quiet");
  ASSERT_EQ(first.exit_code, 0) << first.output;
  // Files are named by the second they were opened in, and TensorBoard reads them in name order.
  const auto opened = std::chrono::system_clock::now();
  std::this_thread::sleep_until(std::chrono::ceil<std::chrono::seconds>(opened) + std::chrono::milliseconds(10));
  auto resumed = host_with_fixtures("run " + quote((dir / "m.json").string()) + " --quiet --resume --set /train/epochs=2 --report " +
                      quote((dir / "report.json").string()));
  ASSERT_EQ(resumed.exit_code, 0) << resumed.output;
  const json report = json::parse(read_file(dir / "report.json"));
  ASSERT_EQ(report["train"]["steps"], 16);
  ASSERT_EQ(report["train"]["history"].size(), 2u);

  const auto train_files = event_files(dir / "tb/train");
  const auto validation_files = event_files(dir / "tb/validation");
  ASSERT_EQ(train_files.size(), 2u) << "the resumed run writes a new file";
  ASSERT_EQ(validation_files.size(), 2u);
  const json read = read_with_tensorboard(
      dir, {dir / "tb/train", train_files[0], train_files[1], validation_files[0], validation_files[1]});
  // Each file alone: the first run's steps, then the resumed run's, continuing from the checkpoint.
  const json& before = read[train_files[0].string()]["scalars"];
  const json& after = read[train_files[1].string()]["scalars"];
  EXPECT_EQ(steps_of(before["batch_loss"]), one_to(1, 8));
  EXPECT_EQ(steps_of(after["batch_loss"]), one_to(9, 16));
  EXPECT_EQ(steps_of(before["epoch_loss"]), one_to(1, 1));
  EXPECT_EQ(steps_of(after["epoch_loss"]), one_to(2, 2));
  EXPECT_EQ(steps_of(read[validation_files[1].string()]["scalars"]["epoch_loss"]), one_to(2, 2));
  // The folder as TensorBoard shows it: every step once.
  const json& all = read[(dir / "tb/train").string()]["scalars"];
  EXPECT_EQ(steps_of(all["batch_loss"]), one_to(1, 16));
  EXPECT_EQ(steps_of(all["epoch_loss"]), one_to(1, 2));
  expect_epoch_matches(after, read[validation_files[1].string()]["scalars"], report["train"]["history"][1]);
}

TEST(TensorBoard, AFailedRunLeavesEveryRecordReadable) {
  if (auto why = tensorboard_missing()) GTEST_SKIP() << *why;
  TempDir dir;
  write_file(dir / "m.json", manifest(2).dump());
  // A learning rate this large makes the loss infinite at the second step: the run fails (exit 1) mid-epoch.
  auto r = host_with_fixtures("run " + quote((dir / "m.json").string()) + " --quiet --set /train/optimizer/learning_rate=1e30");
  ASSERT_EQ(r.exit_code, 1) << r.output;
  ASSERT_NE(r.output.find("the loss became"), std::string::npos) << r.output;
  const json read = read_with_tensorboard(dir, {dir / "tb/train"});
  const json& train = read[(dir / "tb/train").string()];
  EXPECT_EQ(train["records"], json::array({2})) << "the file version and the one step that finished";
  EXPECT_EQ(steps_of(train["scalars"]["batch_loss"]), one_to(1, 1));
}

TEST(TensorBoard, OnlyRankZeroWrites) {
  TempDir dir;
  for (int rank : {1, 0}) {
    json doc = manifest(1, "tb" + std::to_string(rank));
    doc["train"]["strategy"] = {{"type", "fake_mirror"}, {"rank", rank}, {"world", 2}};
    write_file(dir / "m.json", doc.dump());
    auto r = host_with_fixtures("run " + quote((dir / "m.json").string()) + " --quiet");
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  EXPECT_FALSE(fs::exists(dir / "tb1")) << "rank 1 writes nothing";
  EXPECT_EQ(event_files(dir / "tb0/train").size(), 1u);
}

TEST(TensorBoard, BadSettingsExitTwoNamingTheFileAndPointer) {
  TempDir dir;
  write_file(dir / "file", "x");
  struct Case {
    json value;
    std::string says;
  };
  const fs::path under_a_file = dir / "file" / "tb";
  for (const auto& c : {Case{5, "must be a string"}, Case{"", "must name a folder"},
                        Case{under_a_file.string(), (dir / "file").string()}}) {
    json doc = manifest(1, c.value);
    doc["train"]["checkpoint"] = {{"dir", "checkpoints"}};
    write_file(dir / "m.json", doc.dump());
    auto r = host_with_fixtures("run " + quote((dir / "m.json").string()));
    EXPECT_EQ(r.exit_code, 2) << c.value << ": " << r.output;
    EXPECT_NE(r.output.find((dir / "m.json").string() + "#/train/tensorboard: "), std::string::npos) << r.output;
    EXPECT_NE(r.output.find(c.says), std::string::npos) << r.output;
    EXPECT_EQ(r.output.find("Epoch"), std::string::npos) << "refused before any training:\n" << r.output;
    EXPECT_FALSE(fs::exists(dir / "checkpoints")) << "no training step ran";
  }
}
