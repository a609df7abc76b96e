// The npy, npz and csv sources: arrays and tables users already have, written here byte by byte (and, where the
// test venv has numpy, by numpy itself), and every way such a file can be broken.
#include "ramjet/plugin/components.hpp"
#include "ramjet/plugin/failure.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>

using namespace ramjet::core;
using namespace ramjet::test;

namespace {

class ArraySourceTest : public ::testing::Test {
 protected:
  PluginRegistry registry{DiscoveryOptions{{stock_plugin_dir()}, {}, {}}};
  TempDir dir;

  DataSource open(const std::string& type, const nlohmann::json& config) {
    CreateArgs args;
    args.config = config;
    args.base_dir = dir.path();
    args.where = "test.json#/data/train/source";
    return DataSource(registry.component(RAMJET_KIND_DATA_SOURCE, type), args);
  }
  // Expects fn() to fail with InvalidInput containing every fragment.
  template <class F>
  static void expect_error(F&& fn, std::vector<std::string> fragments) {
    try {
      fn();
      ADD_FAILURE() << "expected an error";
    } catch (const InvalidInput& e) {
      for (const auto& f : fragments) EXPECT_NE(std::string(e.what()).find(f), std::string::npos) << e.what();
    }
  }
  void expect_open_error(const std::string& type, const nlohmann::json& config, std::vector<std::string> fragments) {
    expect_error([&] { open(type, config); }, std::move(fragments));
  }
};

template <class T>
std::string raw(std::vector<T> values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

// A .npy file as numpy writes it: preamble, the dict padded with spaces to a multiple of 64 bytes, '\n', values.
std::string npy(const std::string& descr, const std::string& shape, const std::string& values, int version = 1,
                const std::string& fortran = "False") {
  std::string dict = "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
  const size_t preamble = version == 1 ? 10 : 12;
  while ((preamble + dict.size() + 1) % 64 != 0) dict += ' ';
  dict += '\n';
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(version);
  out += '\0';
  const auto length = static_cast<uint32_t>(dict.size());
  for (size_t i = 0; i < preamble - 8; ++i) out += static_cast<char>((length >> (8 * i)) & 0xff);
  return out + dict + values;
}

// A .npy file with a hand-written header (padding and '\n' included by the caller).
std::string npy_with_header(const std::string& header, const std::string& values = "") {
  std::string out("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + values;
}

void put16(std::string& s, uint32_t v) {
  s += static_cast<char>(v & 0xff), s += static_cast<char>((v >> 8) & 0xff);
}
void put32(std::string& s, uint32_t v) { put16(s, v & 0xffff), put16(s, v >> 16); }

// A zip archive written by hand (as Python's zipfile lays it out for numpy.savez): each member stored or raw
// deflated, local headers, then the central directory and its end record.
std::string zip(const std::vector<std::pair<std::string, std::string>>& members, bool deflated) {
  std::string out, directory;
  for (const auto& [name, data] : members) {
    std::string body = data;
    if (deflated) {
      z_stream z{};
      deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY);
      body.resize(deflateBound(&z, data.size()));
      z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
      z.avail_in = static_cast<uInt>(data.size());
      z.next_out = reinterpret_cast<Bytef*>(body.data());
      z.avail_out = static_cast<uInt>(body.size());
      deflate(&z, Z_FINISH);
      body.resize(z.total_out);
      deflateEnd(&z);
    }
    const auto crc = static_cast<uint32_t>(crc32(0, reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size())));
    const auto offset = static_cast<uint32_t>(out.size());
    const auto fields = [&](std::string& s) {
      put16(s, 20), put16(s, 0), put16(s, deflated ? 8 : 0), put16(s, 0), put16(s, 0x21);  // version, flags, method, 1980-01-01
      put32(s, crc), put32(s, static_cast<uint32_t>(body.size())), put32(s, static_cast<uint32_t>(data.size()));
      put16(s, static_cast<uint32_t>(name.size())), put16(s, 0);
    };
    put32(out, 0x04034b50), fields(out), out += name, out += body;
    put32(directory, 0x02014b50), put16(directory, 20), fields(directory);
    put16(directory, 0), put16(directory, 0), put16(directory, 0), put32(directory, 0), put32(directory, offset);
    directory += name;
  }
  const auto directory_at = static_cast<uint32_t>(out.size());
  out += directory;
  put32(out, 0x06054b50), put16(out, 0), put16(out, 0);
  put16(out, static_cast<uint32_t>(members.size())), put16(out, static_cast<uint32_t>(members.size()));
  put32(out, static_cast<uint32_t>(directory.size())), put32(out, directory_at), put16(out, 0);
  return out;
}

template <class T>
std::vector<T> values_of(Example& e, const char* key) {
  const DLTensor* t = e.find(key);
  return std::vector<T>(static_cast<const T*>(t->data), static_cast<const T*>(t->data) + element_count(*t));
}

}  // namespace

