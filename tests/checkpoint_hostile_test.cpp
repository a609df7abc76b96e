// Hostile checkpoints (issue 10): a real checkpoint from a tiny training run, damaged one way per case — the
// safetensors framing, the header's fields, the metadata's fields, the tensors against the model, and files that
// are not files — then `ramjet run --resume` and `ramjet eval` on it. Each must refuse cleanly (exit 2, no signal,
// no hang, bounded memory, a short message naming the file and the place) and leave the older good checkpoints
// exactly as they were.
#include "hostile_run.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <sys/stat.h>

#include <cstring>
#include <functional>
#include <map>

using namespace ramjet::test;

namespace {

const std::string kNewest = "ckpt-000000000008.safetensors";  // the golden run's last of 8 steps
const std::vector<std::string> kGood = {"ckpt-000000000006.safetensors", "ckpt-000000000007.safetensors"};

nlohmann::json synthetic_source(int64_t count) {
  return {{"type", "synthetic"},
          {"count", count},
          {"tensors",
           {{"image", {{"shape", {4, 4, 1}}, {"dtype", "uint8"}, {"low", 0}, {"high", 256}}},
            {"label", {{"shape", nlohmann::json::array()}, {"dtype", "int32"}, {"low", 0}, {"high", 5}}}}}};
}

// 32 samples in batches of 8 for 2 epochs: 8 Adam steps of a 16x5 softmax regression, a checkpoint after each,
// the newest 3 kept.
nlohmann::json tiny_manifest() {
  const nlohmann::json map = {{{"type", "normalize"}, {"scale", 1.0 / 255}}};
  return {{"seed", 7},
          {"data",
           {{"train", {{"source", synthetic_source(32)}, {"map", map}, {"batch", 8}}},
            {"eval", {{"source", synthetic_source(16)}, {"map", map}, {"batch", 8}}}}},
          {"model",
           {{"input", {{"image", {4, 4, 1}}}},
            {"layers", {{{"type", "flatten"}}, {{"type", "dense"}, {"units", 5}}}},
            {"loss", {{"type", "sparse_softmax_cross_entropy"}}}}},
          {"train",
           {{"backend", "linear"},
            {"optimizer", {{"type", "adam"}, {"learning_rate", 0.01}}},
            {"epochs", 2},
            {"checkpoint", {{"dir", "ckpt"}, {"every_steps", 1}, {"keep", 3}}}}}};
}

HostileLimits limits() {
  HostileLimits l;
  l.seconds = 60;
  return l;
}

HostileResult host(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {host_binary().string()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_hostile(argv, limits());
}

// The checkpoints of one real training run, made once for the whole file.
struct Golden {
  TempDir dir;
  std::map<std::string, std::string> files;  // name -> bytes
};

const Golden& golden() {
  static Golden g;  // destroyed at exit, taking its directory with it
  static const bool made = [] {
    setenv("RAMJET_PLUGIN_PATH", (stock_plugin_dir().string() + ":" + fixture_dir("linear_backend").string()).c_str(), 1);
    write_file(g.dir / "m.json", tiny_manifest().dump());
    const HostileResult r = host({"run", (g.dir / "m.json").string(), "--quiet"});
    if (r.exit_code != 0) ADD_FAILURE() << "the golden training run failed:\n" << r.output;
    for (const auto& entry : fs::directory_iterator(g.dir / "ckpt"))
      g.files[entry.path().filename().string()] = read_file(entry.path());
    return true;
  }();
  (void)made;
  return g;
}

// A safetensors file taken apart and put back together, so a case can damage one piece.
struct Parts {
  nlohmann::json header;
  std::string data;
};

Parts parts_of(const std::string& bytes) {
  uint64_t length = 0;
  std::memcpy(&length, bytes.data(), 8);
  return {nlohmann::json::parse(bytes.substr(8, length)), bytes.substr(8 + length)};
}

std::string framed(uint64_t length, const std::string& rest) {
  std::string out(8, '\0');
  std::memcpy(out.data(), &length, 8);
  return out + rest;
}

std::string assembled(const std::string& header_text, const std::string& data) {
  return framed(header_text.size(), header_text + data);
}

std::string newest_bytes() { return golden().files.at(kNewest); }

uint64_t header_end() {
  uint64_t length = 0;
  std::memcpy(&length, newest_bytes().data(), 8);
  return 8 + length;
}

using Plant = std::function<void(const fs::path& ckpt_dir)>;

// The newest checkpoint replaced by `bytes`.
Plant bytes_of(std::function<std::string()> make) {
  return [make](const fs::path& d) { write_file(d / kNewest, make()); };
}

Plant header_edit(std::function<void(nlohmann::json&)> edit) {
  return bytes_of([edit] {
    Parts p = parts_of(newest_bytes());
    edit(p.header);
    return assembled(p.header.dump(), p.data);
  });
}

Plant metadata(const std::string& key, const std::string& value) {
  return header_edit([key, value](nlohmann::json& h) { h["__metadata__"][key] = value; });
}

Plant json_metadata(const std::string& key, std::function<void(nlohmann::json&)> edit) {
  return header_edit([key, edit](nlohmann::json& h) {
    nlohmann::json value = nlohmann::json::parse(h["__metadata__"][key].get<std::string>());
    edit(value);
    h["__metadata__"][key] = value.dump();
  });
}

// Sizes are computed when the case runs: listing the tests must not train the golden run.
Plant truncated_at(std::function<uint64_t()> size) {
  return bytes_of([size] { return newest_bytes().substr(0, size()); });
}

// One more tensor, its bytes appended to the data.
Plant with_extra(const std::string& name, std::vector<int64_t> shape, uint64_t bytes) {
  return bytes_of([=] {
    Parts p = parts_of(newest_bytes());
    p.header[name] = {{"dtype", "F32"}, {"shape", shape}, {"data_offsets", {p.data.size(), p.data.size() + bytes}}};
    return assembled(p.header.dump(), p.data + std::string(bytes, '\0'));
  });
}

// Renames a tensor in the header (its bytes stay where they are).
Plant renamed(const std::string& from, const std::string& to) {
  return header_edit([from, to](nlohmann::json& h) {
    h[to] = h[from];
    h.erase(from);
  });
}

// Drops tensors from the file, data included, the rest moved up so the file stays well-formed.
Plant without(std::function<bool(const std::string&)> drop) {
  return bytes_of([drop] {
    Parts p = parts_of(newest_bytes());
    nlohmann::json header = nlohmann::json::object();
    std::string data;
    for (const auto& [name, spec] : p.header.items()) {
      if (name == "__metadata__") {
        header[name] = spec;
        continue;
      }
      if (drop(name)) continue;
      const uint64_t begin = spec["data_offsets"][0], end = spec["data_offsets"][1];
      header[name] = spec;
      header[name]["data_offsets"] = {data.size(), data.size() + (end - begin)};
      data += p.data.substr(begin, end - begin);
    }
    return assembled(header.dump(), data);
  });
}

// The newest checkpoint's name taken by something that is not a checkpoint file (step 9, newer than all).
const std::string kImpostor = "ckpt-000000000009.safetensors";

struct Case {
  std::string name;
  Plant plant;
  std::vector<std::string> needles;  // besides the file's name
  bool eval_refuses = true;          // false: only resuming needs what is damaged, and eval must still work
  std::string file = kNewest;        // the file the message must name
};

std::vector<Case> cases() {
  const std::string bias = "param/dense/bias", kernel = "param/dense/kernel";
  std::vector<Case> c;
  // The 8-byte length and the file's end.
  for (uint64_t size : {0, 3, 7})
    c.push_back({"TruncatedTo" + std::to_string(size) + "Bytes", truncated_at([size] { return size; }),
                 {"at byte 0", "8-byte header length"}});
  for (uint64_t size : {8, 9, 40})
    c.push_back({"TruncatedInTheHeaderAt" + std::to_string(size), truncated_at([size] { return size; }),
                 {"at byte 0", "runs past the end"}});
  c.push_back({"TruncatedAtTheHeaderEnd", truncated_at([] { return header_end(); }), {"data_offsets", "lies outside the data"}});
  c.push_back({"TruncatedInTheData", truncated_at([] { return header_end() + 30; }), {"data_offsets", "lies outside the data"}});
  c.push_back({"TruncatedByOneByte", truncated_at([] { return newest_bytes().size() - 1; }), {"data_offsets", "lies outside the data"}});
  c.push_back({"HeaderLength6Point5GiB", bytes_of([] { return framed(6'979'321'856ULL, newest_bytes().substr(8)); }),
               {"at byte 0", "header length 6979321856 runs past the end"}});
  c.push_back({"HeaderLengthMaxUint64", bytes_of([] { return framed(~0ULL, newest_bytes().substr(8)); }),
               {"at byte 0", "runs past the end"}});
  // A 200 MB file (sparse: it takes no disk) whose header length fits it but not the format's 100 MB cap.
  c.push_back({"HeaderLengthOverTheFormatCap", [](const fs::path& d) {
                 write_file(d / kNewest, framed(150'000'000, newest_bytes().substr(8)));
                 fs::resize_file(d / kNewest, 200'000'000);
               },
               {"at byte 0", "header length 150000000 is over the format's limit of 100000000 bytes"}});
  c.push_back({"HeaderLengthPastTheEnd", bytes_of([] { return framed(newest_bytes().size(), newest_bytes().substr(8)); }),
               {"at byte 0", "runs past the end"}});
  c.push_back({"HeaderLengthZero", bytes_of([] { return framed(0, newest_bytes().substr(8)); }), {"at byte 8", "too short"}});
  // The header's JSON.
  c.push_back({"HeaderNotJson", bytes_of([] { return assembled("{\"a\": nope}", ""); }), {"at byte 15", "is not JSON"}});
  c.push_back({"HeaderIsAnArray", bytes_of([] { return assembled("[1, 2, 3]", ""); }), {"at byte 8", "must be a JSON object"}});
  c.push_back({"HeaderNested100kLevels",
               bytes_of([] { return assembled(std::string(100000, '[') + std::string(100000, ']'), ""); }),
               {"at byte 72", "header nests JSON deeper than 64 levels"}});
  c.push_back({"HeaderNotUtf8", bytes_of([] {
                 std::string h = parts_of(newest_bytes()).header.dump();
                 h.insert(2, "\xff\xfe");
                 return assembled(h, parts_of(newest_bytes()).data);
               }),
               {"is not JSON"}});
  c.push_back({"DuplicateTensorName", bytes_of([] {
                 Parts p = parts_of(newest_bytes());
                 std::string h = p.header.dump();
                 const std::string entry = "\"param/dense/bias\":" + p.header["param/dense/bias"].dump();
                 h.insert(1, entry + ",");
                 return assembled(h, p.data);
               }),
               {"header has the key 'param/dense/bias' twice"}});
  c.push_back({"MetadataNotAnObject", header_edit([](nlohmann::json& h) { h["__metadata__"] = "step=8"; }),
               {"__metadata__ must be an object"}});
  c.push_back({"MetadataValueNotAString", header_edit([](nlohmann::json& h) { h["__metadata__"]["step"] = 8; }),
               {"__metadata__/step must be a string"}});
  // One tensor's entry.
  c.push_back({"UnknownDtype", header_edit([=](nlohmann::json& h) { h[bias]["dtype"] = "F99"; }), {bias, "unknown dtype 'F99'"}});
  c.push_back({"DtypeNotAString", header_edit([=](nlohmann::json& h) { h[bias]["dtype"] = 32; }), {bias, "dtype must be a string"}});
  c.push_back({"DtypeTooWideForTheBytes", header_edit([=](nlohmann::json& h) { h[bias]["dtype"] = "F64"; }),
               {bias, "holds 20 bytes, its dtype and shape need 40"}});
  c.push_back({"ShapeNotMatchingTheBytes", header_edit([=](nlohmann::json& h) { h[kernel]["shape"] = {3, 5}; }),
               {kernel, "holds 320 bytes, its dtype and shape need 60"}});
  c.push_back({"ShapeNegative", header_edit([=](nlohmann::json& h) { h[kernel]["shape"] = {-16, 5}; }),
               {kernel, "non-negative integers, not -16"}});
  c.push_back({"ShapeFractional", header_edit([=](nlohmann::json& h) { h[kernel]["shape"] = {16.5, 5}; }),
               {kernel, "non-negative integers, not 16.5"}});
  c.push_back({"ShapeProductOverflows", header_edit([=](nlohmann::json& h) {
                 h[kernel]["shape"] = {1ULL << 62, 1ULL << 62};
               }),
               {kernel, "more than 2^64"}});
  c.push_back({"RankOverTheLimit", header_edit([=](nlohmann::json& h) { h[kernel]["shape"] = std::vector<int>(17, 1); }),
               {kernel, "rank 17"}});
  c.push_back({"ShapeMissing", header_edit([=](nlohmann::json& h) { h[kernel].erase("shape"); }), {kernel, "shape must be an array"}});
  c.push_back({"UnknownTensorField", header_edit([=](nlohmann::json& h) { h[kernel]["strides"] = {5, 1}; }),
               {kernel, "unknown field 'strides'"}});
  c.push_back({"TensorEntryNotAnObject", header_edit([=](nlohmann::json& h) { h[kernel] = "F32"; }), {kernel, "must be an object"}});
  c.push_back({"OffsetsPastTheData", header_edit([=](nlohmann::json& h) { h[kernel]["data_offsets"][1] = 1000000000000ULL; }),
               {kernel, "lies outside the data"}});
  c.push_back({"OffsetsReversed", header_edit([=](nlohmann::json& h) {
                 const auto o = h[bias]["data_offsets"];
                 h[bias]["data_offsets"] = {o[1], o[0]};
               }),
               {bias, "lies outside the data"}});
  c.push_back({"OffsetsNegative", header_edit([=](nlohmann::json& h) { h[bias]["data_offsets"][0] = -8; }),
               {bias, "data_offsets must be two non-negative integers"}});
  c.push_back({"OffsetsThreeNumbers", header_edit([=](nlohmann::json& h) { h[bias]["data_offsets"].push_back(0); }),
               {bias, "data_offsets must be two"}});
  c.push_back({"OffsetsOverlap", header_edit([](nlohmann::json& h) {
                 // The last tensor of the data moved onto the first one's bytes, its length kept.
                 std::string last;
                 for (const auto& [name, spec] : h.items())
                   if (name != "__metadata__" && (last.empty() || spec["data_offsets"][0] > h[last]["data_offsets"][0])) last = name;
                 const uint64_t length = h[last]["data_offsets"][1].get<uint64_t>() - h[last]["data_offsets"][0].get<uint64_t>();
                 h[last]["data_offsets"] = {0, length};
               }),
               {"overlaps the tensor before it"}});
  c.push_back({"BytesAfterTheLastTensor", bytes_of([] { return newest_bytes() + std::string(12, 'x'); }),
               {"12 bytes after the last tensor belong to no tensor"}});
  // The metadata's fields.
  c.push_back({"FormatMissing", header_edit([](nlohmann::json& h) { h["__metadata__"].erase("format"); }),
               {"/__metadata__/format: missing"}});
  c.push_back({"FormatUnknown", metadata("format", "ramjet-checkpoint-99"), {"/__metadata__/format", "ramjet-checkpoint-99"}});
  c.push_back({"StepNotANumber", metadata("step", "eight"), {"/__metadata__/step", "'eight'"}});
  c.push_back({"StepNegative", metadata("step", "-8"), {"/__metadata__/step", "'-8'"}});
  c.push_back({"StepWithSpaces", metadata("step", " 8"), {"/__metadata__/step"}});
  c.push_back({"StepPastInt64", metadata("step", "99999999999999999999"), {"/__metadata__/step", "below 2^63"}});
  c.push_back({"StepHuge", metadata("step", "9223372036854775807"), {"/__metadata__/step", "beyond any real run"}});
  c.push_back({"StepPastTheRun", metadata("step", "500"), {"/__metadata__/step", "past this run's 8 optimizer steps"}, false});
  c.push_back({"PipelineNotJson", metadata("pipeline", "{epoch: 2}"), {"/__metadata__/pipeline", "is not JSON"}});
  c.push_back({"PipelineNested", metadata("pipeline", std::string(5000, '[') + std::string(5000, ']')),
               {"/__metadata__/pipeline", "nests JSON deeper"}});
  c.push_back({"PipelinePositionNegative", json_metadata("pipeline", [](nlohmann::json& p) { p["position"] = -3; }),
               {"/__metadata__/pipeline/position", "must be >= 0, got -3"}});
  c.push_back({"PipelinePositionAString", json_metadata("pipeline", [](nlohmann::json& p) { p["position"] = "8"; }),
               {"/__metadata__/pipeline/position", "must be an integer"}});
  c.push_back({"PipelinePositionFractional", json_metadata("pipeline", [](nlohmann::json& p) { p["position"] = 1.5; }),
               {"/__metadata__/pipeline/position", "must be an integer"}});
  c.push_back({"PipelinePositionMissing", json_metadata("pipeline", [](nlohmann::json& p) { p.erase("position"); }),
               {"/__metadata__/pipeline/position: missing"}});
  c.push_back({"PipelinePositionPastTheEpoch", json_metadata("pipeline", [](nlohmann::json& p) { p = {{"epoch", 1}, {"position", 1000000}}; }),
               {"/__metadata__/pipeline/position", "past the end of the epoch (32 elements)"}, false});
  c.push_back({"PipelinePositionAfterTheLastEpoch", json_metadata("pipeline", [](nlohmann::json& p) { p["position"] = 8; }),
               {"/__metadata__/pipeline/position", "past this run's last epoch"}, false});
  c.push_back({"PipelineEpochPastTheRun", json_metadata("pipeline", [](nlohmann::json& p) { p["epoch"] = 99; }),
               {"/__metadata__/pipeline/epoch", "past this run's 2 epochs"}, false});
  c.push_back({"PipelineUnknownField", json_metadata("pipeline", [](nlohmann::json& p) { p["shard"] = 1; }),
               {"/__metadata__/pipeline/shard", "unknown field"}});
  c.push_back({"PipelineDuplicateKey", metadata("pipeline", "{\"epoch\": 2, \"position\": -1, \"position\": 0}"),
               {"/__metadata__/pipeline", "has the key 'position' twice"}});
  c.push_back({"TrainerNotAnObject", metadata("trainer", "[]"), {"/__metadata__/trainer", "must be an object"}});
  c.push_back({"TrainerHistoryAString", json_metadata("trainer", [](nlohmann::json& t) { t["history"] = "epochs"; }),
               {"/__metadata__/trainer/history", "must be an array"}});
  c.push_back({"TrainerHistoryLossAString", json_metadata("trainer", [](nlohmann::json& t) { t["history"][0]["loss"] = "low"; }),
               {"/__metadata__/trainer/history/0/loss", "must be a number"}});
  c.push_back({"TrainerHistoryEntryNotAnObject", json_metadata("trainer", [](nlohmann::json& t) { t["history"][1] = 3; }),
               {"/__metadata__/trainer/history/1", "must be an object"}});
  c.push_back({"TrainerHistoryMissing", json_metadata("trainer", [](nlohmann::json& t) { t.erase("history"); }),
               {"/__metadata__/trainer/history: missing"}});
  c.push_back({"TrainerLrScaleNegative", json_metadata("trainer", [](nlohmann::json& t) { t["lr_scale"] = -1; }),
               {"/__metadata__/trainer/lr_scale", "finite number > 0"}});
  c.push_back({"TrainerUnknownField", json_metadata("trainer", [](nlohmann::json& t) { t["momentum"] = 1; }),
               {"/__metadata__/trainer/momentum", "unknown field"}});
  c.push_back({"TrainerLossScalerNotHex", json_metadata("trainer", [](nlohmann::json& t) { t["loss_scaler"] = "zz"; }),
               {"/__metadata__/trainer/loss_scaler", "hexadecimal"}});
  c.push_back({"TrainerSkippedUpdatesNegative",
               json_metadata("trainer", [](nlohmann::json& t) { t["skipped_updates"] = -3; }),
               {"/__metadata__/trainer/skipped_updates", "must be >= 0"}});
  c.push_back({"TrainerPlateauWaitNegative", json_metadata("trainer", [](nlohmann::json& t) {
                 t["plateau"] = {{"have_best", true}, {"best", 0.5}, {"wait", -1}, {"cooldown", 0}};
               }),
               {"/__metadata__/trainer/plateau/wait", "must be >= 0"}});
  c.push_back({"TrainerEarlyStoppingMistyped", json_metadata("trainer", [](nlohmann::json& t) {
                 t["early_stopping"] = {{"have_best", "yes"}, {"best", 0.5}, {"best_epoch", 1}, {"wait", 0}};
               }),
               {"/__metadata__/trainer/early_stopping/have_best", "must be true or false"}});
  // The tensors against the model.
  c.push_back({"ParamMissing", without([=](const std::string& n) { return n == kernel; }), {"'param/dense/kernel' is missing"}});
  c.push_back({"ParamWrongShape", header_edit([=](nlohmann::json& h) { h[kernel]["shape"] = {80}; }),
               {"'param/dense/kernel' is [80] float32", "the model's is [16,5] float32"}});
  c.push_back({"ParamWrongDtype", header_edit([=](nlohmann::json& h) { h[kernel]["dtype"] = "I32"; }),
               {"'param/dense/kernel' is [16,5] int32"}});
  c.push_back({"ParamTheModelLacks", with_extra("param/dense2/bias", {5}, 20), {"'param/dense2/bias' is not in the model"}});
  c.push_back({"TensorOutsideTheCheckpointGroups", renamed("optimizer/dense/bias/v", "scratch/v"),
               {"'scratch/v' is not a checkpoint tensor"}});
  c.push_back({"BestParamsWrongShape", with_extra("best/dense/bias", {4}, 16), {"'best/dense/bias' is [4] float32"}});
  c.push_back({"NoOptimizerState", without([](const std::string& n) { return n.rfind("optimizer/", 0) == 0; }),
               {"no optimizer state"}, false});
  c.push_back({"OptimizerSlotMissing", without([](const std::string& n) { return n == "optimizer/dense/kernel/v"; }),
               {"'optimizer/dense/kernel/v' is missing"}, false});
  c.push_back({"OptimizerSlotWrongShape", header_edit([](nlohmann::json& h) { h["optimizer/dense/kernel/m"]["shape"] = {5, 16}; }),
               {"'optimizer/dense/kernel/m' is [5,16] float32"}, false});
  // Names of checkpoints that are not files.
  c.push_back({"FifoNamedLikeTheNewest", [](const fs::path& d) { ASSERT_EQ(mkfifo((d / kImpostor).c_str(), 0644), 0); },
               {"FIFO"}, true, kImpostor});
  c.push_back({"DirectoryNamedLikeTheNewest", [](const fs::path& d) { fs::create_directory(d / kImpostor); },
               {"is a directory"}, true, kImpostor});
  c.push_back({"SymlinkToADevice", [](const fs::path& d) { fs::create_symlink("/dev/zero", d / kImpostor); },
               {"is not a regular file"}, true, kImpostor});
  c.push_back({"DanglingSymlink", [](const fs::path& d) { fs::create_symlink(d / "gone", d / kImpostor); },
               {"symbolic link to a file that does not exist"}, true, kImpostor});
  return c;
}

class HostileCheckpoint : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    golden();
    write_file(dir / "m.json", tiny_manifest().dump());
    fs::create_directories(dir / "ckpt");
    for (const auto& name : kGood) write_file(dir / "ckpt" / name, golden().files.at(name));
    write_file(dir / "ckpt" / kNewest, golden().files.at(kNewest));
    GetParam().plant(dir / "ckpt");
    before_ = listing();
  }

  std::vector<std::string> listing() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir / "ckpt")) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  // Nothing lost: the older checkpoints byte for byte, and no file came or went.
  void expect_nothing_lost(const std::string& after) const {
    for (const auto& name : kGood) {
      ASSERT_TRUE(fs::exists(dir / "ckpt" / name)) << name << " was deleted by " << after;
      EXPECT_EQ(read_file(dir / "ckpt" / name), golden().files.at(name)) << name << " was changed by " << after;
    }
    EXPECT_EQ(listing(), before_) << "the checkpoint directory changed in " << after;
  }

  std::vector<std::string> needles() const {
    std::vector<std::string> n = GetParam().needles;
    n.push_back(GetParam().file);
    return n;
  }

  TempDir dir;
  std::vector<std::string> before_;
};

TEST_P(HostileCheckpoint, ResumeRefusesItAndKeepsTheGoodOnes) {
  const HostileResult r = host({"run", (dir / "m.json").string(), "--quiet", "--resume"});
  EXPECT_TRUE(refused_cleanly(r, 2, needles()));
  EXPECT_EQ(r.output.find("json.exception"), std::string::npos) << r.output;
  expect_nothing_lost("--resume");
}

TEST_P(HostileCheckpoint, EvalRefusesItOrNeedsNoneOfIt) {
  const HostileResult r = host({"eval", (dir / "m.json").string()});
  if (GetParam().eval_refuses) {
    EXPECT_TRUE(refused_cleanly(r, 2, needles()));
  } else {
    EXPECT_EQ(r.exit_code, 0) << "eval needs only the parameters:\n" << r.output;
  }
  expect_nothing_lost("eval");
}

INSTANTIATE_TEST_SUITE_P(Cases, HostileCheckpoint, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.name; });

