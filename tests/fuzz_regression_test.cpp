// Hostile data files, two ways.
// 1. Every input a fuzz target failed on (fuzz/regressions/<target>/) goes through the same code in this build
//    and must end in a clean error or a clean success: no crash, no sanitizer report (in the ASan build), no
//    exception of a type the caller does not expect.
// 2. Bad IDX, gzip, PNG, JPEG and TFRecord files run through the `ramjet` host as a user would meet them
//    (`ramjet pipeline`): exit 2, a short message naming the file and the byte offset, record or field, bounded
//    memory and time (refused_cleanly).
#include "ramjet/plan/plan.hpp"
#include "ramjet/plugin/components.hpp"
#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/plugin_manifest.hpp"
#include "ramjet/train/checkpoint.hpp"
#include "ramjet/train/safetensors.hpp"
#include "hostile_run.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>

using namespace ramjet::core;
using namespace ramjet::test;

namespace {

// --- 1. replaying the fuzzers' findings -----------------------------------------------------------------------

PluginRegistry& stock_registry() {
  static PluginRegistry registry{DiscoveryOptions{{stock_plugin_dir()}, {}, {}}};
  return registry;
}

bool has_component(ramjet_component_kind kind, const std::string& name) {
  return stock_registry().provider(kind, name) != nullptr;
}

CreateArgs args_for(const nlohmann::json& config) {
  CreateArgs args;
  args.config = config;
  args.where = "regression.json#/data/train/source";
  return args;
}

// The feature declarations of fuzz/tfrecord.cpp, chosen the same way (by the input's size).
const char* const kTfrecordFeatures[3] = {
    R"({"image": {"type": "bytes"}, "label": {"type": "int64", "shape": []}})",
    R"({"x": {"type": "float", "shape": [-1, 2]}, "y": {"type": "int64", "dtype": "uint8", "shape": [2, -1]}})",
    R"({"raw": {"type": "bytes", "shape": [-1, 2], "dtype": "int16"}, "label": {"type": "int64", "dtype": "int8"}})",
};

// Each target's code path through this build's public surface; an error the caller handles is a clean outcome.
using Replay = std::function<void(const fs::path&)>;

void replay_idx(const fs::path& file) {
  DataSource source(stock_registry().component(RAMJET_KIND_DATA_SOURCE, "idx"), args_for({{"images", file.string()}}));
  if (source.cardinality() > 0) {
    Example out;
    source.get(source.cardinality() - 1, out);
  }
}

void replay_image(const fs::path& file) {
  const std::string bytes = read_file(file);
  for (int channels : {0, 1, 3}) {
    CreateArgs args;
    args.config = {{"channels", channels}};
    args.where = "regression.json#/data/train/map/0";
    Transform decode(stock_registry().component(RAMJET_KIND_TRANSFORM, "decode_image"), args);
    Example example;
    TensorPtr t = make_tensor(DLDataType{kDLUInt, 8, 1}, std::vector<int64_t>{static_cast<int64_t>(bytes.size())});
    std::copy(bytes.begin(), bytes.end(), static_cast<char*>(t->dl_tensor.data));
    example.set("image", std::move(t));
    try {
      decode.apply(example, 0);
    } catch (const InvalidInput&) {
    }
  }
}

void replay_tfrecord(const fs::path& file) {
  const auto features = nlohmann::json::parse(kTfrecordFeatures[fs::file_size(file) % 3]);
  DataSource source(stock_registry().component(RAMJET_KIND_DATA_SOURCE, "tfrecord"),
                    args_for({{"files", file.string()}, {"features", features}}));
  Example out;
  for (int records = 0; records < 64 && source.next(out); ++records) out = Example();
}

void replay_safetensors(const fs::path& file) {
  (void)read_safetensors(file);
  (void)load_checkpoint(file);
}

void replay_plugin_manifest(const fs::path& file) {
  const ManifestParse parse = read_plugin_manifest(file);
  EXPECT_TRUE(parse.manifest || !parse.problems.empty()) << file;
}

void replay_pipeline_manifest(const fs::path& file) {
  const PipelineManifest manifest = load_pipeline_manifest(file);
  (void)read_plan(manifest, stock_registry());
}

void replay_tflite_writer(const fs::path& file) {
  const std::string text = read_file(file);
  if (!nlohmann::json::accept(text)) return;  // the fuzz target only feeds the writer JSON
  CreateArgs args;
  args.where = "regression.json#/export";
  ComponentInstance exporter(stock_registry().component(RAMJET_KIND_EXPORTER, "tflite"), args);
  const auto& table = exporter.ref().vtable<ramjet_exporter_vtable>();
  Example params;
  TempDir out;
  const std::string path = (out / "model.tflite").string();
  ramjet_error error;
  const ramjet_status status = table.export_model(exporter.self(), text.c_str(), &params, path.c_str(), &error);
  throw_on_error(status, error, "tflite exporter");
}

struct Target {
  const char* name;
  ramjet_component_kind kind;  // the component the replay needs, when it needs one
  const char* component;
  Replay replay;
};

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
      {"idx_gzip", RAMJET_KIND_DATA_SOURCE, "idx", replay_idx},
      {"png", RAMJET_KIND_TRANSFORM, "decode_image", replay_image},
      {"jpeg", RAMJET_KIND_TRANSFORM, "decode_image", replay_image},
      {"tfrecord", RAMJET_KIND_DATA_SOURCE, "tfrecord", replay_tfrecord},
      {"safetensors", RAMJET_KIND_DATA_SOURCE, nullptr, replay_safetensors},
      {"plugin_manifest", RAMJET_KIND_DATA_SOURCE, nullptr, replay_plugin_manifest},
      {"pipeline_manifest", RAMJET_KIND_DATA_SOURCE, nullptr, replay_pipeline_manifest},
      {"tflite_writer", RAMJET_KIND_EXPORTER, "tflite", replay_tflite_writer},
  };
  return all;
}

