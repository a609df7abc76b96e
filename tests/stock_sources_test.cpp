// The idx and synthetic sources: real Fashion-MNIST, and every way an IDX file can be broken.
#include "ramjet/plugin/components.hpp"
#include "ramjet/plugin/failure.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

using namespace ramjet::core;
using namespace ramjet::test;

namespace {

class IdxSourceTest : public ::testing::Test {
 protected:
  PluginRegistry registry{DiscoveryOptions{{stock_plugin_dir()}, {}, {}}};
  TempDir dir;

  DataSource open(const nlohmann::json& config) {
    CreateArgs args;
    args.config = config;
    args.base_dir = dir.path();
    args.where = "test.json#/data/train/source";
    return DataSource(registry.component(RAMJET_KIND_DATA_SOURCE, "idx"), args);
  }
  // Expects construction to fail with InvalidInput containing every fragment.
  void expect_error(const nlohmann::json& config, std::vector<std::string> fragments) {
    try {
      open(config);
      ADD_FAILURE() << "expected an error for " << config.dump();
    } catch (const InvalidInput& e) {
      for (const auto& f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
    }
  }
};

std::string idx(uint8_t type, std::vector<uint32_t> dims, const std::string& data) {
  std::string s{'\0', '\0', static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims)
    for (int shift = 24; shift >= 0; shift -= 8) s += static_cast<char>((d >> shift) & 0xff);
  return s + data;
}

std::string gzip(const std::string& raw, const fs::path& scratch) {
  gzFile f = gzopen(scratch.c_str(), "wb");
  gzwrite(f, raw.data(), static_cast<unsigned>(raw.size()));
  gzclose(f);
  return read_file(scratch);
}

}  // namespace

TEST_F(IdxSourceTest, ReadsFashionMnistFromDebian) {
  auto source = open({{"images", fashion_mnist("train-images-idx3-ubyte.gz").string()},
                      {"labels", fashion_mnist("train-labels-idx1-ubyte.gz").string()},
                      {"num_classes", 10}});
  ASSERT_EQ(source.cardinality(), 60000);
  auto spec = source.element_spec();
  ASSERT_TRUE(spec);
  EXPECT_EQ((*spec)["image"]["shape"], (nlohmann::json{28, 28, 1}));
  Example first;
  source.get(0, first);
  EXPECT_EQ(*static_cast<int32_t*>(first.find("label")->data), 9);  // the first training item is an ankle boot
  EXPECT_EQ(first.find("image")->dtype.code, kDLUInt);
}

TEST_F(IdxSourceTest, RawAndGzippedFilesGiveTheSameElements) {
  const std::string raw = idx(0x08, {3, 2, 2}, std::string("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c", 12));
  write_file(dir / "raw.idx", raw);
  write_file(dir / "packed.idx.gz", gzip(raw, dir / "scratch.gz"));
  auto a = open({{"images", "raw.idx"}});
  auto b = open({{"images", "packed.idx.gz"}});
  ASSERT_EQ(a.cardinality(), 3);
  ASSERT_EQ(b.cardinality(), 3);
  Example ea, eb;
  a.get(2, ea);
  b.get(2, eb);
  const auto* pa = static_cast<const uint8_t*>(ea.find("image")->data);
  const auto* pb = static_cast<const uint8_t*>(eb.find("image")->data);
  EXPECT_EQ((std::vector<uint8_t>(pa, pa + 4)), (std::vector<uint8_t>{9, 10, 11, 12}));
  EXPECT_EQ((std::vector<uint8_t>(pb, pb + 4)), (std::vector<uint8_t>{9, 10, 11, 12}));
}

TEST_F(IdxSourceTest, BigEndianValuesAreConverted) {
  write_file(dir / "ints.idx", idx(0x0C, {2, 1}, std::string("\x00\x00\x01\x02\xff\xff\xff\xfe", 8)));
  auto s = open({{"images", "ints.idx"}});
  Example e0, e1;
  s.get(0, e0);
  s.get(1, e1);
  EXPECT_EQ(*static_cast<int32_t*>(e0.find("image")->data), 258);
  EXPECT_EQ(*static_cast<int32_t*>(e1.find("image")->data), -2);
}

TEST_F(IdxSourceTest, TruncatedDataNamesFileAndOffset) {
  write_file(dir / "short.idx", idx(0x08, {4, 2, 2}, "123456789"));
  expect_error({{"images", "short.idx"}},
               {(dir / "short.idx").string(), "truncated", "ends at byte 25", "inside item 2", "test.json#/data/train/source"});
}

TEST_F(IdxSourceTest, BadMagicAndTypeAreCaught) {
  write_file(dir / "magic.idx", "\x01\x02\x08\x01");
  expect_error({{"images", "magic.idx"}}, {"at byte 0", "two zero bytes"});
  write_file(dir / "type.idx", idx(0x42, {1}, "x"));
  expect_error({{"images", "type.idx"}}, {"at byte 2", "unknown element type code 66"});
  write_file(dir / "tiny.idx", std::string("\0\0", 2));
  expect_error({{"images", "tiny.idx"}}, {"shorter than the 4-byte IDX magic"});
  write_file(dir / "tail.idx", idx(0x08, {1, 1}, "ab"));
  expect_error({{"images", "tail.idx"}}, {"at byte 13", "1 unexpected bytes after the last item"});
}

TEST_F(IdxSourceTest, CorruptAndTruncatedGzipAreCaught) {
  const std::string packed = gzip(idx(0x08, {64, 8}, std::string(512, 'x')), dir / "scratch.gz");
  write_file(dir / "cut.gz", packed.substr(0, packed.size() / 2));
  expect_error({{"images", "cut.gz"}}, {(dir / "cut.gz").string(), "gzip stream truncated at compressed byte"});
  std::string flipped = packed;
  for (size_t i = 12; i < 24 && i < flipped.size(); ++i) flipped[i] = static_cast<char>(flipped[i] ^ 0x5a);
  write_file(dir / "flipped.gz", flipped);
  expect_error({{"images", "flipped.gz"}}, {(dir / "flipped.gz").string(), "corrupt gzip data near compressed byte"});
}

TEST_F(IdxSourceTest, LabelsOutOfRangeOrMiscountedAreCaught) {
  write_file(dir / "images.idx", idx(0x08, {3, 1}, "abc"));
  write_file(dir / "labels.idx", idx(0x08, {3}, std::string("\x01\x07\x02", 3)));
  // Out-of-range labels fail at the element (so on_error: skip can drop just that one).
  auto source = open({{"images", "images.idx"}, {"labels", "labels.idx"}, {"num_classes", 5}});
  Example fine, bad;
  source.get(0, fine);
  try {
    source.get(1, bad);
    ADD_FAILURE() << "label 7 must be refused";
  } catch (const InvalidInput& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "labels.idx").string() + ": label 7 of element 1 (byte 9) is outside [0, 5)"),
              std::string::npos) << e.what();
  }
  write_file(dir / "two.idx", idx(0x08, {2}, "\x01\x02"));
  expect_error({{"images", "images.idx"}, {"labels", "two.idx"}}, {"holds 2 labels but", "holds 3 images"});
  expect_error({{"images", "missing.idx"}}, {(dir / "missing.idx").string(), "cannot open"});
}