// ---- npy ----------------------------------------------------------------------------------------------------

TEST_F(ArraySourceTest, NpyReadsEachDtypeAndConvertsTheWideOnes) {
  write_file(dir / "x.npy", npy("|u1", "(3, 2, 2)", raw<uint8_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11})));
  write_file(dir / "y.npy", npy("<i8", "(3,)", raw<int64_t>({7, -2, 2147483647})));
  write_file(dir / "t.npy", npy("<f8", "(3, 2)", raw<double>({0.5, 1.5, 2.5, 3.5, -4.25, 1e30}), 2));
  write_file(dir / "w.npy", npy("<f4", "(3,)", raw<float>({1.f, 2.f, 3.f}), 3));
  write_file(dir / "k.npy", npy("<i4", "(3, 1)", raw<int32_t>({-1, 0, 1})));
  auto s = open("npy", {{"files", {{"image", "x.npy"}, {"label", "y.npy"}, {"target", "t.npy"}, {"w", "w.npy"}, {"k", "k.npy"}}}});
  ASSERT_EQ(s.cardinality(), 3);
  const auto spec = s.element_spec();
  ASSERT_TRUE(spec);
  EXPECT_EQ((*spec)["image"], (nlohmann::json{{"dtype", "uint8"}, {"shape", {2, 2}}}));
  EXPECT_EQ((*spec)["label"], (nlohmann::json{{"dtype", "int32"}, {"shape", nlohmann::json::array()}}));
  EXPECT_EQ((*spec)["target"], (nlohmann::json{{"dtype", "float32"}, {"shape", {2}}}));
  EXPECT_EQ((*spec)["k"], (nlohmann::json{{"dtype", "int32"}, {"shape", {1}}}));
  Example e;
  s.get(2, e);
  EXPECT_EQ(values_of<uint8_t>(e, "image"), (std::vector<uint8_t>{8, 9, 10, 11}));
  EXPECT_EQ(values_of<int32_t>(e, "label"), (std::vector<int32_t>{2147483647}));
  EXPECT_EQ(values_of<float>(e, "target"), (std::vector<float>{-4.25f, 1e30f}));
  EXPECT_EQ(values_of<float>(e, "w"), (std::vector<float>{3.f}));
  EXPECT_EQ(values_of<int32_t>(e, "k"), (std::vector<int32_t>{1}));
  EXPECT_EQ(e.find("label")->ndim, 0);
}

TEST_F(ArraySourceTest, NpyRefusesValuesThatDoNotFitTheNarrowerType) {
  write_file(dir / "big.npy", npy("<i8", "(2,)", raw<int64_t>({1, int64_t{1} << 40})));
  write_file(dir / "huge.npy", npy("<f8", "(2,)", raw<double>({1.0, 1e300})));
  auto ints = open("npy", {{"files", {{"label", "big.npy"}}}});
  Example ok;
  ints.get(0, ok);
  EXPECT_EQ(values_of<int32_t>(ok, "label"), (std::vector<int32_t>{1}));
  Example bad;
  expect_error([&] { ints.get(1, bad); }, {"big.npy", "byte 136", "1099511627776", "example 1", "int32"});
  auto floats = open("npy", {{"files", {{"x", "huge.npy"}}}});
  expect_error([&] { floats.get(1, bad); }, {"huge.npy", "byte 136", "float32"});
}