class CheckpointDirectory : public ::testing::Test {
 protected:
  void SetUp() override {
    golden();
    write_file(dir / "m.json", tiny_manifest().dump());
    fs::create_directories(dir / "ckpt");
  }
  TempDir dir;
};

// A run refused after its outputs were checked leaves none of the folders that check made; one that was there stays.
TEST_F(CheckpointDirectory, ARefusedResumeLeavesNoEmptyOutputFolderBehind) {
  write_file(dir / "ckpt" / kGood[0], "not a checkpoint");
  const HostileResult r =
      host({"run", (dir / "m.json").string(), "--quiet", "--resume", "--report", (dir / "out" / "deep" / "r.json").string()});
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_FALSE(fs::exists(dir / "out")) << "the folders made for --report stayed behind";
  fs::create_directories(dir / "kept");
  const HostileResult again =
      host({"run", (dir / "m.json").string(), "--quiet", "--resume", "--report", (dir / "kept" / "new" / "r.json").string()});
  EXPECT_EQ(again.exit_code, 2) << again.output;
  EXPECT_TRUE(fs::is_directory(dir / "kept")) << "a folder the run did not make was removed";
  EXPECT_FALSE(fs::exists(dir / "kept" / "new"));
  EXPECT_TRUE(fs::is_directory(dir / "ckpt")) << "the checkpoint folder holds the user's files";
}