// The kept inputs of every target; `open` selects those named "open-*": findings in code another room owns,
// kept so the fix can be checked, which turn into ordinary regressions (the prefix dropped) once fixed.
std::vector<std::pair<const Target*, fs::path>> kept_inputs(bool open) {
  std::vector<std::pair<const Target*, fs::path>> out;
  const fs::path root = source_dir() / "fuzz" / "regressions";
  for (const auto& target : targets()) {
    const fs::path folder = root / target.name;
    if (!fs::is_directory(folder)) continue;
    if (target.component && !has_component(target.kind, target.component)) continue;  // plugin not built here
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(folder))
      if (entry.is_regular_file() && (entry.path().filename().string().rfind("open-", 0) == 0) == open)
        files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const auto& file : files) out.emplace_back(&target, file);
  }
  return out;
}

void expect_clean_outcome(const Target& target, const fs::path& file) {
  SCOPED_TRACE(file.string());
  try {
    target.replay(file);
  } catch (const InvalidInput& e) {
    EXPECT_LT(std::string(e.what()).size(), 16384u) << "an echoed value was not truncated";
  } catch (const RuntimeFailure& e) {
    ADD_FAILURE() << "a runtime failure, not an input error: " << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "an exception the caller does not expect: " << e.what();
  }
}

TEST(FuzzRegression, EveryKeptInputEndsInACleanError) {
  for (const auto& [target, file] : kept_inputs(false)) expect_clean_outcome(*target, file);
}

// No finding is left open: an input kept as "open-*" (a finding in code another room owns, not fixed yet) fails here,
// so it cannot sit in the repository unnoticed.
TEST(FuzzRegression, NoFindingIsLeftOpen) {
  const auto open = kept_inputs(true);
  std::string names;
  for (const auto& [target, file] : open) names += "\n  " + file.filename().string();
  EXPECT_TRUE(open.empty()) << open.size() << " open findings:" << names;
  for (const auto& [target, file] : open) expect_clean_outcome(*target, file);
}

// --- 2. bad data files through the host -------------------------------------------------------------------------