TEST_F(ArraySourceTest, NpyRefusesHostileFilesNamingTheByteAndTheField) {
  const std::string good = npy("<f4", "(2, 3)", raw<float>({1, 2, 3, 4, 5, 6}));
  const auto refuse = [&](const std::string& bytes, std::vector<std::string> fragments) {
    write_file(dir / "bad.npy", bytes);
    fragments.push_back("bad.npy");
    expect_open_error("npy", {{"files", {{"image", "bad.npy"}}}}, fragments);
  };
  refuse(good.substr(0, good.size() - 5), {"byte 147", "truncated", "to byte 152"});
  refuse(good + "xx", {"byte 152", "2 bytes follow"});
  refuse(good.substr(0, 7), {"byte 0", "ends inside the .npy preamble"});
  refuse(good.substr(0, 100), {"ends inside the header"});
  refuse("PK\x03\x04" + good, {"byte 0", "not a .npy file"});
  refuse("", {"byte 0", "empty"});
  std::string v4 = good;
  v4[6] = 4;
  refuse(v4, {"byte 6", "version 4.0"});
  refuse(npy(">f4", "(2, 3)", raw<float>({1, 2, 3, 4, 5, 6})), {"'descr'", "big-endian", "byte 20"});
  refuse(npy("|O", "(2,)", std::string(16, '\0')), {"'descr'", "object arrays"});
  refuse(npy("<i2", "(2,)", std::string(4, '\0')), {"'descr'", "'<i2'", "not one of"});
  refuse(npy("<f4", "(2, 3)", raw<float>({1, 2, 3, 4, 5, 6}), 1, "True"), {"'fortran_order'", "byte 44", "Fortran"});
  refuse(npy("<f4", "()", raw<float>({1})), {"'shape'", "first axis"});
  refuse(npy("<f4", "(2, x)", raw<float>({1, 2})), {"byte 64", "integer dimension"});
  refuse(npy("<f4", "(4611686018427387904, 4611686018427387904)", ""), {"more bytes than can be addressed"});
  refuse(npy("<f4", "(1099511627776, 1048576)", raw<float>({1})), {"truncated"});  // declares 4 PiB: not allocated
  refuse(npy_with_header("{'descr': '<f4', 'fortran_order': False, }     \n"), {"lacks 'shape'"});
  refuse(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1}\n"), {"byte 66", "unknown key 'x'"});
  refuse(npy_with_header("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,)}\n"), {"repeats"});
  refuse(npy_with_header("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,)}\n"), {"structured"});
  refuse(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}   "), {"does not end with '\\n'"});
  refuse(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)} x\n"), {"byte 66", "unexpected 'x'"});
  refuse(npy_with_header("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (1,)}\n"), {"byte 44", "True or False"});
}

// Another process truncates the file after the source opened it: the examples past the new end are an error naming
// the file and the byte, never a SIGBUS (a mapping of the file would fault on the pages it lost).
TEST_F(ArraySourceTest, NpyFileTruncatedAfterOpeningIsAnErrorNotACrash) {
  const std::string bytes = npy("|u1", "(3, 64, 64)", std::string(3 * 4096, '\x07'));
  write_file(dir / "x.npy", bytes);
  auto s = open("npy", {{"files", {{"image", "x.npy"}}}});
  const size_t header = bytes.size() - 3 * 4096;
  fs::resize_file(dir / "x.npy", header + 4096 + 100);
  Example first;
  s.get(0, first);
  EXPECT_EQ(values_of<uint8_t>(first, "image"), std::vector<uint8_t>(4096, 7));
  Example e;
  const std::string end = "now ends at byte " + std::to_string(header + 4096 + 100);
  expect_error([&] { s.get(1, e); }, {"x.npy", "byte " + std::to_string(header + 4096 + 100) + ":", end, "truncated"});
  expect_error([&] { s.get(2, e); }, {"x.npy", "byte " + std::to_string(header + 2 * 4096) + ":", end, "truncated"});
}

