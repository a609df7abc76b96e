// tfrecord: framing and both checksums, tf.train.Example parsing, feature shapes and dtypes, files across a glob,
// corrupt records named by file and byte offset, and resuming from a saved state.
//
// The writer below frames records and encodes tf.train.Example by hand from the protobuf wire format, independent
// of the plugin's generated classes, so a wrong field number in example.proto would fail these tests.
#include "../plugins/stock_records/crc32c.hpp"
#include "ramjet/plugin/components.hpp"
#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/host_api.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <sstream>

using namespace ramjet::core;
using namespace ramjet::test;

namespace {

// ---- a TFRecord writer for the tests -------------------------------------------------------------------------

// Bit-at-a-time CRC-32C: slow and obviously right, to check the plugin's fast one against.
uint32_t reference_crc32c(const std::string& s) {
  uint32_t crc = ~0u;
  for (unsigned char c : s) {
    crc ^= c;
    for (int k = 0; k < 8; ++k) crc = (crc >> 1) ^ (0x82f63b78u & (0u - (crc & 1u)));
  }
  return ~crc;
}
uint32_t masked(const std::string& s) {
  const uint32_t crc = reference_crc32c(s);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}
std::string le(uint64_t v, int bytes) {
  std::string s;
  for (int i = 0; i < bytes; ++i) s += static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}
std::string frame(const std::string& data) {
  const std::string length = le(data.size(), 8);
  return length + le(masked(length), 4) + data + le(masked(data), 4);
}

std::string varint(uint64_t v) {
  std::string s;
  do {
    uint8_t b = v & 0x7f;
    v >>= 7;
    s += static_cast<char>(v ? b | 0x80 : b);
  } while (v);
  return s;
}
// A length-delimited field (wire type 2).
std::string field(int number, const std::string& payload) {
  return varint(static_cast<uint64_t>(number) << 3 | 2) + varint(payload.size()) + payload;
}

struct Feature {
  std::string name;
  std::string list;  // an encoded BytesList / FloatList / Int64List
  int kind;          // Feature field number: 1 bytes_list, 2 float_list, 3 int64_list
};
Feature bytes_feature(const std::string& name, const std::vector<std::string>& values) {
  std::string list;
  for (const auto& v : values) list += field(1, v);
  return {name, list, 1};
}
Feature int64_feature(const std::string& name, const std::vector<int64_t>& values, bool packed = true) {
  std::string list;
  if (packed) {
    std::string payload;
    for (int64_t v : values) payload += varint(static_cast<uint64_t>(v));
    list = field(1, payload);
  } else {  // what old writers emit; proto3 parsers accept both
    for (int64_t v : values) list += varint(1 << 3 | 0) + varint(static_cast<uint64_t>(v));
  }
  return {name, list, 3};
}
Feature float_feature(const std::string& name, const std::vector<float>& values) {
  std::string payload;
  for (float v : values) {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    payload += le(bits, 4);
  }
  return {name, field(1, payload), 2};
}
std::string example(const std::vector<Feature>& features) {
  std::string map;
  for (const auto& f : features) map += field(1, field(1, f.name) + field(2, field(f.kind, f.list)));
  return field(1, map);  // Example.features = 1, Features.feature = 1 (map entries: key = 1, value = 2)
}

// Record i of the test data set.
std::string record(int i) {
  return example({bytes_feature("image", {"img" + std::to_string(i)}),
                  int64_feature("label", {i}),
                  float_feature("weights", {0.5f * i, -1.0f}),
                  int64_feature("ids", std::vector<int64_t>(static_cast<size_t>(i % 3), int64_t{-7} * i), i % 2 == 0),
                  bytes_feature("pixels", {std::string{char(i), char(i + 1), char(i + 2), char(i + 3)}})});
}

// ---- reading ------------------------------------------------------------------------------------------------

class TFRecordTest : public ::testing::Test {
 protected:
  PluginRegistry registry{DiscoveryOptions{{stock_plugin_dir()}, {}, {}}};
  TempDir dir;
  const nlohmann::json features = {
      {"image", {{"type", "bytes"}}},
      {"label", {{"type", "int64"}, {"shape", nlohmann::json::array()}, {"dtype", "int32"}}},
      {"weights", {{"type", "float"}, {"shape", {2}}}},
      {"ids", {{"type", "int64"}}},
      {"pixels", {{"type", "bytes"}, {"shape", {2, -1}}}}};