TEST_F(CheckpointDirectory, ResumingFromAGoodCheckpointStillWorks) {
  write_file(dir / "ckpt" / kGood[0], golden().files.at(kGood[0]));
  const HostileResult r = host({"run", (dir / "m.json").string(), "--quiet", "--resume"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // The same weights and optimizer moments as the uninterrupted run (the metadata holds timings, so not the header).
  EXPECT_EQ(parts_of(read_file(dir / "ckpt" / kNewest)).data, parts_of(golden().files.at(kNewest)).data);
  const HostileResult e = host({"eval", (dir / "m.json").string()});
  EXPECT_EQ(e.exit_code, 0) << e.output;
}

TEST_F(CheckpointDirectory, StaleTemporariesOfKilledRunsAreRemovedAtStart) {
  const std::vector<std::string> stale = {".ckpt-000000000003.safetensors.tmp1234567", ".ckpt-000000000009.safetensors.tmp42"};
  const std::vector<std::string> not_ours = {".notes.tmp1", "ckpt-000000000001.safetensors.tmp5", ".ckpt-x.safetensors.tmp1"};
  for (const auto& name : stale) write_file(dir / "ckpt" / name, "half a checkpoint");
  for (const auto& name : not_ours) write_file(dir / "ckpt" / name, "someone else's");
  const HostileResult r = host({"run", (dir / "m.json").string(), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const auto& name : stale) EXPECT_FALSE(fs::exists(dir / "ckpt" / name)) << name;
  for (const auto& name : not_ours) EXPECT_TRUE(fs::exists(dir / "ckpt" / name)) << name;
}

TEST_F(CheckpointDirectory, RotationNeverDeletesTheCheckpointJustWritten) {
  // A newer-numbered checkpoint of an earlier, longer run: a fresh run's first save must survive the rotation.
  write_file(dir / "ckpt" / "ckpt-000000000500.safetensors", golden().files.at(kNewest));
  auto doc = tiny_manifest();
  doc["train"]["checkpoint"]["keep"] = 1;
  write_file(dir / "m.json", doc.dump());
  const HostileResult r = host({"run", (dir / "m.json").string(), "--quiet"});
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_TRUE(fs::exists(dir / "ckpt" / kNewest));
  EXPECT_FALSE(fs::exists(dir / "ckpt" / "ckpt-000000000500.safetensors")) << "keep 1: only the newest write stays";
}

}  // namespace