TEST(SyntheticSource, IsReproducibleAndRespectsRanges) {
  PluginRegistry registry{DiscoveryOptions{{stock_plugin_dir()}, {}, {}}};
  CreateArgs args;
  args.seed = 5;
  args.config = {{"count", 4},
                 {"tensors", {{"label", {{"shape", nlohmann::json::array()}, {"dtype", "int32"}, {"low", 3}, {"high", 6}}}}}};
  DataSource a(registry.component(RAMJET_KIND_DATA_SOURCE, "synthetic"), args);
  DataSource b(registry.component(RAMJET_KIND_DATA_SOURCE, "synthetic"), args);
  for (int i = 0; i < 4; ++i) {
    Example ea, eb;
    a.get(i, ea);
    b.get(i, eb);
    const int32_t va = *static_cast<int32_t*>(ea.find("label")->data);
    EXPECT_EQ(va, *static_cast<int32_t*>(eb.find("label")->data));
    EXPECT_GE(va, 3);
    EXPECT_LT(va, 6);
  }
  Example out;
  EXPECT_THROW(a.get(4, out), InvalidInput);
  args.config["tensors"]["label"]["dtype"] = "complex64";
  EXPECT_THROW(DataSource(registry.component(RAMJET_KIND_DATA_SOURCE, "synthetic"), args), InvalidInput);
}