  // Records 0-2 in a.tfrecord, 3-4 in b.tfrecord. Returns each record's byte offset in its file.
  std::vector<uint64_t> write_two_files() {
    std::vector<uint64_t> offsets;
    std::string a, b;
    for (int i = 0; i < 5; ++i) {
      std::string& file = i < 3 ? a : b;
      offsets.push_back(file.size());
      file += frame(record(i));
    }
    write_file(dir / "data/a.tfrecord", a);
    write_file(dir / "data/b.tfrecord", b);
    return offsets;
  }
  DataSource open(const nlohmann::json& files, const nlohmann::json& feats) {
    CreateArgs args;
    args.config = {{"files", files}, {"features", feats}};
    args.base_dir = dir.path();
    args.where = "test.json#/data/train/source";
    return DataSource(registry.component(RAMJET_KIND_DATA_SOURCE, "tfrecord"), args);
  }
  DataSource open(const nlohmann::json& files) { return open(files, features); }

  static std::string save(DataSource& s) {
    ramjet_buffer buffer;
    ramjet_error error;
    throw_on_error(s.ref().vtable<ramjet_data_source_vtable>().save_state(s.self(), &buffer, &error), error, "save");
    return buffer.bytes;
  }
  static void restore(DataSource& s, const std::string& state) {
    ramjet_error error;
    throw_on_error(s.ref().vtable<ramjet_data_source_vtable>().restore_state(s.self(), state.data(), state.size(), &error),
                   error, "restore");
  }
  // The label of the next record, or -1 at the end.
  static int next_label(DataSource& s) {
    Example e;
    if (!s.next(e)) return -1;
    return *static_cast<const int32_t*>(e.find("label")->data);
  }
  template <class F>
  static void expect_invalid(F&& fn, const std::vector<std::string>& fragments) {
    try {
      fn();
      ADD_FAILURE() << "expected InvalidInput";
    } catch (const InvalidInput& e) {
      for (const auto& f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
    }
  }
};

template <class T>
std::vector<T> values(const DLTensor& t) {
  const auto* p = static_cast<const T*>(t.data);
  return std::vector<T>(p, p + element_count(t));
}
std::vector<int64_t> shape_of(const DLTensor& t) { return std::vector<int64_t>(t.shape, t.shape + t.ndim); }

}  // namespace

TEST(Crc32c, MatchesTheCheckValueInBothImplementations) {
  EXPECT_EQ(reference_crc32c("123456789"), 0xe3069283u);  // the CRC-32C check value (RFC 3720)
  EXPECT_EQ(stock_records::crc32c("123456789", 9), 0xe3069283u);
  EXPECT_EQ(stock_records::crc32c_portable("123456789", 9), 0xe3069283u);
  std::mt19937 rng(7);
  std::string data(300, '\0');
  for (auto& c : data) c = static_cast<char>(rng());
  for (size_t start = 0; start < 9; ++start)
    for (size_t length : {0, 1, 7, 8, 9, 15, 16, 17, 64, 255, 291}) {
      const std::string piece = data.substr(start, length);
      const uint32_t expected = reference_crc32c(piece);
      EXPECT_EQ(stock_records::crc32c_portable(piece.data(), piece.size()), expected) << start << "+" << length;
      if (stock_records::crc32c_hardware_available()) {
        EXPECT_EQ(stock_records::crc32c_hardware(piece.data(), piece.size()), expected) << start << "+" << length;
      }
    }
}

TEST_F(TFRecordTest, RoundTripsRecordsAcrossTwoFilesInOrder) {
  write_two_files();
  auto source = open("data/*.tfrecord");
  EXPECT_EQ(source.cardinality(), -1);
  EXPECT_FALSE(source.random_access());
  for (int i = 0; i < 5; ++i) {
    Example e;
    ASSERT_TRUE(source.next(e)) << "record " << i;
    const DLTensor& image = *e.find("image");
    EXPECT_EQ(image.dtype.code, kDLUInt);
    EXPECT_EQ(std::string(static_cast<const char*>(image.data), static_cast<size_t>(image.shape[0])),
              "img" + std::to_string(i));
    const DLTensor& label = *e.find("label");
    EXPECT_EQ(label.ndim, 0);
    EXPECT_EQ(label.dtype.bits, 32);
    EXPECT_EQ(values<int32_t>(label), std::vector<int32_t>{i});
    EXPECT_EQ(values<float>(*e.find("weights")), (std::vector<float>{0.5f * i, -1.0f}));
    const DLTensor& ids = *e.find("ids");
    EXPECT_EQ(ids.dtype.bits, 64);
    EXPECT_EQ(values<int64_t>(ids), std::vector<int64_t>(static_cast<size_t>(i % 3), int64_t{-7} * i));
    const DLTensor& pixels = *e.find("pixels");
    EXPECT_EQ(shape_of(pixels), (std::vector<int64_t>{2, 2}));
    EXPECT_EQ(values<uint8_t>(pixels), (std::vector<uint8_t>{uint8_t(i), uint8_t(i + 1), uint8_t(i + 2), uint8_t(i + 3)}));
  }
  Example end;
  EXPECT_FALSE(source.next(end));
  source.reset(1);  // the next epoch starts at the first file again
  EXPECT_EQ(next_label(source), 0);

  // An explicit list keeps its order.
  auto listed = open({"data/b.tfrecord", dir.path().string() + "/data/a.tfrecord"});
  std::vector<int> labels;
  for (int l; (l = next_label(listed)) >= 0;) labels.push_back(l);
  EXPECT_EQ(labels, (std::vector<int>{3, 4, 0, 1, 2}));

  auto spec = source.element_spec();
  ASSERT_TRUE(spec);
  EXPECT_EQ((*spec)["label"], (nlohmann::json{{"dtype", "int32"}, {"shape", nlohmann::json::array()}}));
  EXPECT_EQ((*spec)["pixels"]["shape"], (nlohmann::json{2, nullptr}));
  EXPECT_EQ((*spec)["image"], (nlohmann::json{{"dtype", "uint8"}, {"shape", {nullptr}}}));
  EXPECT_EQ((*spec)["weights"]["dtype"], "float32");
}

TEST_F(TFRecordTest, CrcMismatchNamesFileAndRecordOffset) {
  const auto offsets = write_two_files();
  const fs::path a = dir / "data/a.tfrecord";
  std::string bytes = read_file(a);
  const size_t in_data = offsets[1] + 12 + 3;  // a data byte of record 1
  bytes[in_data] = static_cast<char>(bytes[in_data] ^ 0x01);
  write_file(a, bytes);
  auto source = open("data/a.tfrecord");
  EXPECT_EQ(next_label(source), 0);
  const std::vector<std::string> expected{a.string(), "TFRecord at byte " + std::to_string(offsets[1]),
                                          "data CRC mismatch"};
  expect_invalid([&] { next_label(source); }, expected);
  expect_invalid([&] { next_label(source); }, expected);  // the bad record is not skipped

  bytes = read_file(a);
  bytes[in_data] = static_cast<char>(bytes[in_data] ^ 0x01);  // repair the data, damage the length instead
  bytes[offsets[2]] = static_cast<char>(bytes[offsets[2]] ^ 0x01);
  write_file(a, bytes);
  auto damaged_header = open("data/a.tfrecord");
  EXPECT_EQ(next_label(damaged_header), 0);
  EXPECT_EQ(next_label(damaged_header), 1);
  expect_invalid([&] { next_label(damaged_header); },
                 {a.string(), "TFRecord at byte " + std::to_string(offsets[2]), "length CRC mismatch"});
}

TEST_F(TFRecordTest, TruncatedFilesNameFileAndRecordOffset) {
  const auto offsets = write_two_files();
  const fs::path a = dir / "data/a.tfrecord";
  const std::string bytes = read_file(a);
  write_file(dir / "cut_data.tfrecord", bytes.substr(0, offsets[2] + 20));
  auto cut = open("cut_data.tfrecord");
  EXPECT_EQ(next_label(cut), 0);
  EXPECT_EQ(next_label(cut), 1);
  expect_invalid([&] { next_label(cut); },
                 {(dir / "cut_data.tfrecord").string(), "TFRecord at byte " + std::to_string(offsets[2]), "truncated",
                  "file ends at byte " + std::to_string(offsets[2] + 20)});

  write_file(dir / "cut_header.tfrecord", bytes.substr(0, offsets[1] + 5));
  auto header = open("cut_header.tfrecord");
  EXPECT_EQ(next_label(header), 0);
  expect_invalid([&] { next_label(header); },
                 {"TFRecord at byte " + std::to_string(offsets[1]), "inside the 12-byte record header"});
}

TEST_F(TFRecordTest, BadExamplesNameFileOffsetAndFeature) {
  const std::string good = frame(record(0));
  auto read_second = [&](const std::string& name, const std::string& data, const nlohmann::json& feats) {
    write_file(dir / name, good + frame(data));
    auto s = open(name, feats);
    Example first, second;
    s.next(first);
    s.next(second);
  };
  const std::string at = "TFRecord at byte " + std::to_string(good.size());
  expect_invalid([&] { read_second("garbage.tfrecord", std::string("\x0a\xff\xff\xff\xff\x0f", 6), features); },
                 {(dir / "garbage.tfrecord").string(), at, "not a valid tf.train.Example"});
  const nlohmann::json label_only = {{"label", {{"type", "int64"}, {"shape", nlohmann::json::array()}, {"dtype", "int32"}}}};
  expect_invalid([&] { read_second("missing.tfrecord", example({int64_feature("other", {1})}), label_only); },
                 {at, "feature 'label' is missing"});
  expect_invalid([&] { read_second("kind.tfrecord", example({float_feature("label", {1.0f})}), label_only); },
                 {at, "feature 'label' holds float values, declared int64"});
  expect_invalid([&] { read_second("count.tfrecord", example({int64_feature("label", {1, 2})}), label_only); },
                 {at, "feature 'label' holds 2 values, which do not fit its shape []"});
  expect_invalid([&] { read_second("wide.tfrecord", example({int64_feature("label", {int64_t{1} << 40})}), label_only); },
                 {at, "value 1099511627776 does not fit int32"});
}

TEST_F(TFRecordTest, SaveAndRestoreResumeAtTheRightRecord) {
  write_two_files();
  auto source = open("data/*.tfrecord");
  const std::string at_start = save(source);
  EXPECT_EQ(next_label(source), 0);
  EXPECT_EQ(next_label(source), 1);
  const std::string mid_file = save(source);
  EXPECT_EQ(next_label(source), 2);
  const std::string file_end = save(source);  // after the last record of a.tfrecord
  EXPECT_EQ(next_label(source), 3);
  const std::string second_file = save(source);
  EXPECT_EQ(next_label(source), 4);
  EXPECT_EQ(next_label(source), -1);
  const std::string finished = save(source);

  // A fresh instance, as after a restart.
  auto resumed = open("data/*.tfrecord");
  restore(resumed, mid_file);
  EXPECT_EQ(next_label(resumed), 2);
  EXPECT_EQ(next_label(resumed), 3);
  restore(resumed, file_end);
  EXPECT_EQ(next_label(resumed), 3);
  restore(resumed, second_file);
  EXPECT_EQ(next_label(resumed), 4);
  EXPECT_EQ(next_label(resumed), -1);
  restore(resumed, at_start);
  EXPECT_EQ(next_label(resumed), 0);
  restore(resumed, finished);
  EXPECT_EQ(next_label(resumed), -1);
  EXPECT_EQ(save(resumed), finished);

  // A state that does not fit these files is refused.
  auto only_b = open("data/b.tfrecord");
  expect_invalid([&] { restore(only_b, second_file); }, {"saved state points at file 1", "there are 1 files"});
  expect_invalid([&] { restore(only_b, mid_file); }, {"a.tfrecord", "b.tfrecord"});
  expect_invalid([&] { restore(only_b, "{not json"); }, {"cannot restore the saved state"});
}

TEST_F(TFRecordTest, BadConfigurationsNameTheField) {
  write_two_files();
  expect_invalid([&] { open("data/*.nothing"); }, {"test.json#/data/train/source/files", "matches no files"});
  expect_invalid([&] { open("data/missing.tfrecord"); },
                 {"test.json#/data/train/source/files", (dir / "data/missing.tfrecord").string(), "no such file"});
  expect_invalid([&] { open(42); }, {"test.json#/data/train/source/files"});
  expect_invalid([&] { open("data/a.tfrecord", {{"label", {{"type", "string"}}}}); },
                 {"test.json#/data/train/source/features/label/type"});
  expect_invalid([&] { open("data/a.tfrecord", {{"label", {{"type", "float"}, {"dtype", "int32"}}}}); },
                 {"test.json#/data/train/source/features/label/dtype"});
  expect_invalid([&] { open("data/a.tfrecord", {{"a/b", {{"type", "int64"}, {"shape", {-1, -1}}}}}); },
                 {"test.json#/data/train/source/features/a~1b/shape"});
  expect_invalid([&] { open("data/a.tfrecord", nlohmann::json::object()); },
                 {"test.json#/data/train/source/features"});
}

TEST(TFRecordPlugin, LoadsAgainAfterUnloadingAndExportsOnlyItsEntrySymbol) {
  TempDir dir;
  write_file(dir / "one.tfrecord", frame(example({int64_feature("x", {5, 6})})));
  for (int round = 0; round < 3; ++round) {  // protobuf state must survive the library coming and going
    PluginRegistry registry{DiscoveryOptions{{stock_plugin_dir()}, {}, {}}};
    CreateArgs args;
    args.config = {{"files", (dir / "one.tfrecord").string()}, {"features", {{"x", {{"type", "int64"}}}}}};
    DataSource source(registry.component(RAMJET_KIND_DATA_SOURCE, "tfrecord"), args);
    Example e;
    ASSERT_TRUE(source.next(e));
    EXPECT_EQ(values<int64_t>(*e.find("x")), (std::vector<int64_t>{5, 6}));
  }
  auto r = run("nm -D --defined-only --extern-only " + quote((stock_plugin_dir() / "libramjet_stock_records.so").string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream lines(r.output);
  std::string address, type, name;
  std::vector<std::string> exported;
  while (lines >> address >> type >> name) exported.push_back(name);
  EXPECT_EQ(exported, std::vector<std::string>{"ramjet_plugin_entry"}) << r.output;
}