TEST_F(ArraySourceTest, NpyFilesMustAgreeOnTheExampleCount) {
  write_file(dir / "x.npy", npy("<f4", "(3, 2)", raw<float>({1, 2, 3, 4, 5, 6})));
  write_file(dir / "y.npy", npy("<i4", "(2,)", raw<int32_t>({0, 1})));
  expect_open_error("npy", {{"files", {{"image", "x.npy"}, {"label", "y.npy"}}}},
                    {"test.json#/data/train/source/files/label", "y.npy holds 2 examples", "x.npy holds 3"});
  expect_open_error("npy", {{"files", nlohmann::json::object()}}, {"test.json#/data/train/source/files", "at least one"});
  expect_open_error("npy", {{"files", {{"image", 3}}}}, {"test.json#/data/train/source/files/image"});
  expect_open_error("npy", {{"files", {{"image", "absent.npy"}}}}, {"absent.npy", "cannot open"});
}

// ---- npz ----------------------------------------------------------------------------------------------------

TEST_F(ArraySourceTest, NpzReadsStoredAndDeflatedArchives) {
  const std::string x = npy("<f4", "(2, 2)", raw<float>({1, 2, 3, 4})), y = npy("<i8", "(2,)", raw<int64_t>({5, 6}));
  for (bool deflate : {false, true}) {
    write_file(dir / "a.npz", zip({{"x.npy", x}, {"y.npy", y}}, deflate));
    auto s = open("npz", {{"file", "a.npz"}, {"arrays", {{"image", "x"}, {"label", "y.npy"}}}});
    ASSERT_EQ(s.cardinality(), 2);
    EXPECT_EQ((*s.element_spec())["label"]["dtype"], "int32");
    Example e;
    s.get(1, e);
    EXPECT_EQ(values_of<float>(e, "image"), (std::vector<float>{3, 4})) << deflate;
    EXPECT_EQ(values_of<int32_t>(e, "label"), (std::vector<int32_t>{6})) << deflate;
  }
}

TEST_F(ArraySourceTest, NpzRefusesHostileArchives) {
  const std::string x = npy("<f4", "(2, 2)", raw<float>({1, 2, 3, 4})), y = npy("<i4", "(3,)", raw<int32_t>({5, 6, 7}));
  const auto refuse = [&](const std::string& bytes, const nlohmann::json& arrays, std::vector<std::string> fragments) {
    write_file(dir / "bad.npz", bytes);
    fragments.push_back("bad.npz");
    expect_open_error("npz", {{"file", "bad.npz"}, {"arrays", arrays}}, fragments);
  };
  const nlohmann::json just_x = {{"image", "x"}};
  refuse(zip({{"x.npy", x}}, false), {{"image", "z"}},
         {"test.json#/data/train/source/arrays/image", "no array 'z'", "x.npy"});
  refuse(zip({{"x.npy", x}, {"y.npy", y}}, true), {{"image", "x"}, {"label", "y"}},
         {"test.json#/data/train/source/arrays/label", "bad.npz:y.npy holds 3 examples", "holds 2"});
  refuse(x, just_x, {"not a zip archive"});
  const std::string whole = zip({{"x.npy", x}}, true);
  refuse(whole.substr(0, whole.size() / 2), just_x, {"not a zip archive"});
  // One flipped value byte: the stored member's CRC-32 no longer matches.
  std::string flipped = zip({{"x.npy", x}}, false);
  flipped[30 + 5 + 128 + 1] ^= 0x40;
  refuse(flipped, just_x, {"bad.npz:x.npy", "CRC-32"});
  refuse(zip({{"x.npy", x.substr(0, x.size() - 4)}}, true), just_x, {"bad.npz:x.npy", "byte 128", "declares 16 bytes"});
  refuse(zip({{"x.npy", npy("<f4", "(2, 2)", raw<float>({1, 2, 3, 4}), 1, "True")}}, false), just_x,
         {"bad.npz:x.npy", "'fortran_order'"});
  refuse(zip({{"x.npy", "\x93NUMPY"}}, false), just_x, {"bad.npz:x.npy", "byte 0", "preamble"});
  expect_open_error("npz", {{"file", "."}, {"arrays", just_x}}, {"test.json#/data/train/source/file", "not a regular file"});
  expect_open_error("npz", {{"file", "absent.npz"}, {"arrays", just_x}}, {"absent.npz", "no such file"});
}