std::string be32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
}
std::string le32(uint32_t v) {
  return {static_cast<char>(v), static_cast<char>(v >> 8), static_cast<char>(v >> 16), static_cast<char>(v >> 24)};
}
std::string le64(uint64_t v) { return le32(static_cast<uint32_t>(v)) + le32(static_cast<uint32_t>(v >> 32)); }

std::string idx(uint8_t type, const std::vector<uint32_t>& dims, const std::string& data) {
  std::string s{'\0', '\0', static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims) s += be32(d);
  return s + data;
}

// gzip of `raw`, then `zeros` zero bytes more: a small file that inflates far past what a header declares.
std::string gzip(const std::string& raw, uint64_t zeros = 0) {
  z_stream z{};
  deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 16 + MAX_WBITS, 9, Z_DEFAULT_STRATEGY);
  std::string out;
  std::vector<unsigned char> buffer(1 << 16);
  auto pump = [&](const void* data, size_t size, int flush) {
    z.next_in = static_cast<Bytef*>(const_cast<void*>(data));
    z.avail_in = static_cast<uInt>(size);
    do {
      z.next_out = buffer.data();
      z.avail_out = static_cast<uInt>(buffer.size());
      deflate(&z, flush);
      out.append(reinterpret_cast<char*>(buffer.data()), buffer.size() - z.avail_out);
    } while (z.avail_out == 0);
  };
  pump(raw.data(), raw.size(), Z_NO_FLUSH);
  const std::vector<char> block(1 << 20, 0);
  for (uint64_t left = zeros; left > 0; left -= std::min<uint64_t>(left, block.size()))
    pump(block.data(), std::min<uint64_t>(left, block.size()), Z_NO_FLUSH);
  pump(nullptr, 0, Z_FINISH);
  deflateEnd(&z);
  return out;
}

uint32_t masked_crc32c(const std::string& data) {
  uint32_t crc = 0xffffffffu;
  for (unsigned char c : data) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
  }
  crc ^= 0xffffffffu;
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string record(const std::string& data) {
  const std::string length = le64(data.size());
  return length + le32(masked_crc32c(length)) + data + le32(masked_crc32c(data));
}

// A tf.train.Example with an int64 "label" and a bytes "image".
std::string varint(uint64_t v) {
  std::string s;
  do {
    s += static_cast<char>((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
    v >>= 7;
  } while (v);
  return s;
}
std::string field(int number, const std::string& payload) {
  return varint(static_cast<uint64_t>(number) << 3 | 2) + varint(payload.size()) + payload;
}
std::string example(bool with_label) {
  std::string entries = field(1, field(1, "image") + field(2, field(1, field(1, "abcd"))));
  if (with_label) entries += field(1, field(1, "label") + field(2, field(3, field(1, varint(3)))));
  return field(1, entries);
}

std::string seed(const std::string& target, const std::string& name) {
  return read_file(source_dir() / "fuzz" / "corpus" / target / name);
}

// A PNG's IHDR with another width and height, its CRC made right again so only the sizes are wrong.
std::string png_with_size(std::string png, uint32_t width, uint32_t height) {
  png.replace(16, 4, be32(width));
  png.replace(20, 4, be32(height));
  const uint32_t crc = static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(png.data() + 12), 17));
  png.replace(29, 4, be32(crc));
  return png;
}

// The first SOF marker's height and width replaced.
std::string jpeg_with_size(std::string jpeg, uint16_t width, uint16_t height) {
  for (size_t i = 2; i + 9 < jpeg.size(); ++i)
    if (static_cast<unsigned char>(jpeg[i]) == 0xff && (static_cast<unsigned char>(jpeg[i + 1]) & 0xfe) == 0xc0) {
      jpeg[i + 5] = static_cast<char>(height >> 8);
      jpeg[i + 6] = static_cast<char>(height);
      jpeg[i + 7] = static_cast<char>(width >> 8);
      jpeg[i + 8] = static_cast<char>(width);
      return jpeg;
    }
  return jpeg;
}

enum class Source { idx, idx_with_labels, image_folder, tfrecord };