// numpy itself, where the tests' venv has it: np.save, np.savez and np.savez_compressed as users call them.
TEST_F(ArraySourceTest, ReadsWhatNumpyWrites) {
  const fs::path python = venv_python();
  if (!fs::exists(python) || run(quote(python.string()) + " -c 'import numpy'").exit_code != 0)
    GTEST_SKIP() << "numpy is not installed in " << python << "; ./dev test installs it";
  const std::string script =
      "import numpy as np, sys\n"
      "d = sys.argv[1]\n"
      "x = np.arange(24, dtype=np.float64).reshape(4, 3, 2) / 4\n"
      "y = np.array([3, 1, 4, 1], dtype=np.int64)\n"
      "np.save(d + '/x.npy', x); np.save(d + '/y.npy', y)\n"
      "np.save(d + '/f.npy', np.asfortranarray(x))\n"
      "np.savez(d + '/s.npz', x=x, y=y); np.savez_compressed(d + '/c.npz', x=x, y=y)\n";
  write_file(dir / "make.py", script);
  const auto made = run(quote(python.string()) + " " + quote((dir / "make.py").string()) + " " + quote(dir.path().string()));
  ASSERT_EQ(made.exit_code, 0) << made.output;
  std::vector<DataSource> sources;
  sources.push_back(open("npy", {{"files", {{"image", "x.npy"}, {"label", "y.npy"}}}}));
  sources.push_back(open("npz", {{"file", "s.npz"}, {"arrays", {{"image", "x"}, {"label", "y"}}}}));
  sources.push_back(open("npz", {{"file", "c.npz"}, {"arrays", {{"image", "x"}, {"label", "y"}}}}));
  for (auto& s : sources) {
    ASSERT_EQ(s.cardinality(), 4);
    Example e;
    s.get(2, e);
    EXPECT_EQ(values_of<float>(e, "image"), (std::vector<float>{3, 3.25, 3.5, 3.75, 4, 4.25}));
    EXPECT_EQ(values_of<int32_t>(e, "label"), (std::vector<int32_t>{4}));
  }
  expect_open_error("npy", {{"files", {{"image", "f.npy"}}}}, {"f.npy", "'fortran_order'", "byte"});
}

// ---- csv ----------------------------------------------------------------------------------------------------

TEST_F(ArraySourceTest, CsvReadsNamedAndNumberedColumns) {
  write_file(dir / "t.csv", "a,b,\"c, quoted\",label\r\n1.5,2,3e2,1\r\n-4, 5 ,\"6\",0\r\n");
  auto s = open("csv", {{"file", "t.csv"},
                        {"columns", {{"features", {"a", 2}}, {"label", "label"}, {"b", "b"}}},
                        {"dtypes", {{"b", "float32"}}}});
  ASSERT_EQ(s.cardinality(), 2);
  const auto spec = *s.element_spec();
  EXPECT_EQ(spec["features"], (nlohmann::json{{"dtype", "float32"}, {"shape", {2}}}));
  EXPECT_EQ(spec["label"], (nlohmann::json{{"dtype", "int32"}, {"shape", nlohmann::json::array()}}));
  EXPECT_EQ(spec["b"], (nlohmann::json{{"dtype", "float32"}, {"shape", nlohmann::json::array()}}));
  Example e0, e1;
  s.get(0, e0);
  s.get(1, e1);
  EXPECT_EQ(values_of<float>(e0, "features"), (std::vector<float>{1.5f, 300.f}));
  EXPECT_EQ(values_of<int32_t>(e0, "label"), (std::vector<int32_t>{1}));
  EXPECT_EQ(values_of<float>(e1, "features"), (std::vector<float>{-4.f, 6.f}));
  EXPECT_EQ(values_of<float>(e1, "b"), (std::vector<float>{5.f}));

  write_file(dir / "bom.csv", "\xEF\xBB\xBF" "a,b\n7,8\n");
  auto bom = open("csv", {{"file", "bom.csv"}, {"columns", {{"x", {"a"}}}}});
  Example first;
  bom.get(0, first);
  EXPECT_EQ(values_of<float>(first, "x"), (std::vector<float>{7.f}));

  write_file(dir / "n.csv", "1,2\n3,4");
  auto plain = open("csv", {{"file", "n.csv"}, {"header", false}, {"columns", {{"x", {0}}, {"y", 1}}}});
  ASSERT_EQ(plain.cardinality(), 2);
  Example p;
  plain.get(1, p);
  EXPECT_EQ(values_of<float>(p, "x"), (std::vector<float>{3.f}));
  EXPECT_EQ(values_of<int32_t>(p, "y"), (std::vector<int32_t>{4}));
}

TEST_F(ArraySourceTest, CsvRefusesBadCellsWithTheirLineAndColumn) {
  const auto refuse = [&](const std::string& text, const nlohmann::json& columns, std::vector<std::string> fragments) {
    write_file(dir / "bad.csv", text);
    fragments.push_back("bad.csv");
    expect_open_error("csv", {{"file", "bad.csv"}, {"columns", columns}}, fragments);
  };
  const nlohmann::json xy = {{"x", {"a"}}, {"y", "b"}};
  refuse("a,b\n1,2\n3\n", xy, {"line 3", "1 cells; line 1 has 2"});
  refuse("a,b\n1,two\n", xy, {"line 2, column 2", "\"two\" (b)", "int32"});
  refuse("a,b\n1.5,2.5\n", xy, {"line 2, column 2", "\"2.5\"", "not an int32"});
  refuse("a,b\n1,9999999999\n", xy, {"line 2, column 2", "not an int32"});
  refuse("a,b\nx1,2\n", xy, {"line 2, column 1", "\"x1\" (a)", "not a finite number"});
  refuse("a,b\nnan,2\n", xy, {"line 2, column 1", "not a finite number"});
  refuse("a,b\n,2\n", xy, {"line 2, column 1", "empty cell"});
  refuse("a,b\n1,2\n\n3,4\n", xy, {"line 3", "blank line"});
  refuse("a,b\n\"1,2\n", xy, {"line 2", "not closed"});
  refuse("a,b\n1\"x,2\n", xy, {"line 2, column 1", "quote inside"});
  refuse("", xy, {"empty"});
  refuse("a,b\n1,2\n", {{"x", {"a"}}, {"y", "c"}}, {"test.json#/data/train/source/columns/y", "no column named \"c\""});
  refuse("a,b\n1,2\n", {{"x", {"a", 5}}}, {"test.json#/data/train/source/columns/x/1", "column 5", "2 columns"});
  expect_open_error("csv", {{"file", "bad.csv"}, {"header", false}, {"columns", {{"x", {"a"}}}}},
                    {"test.json#/data/train/source/columns/x/0", "header is false"});
  expect_open_error("csv", {{"file", "bad.csv"}, {"columns", {{"x", {"a"}}}}, {"dtypes", {{"x", "int8"}}}},
                    {"test.json#/data/train/source/dtypes/x"});
  expect_open_error("csv", {{"file", "bad.csv"}, {"columns", {{"x", {"a"}}}}, {"dtypes", {{"z", "int32"}}}},
                    {"test.json#/data/train/source/dtypes/z", "no tensor"});
  expect_open_error("csv", {{"file", "bad.csv"}, {"columns", {{"x", nlohmann::json::array()}}}},
                    {"test.json#/data/train/source/columns/x", "at least one"});
}