struct BadFile {
  const char* name;
  Source source;
  std::function<std::string()> bytes;   // the bad file
  std::vector<std::string> needles;     // besides the file's name
  const char* needs = nullptr;          // a data source, when the case needs an optional plugin
};

std::vector<BadFile> bad_files() {
  return {
      {"idx_truncated", Source::idx, [] { return idx(0x08, {4, 2, 2}, "123456789"); }, {"at byte 25", "inside item 2"}},
      {"idx_trailing_bytes", Source::idx, [] { return idx(0x08, {1, 1}, "ab"); }, {"at byte 13", "unexpected bytes"}},
      {"idx_bad_magic", Source::idx, [] { return std::string("\x01\x02\x08\x01", 4); }, {"at byte 0", "magic"}},
      {"idx_unknown_type", Source::idx, [] { return idx(0x42, {1, 1}, "x"); }, {"at byte 2", "type code 66"}},
      {"idx_header_cut", Source::idx, [] { return idx(0x08, {5, 5, 5}, "").substr(0, 9); }, {"at byte 9", "header is truncated"}},
      {"idx_item_overflow", Source::idx, [] { return idx(0x08, {1, 65536, 65536, 2}, ""); }, {"at byte 12", "2^32 values"}},
      {"idx_declares_beyond_memory", Source::idx,
       [] { return idx(0x0E, {4294967295u, 65535, 65535}, std::string(64, '\0')); }, {"at byte 4", "declares"}},
      {"idx_zero_dimension", Source::idx, [] { return idx(0x08, {2, 0}, ""); }, {"at byte 8", "dimension 1 is zero"}},
      {"idx_labels_as_images", Source::idx, [] { return idx(0x08, {3}, "\x01\x02\x03"); },
       {"#/data/train/source/images", "1 dimension"}},
      {"gzip_bomb_behind_small_header", Source::idx,
       [] { return gzip(idx(0x08, {10, 28, 28}, std::string(7840, '\x01')), uint64_t{1} << 30); },
       {"at byte 7856", "unexpected bytes after the last item"}},
      {"gzip_declares_beyond_memory", Source::idx, [] { return gzip(idx(0x08, {4000000000u, 4096, 4096}, "")); },
       {"at byte 4", "more than this machine's memory"}},
      {"gzip_truncated", Source::idx,
       [] { const std::string z = gzip(idx(0x08, {64, 8}, std::string(512, 'x'))); return z.substr(0, z.size() / 2); },
       {"gzip stream truncated at compressed byte"}},
      {"gzip_corrupt", Source::idx,
       [] {
         std::string z = gzip(idx(0x08, {64, 64}, std::string(4096, 'x')));
         for (size_t i = 12; i < 24; ++i) z[i] = static_cast<char>(z[i] ^ 0x5a);
         return z;
       },
       {"corrupt gzip data near compressed byte"}},
      {"gzip_then_garbage", Source::idx, [] { return gzip(idx(0x08, {2, 2}, "abcd")) + "garbage"; },
       {"after the gzip stream", "compressed byte"}},
      {"png_forged_size", Source::image_folder, [] { return png_with_size(seed("png", "rgb8.png"), 60000, 60000); },
       {"declares 60000x60000x3"}, "image_folder"},
      {"png_header_lies_about_data", Source::image_folder, [] { return png_with_size(seed("png", "rgb8.png"), 4000, 4000); },
       {"IHDR, byte 16", "can hold at most"}, "image_folder"},
      {"png_truncated", Source::image_folder, [] { return seed("png", "rgb8.png").substr(0, 60); },
       {"truncated PNG", "ends at byte 60"}, "image_folder"},
      {"jpeg_forged_size", Source::image_folder, [] { return jpeg_with_size(seed("jpeg", "rgb_420.jpg"), 65000, 65000); },
       {"declares 65000x65000x3"}, "image_folder"},
      {"jpeg_truncated", Source::image_folder, [] { return seed("jpeg", "rgb_420.jpg").substr(0, 400); },
       {"truncated JPEG", "ends at byte 400"}, "image_folder"},
      {"image_not_an_image", Source::image_folder, [] { return std::string("GIF89a\x01\x00\x01\x00", 10); },
       {"byte 0", "not a PNG or JPEG"}, "image_folder"},
      {"tfrecord_length_past_end", Source::tfrecord,
       [] { return record(example(true)) + record(example(true)).substr(0, 30); },
       {"TFRecord at byte " + std::to_string(record(example(true)).size()), "truncated"}, "tfrecord"},
      {"tfrecord_huge_length", Source::tfrecord,
       [] { const std::string length = le64(uint64_t{1} << 40); return length + le32(masked_crc32c(length)) + "xxxx"; },
       {"TFRecord at byte 0", "more than the 256 MiB"}, "tfrecord"},
      {"tfrecord_data_crc", Source::tfrecord,
       [] { std::string r = record(example(true)); r[r.size() - 6] ^= 1; return record(example(true)) + r; },
       {"TFRecord at byte " + std::to_string(record(example(true)).size()), "data CRC mismatch"}, "tfrecord"},
      {"tfrecord_not_an_example", Source::tfrecord, [] { return record("\xff\xff\xff\xff garbage"); },
       {"TFRecord at byte 0", "not a valid tf.train.Example"}, "tfrecord"},
      {"tfrecord_missing_feature", Source::tfrecord, [] { return record(example(false)); },
       {"TFRecord at byte 0", "feature 'label' is missing"}, "tfrecord"},
      {"labels_2d", Source::idx_with_labels, [] { return idx(0x08, {3, 1}, "\x01\x02\x03"); },
       {"#/data/train/source/labels", "1-D integer"}},
      {"labels_count_mismatch", Source::idx_with_labels, [] { return idx(0x08, {2}, "\x01\x02"); },
       {"#/data/train/source/labels", "holds 2 labels"}},
  };
}

class BadDataFile : public ::testing::TestWithParam<BadFile> {};

TEST_P(BadDataFile, IsRefusedWithTheFileAndThePlace) {
  const BadFile& c = GetParam();
  if (c.needs && !has_component(RAMJET_KIND_DATA_SOURCE, c.needs))
    GTEST_SKIP() << "plugin providing " << c.needs << " not built";
  TempDir dir;
  fs::path bad;
  nlohmann::json source;
  switch (c.source) {
    case Source::idx:
      bad = dir / (std::string(c.name) + ".idx");
      source = {{"type", "idx"}, {"images", bad.string()}};
      break;
    case Source::idx_with_labels:
      bad = dir / (std::string(c.name) + ".labels.idx");
      write_file(dir / "images.idx", idx(0x08, {3, 2, 2}, std::string(12, '\x07')));
      source = {{"type", "idx"}, {"images", (dir / "images.idx").string()}, {"labels", bad.string()}};
      break;
    case Source::image_folder:
      fs::create_directories(dir / "images" / "cats");
      bad = dir / "images" / "cats" / (std::string(c.name) + ".png");
      source = {{"type", "image_folder"}, {"root", (dir / "images").string()}, {"extensions", {".png"}}};
      break;
    case Source::tfrecord:
      bad = dir / (std::string(c.name) + ".tfrecord");
      source = {{"type", "tfrecord"}, {"files", bad.string()},
                {"features", {{"image", {{"type", "bytes"}}}, {"label", {{"type", "int64"}, {"shape", nlohmann::json::array()}}}}}};
      break;
  }
  write_file(bad, c.bytes());
  const nlohmann::json manifest = {{"data", {{"train", {{"source", source}, {"batch", 1}}}}}};
  write_file(dir / "pipeline.json", manifest.dump(2));
  const HostileResult r = run_hostile({host_binary().string(), "pipeline", (dir / "pipeline.json").string(), "--quiet"});
  std::vector<std::string> needles = c.needles;
  needles.push_back(bad.filename().string());
  EXPECT_TRUE(refused_cleanly(r, 2, needles));
}

INSTANTIATE_TEST_SUITE_P(HostileDataFiles, BadDataFile, ::testing::ValuesIn(bad_files()),
                         [](const ::testing::TestParamInfo<BadFile>& info) { return std::string(info.param.name); });

}  // namespace
