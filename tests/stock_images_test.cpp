// image_folder and decode_image: class folders and labels, exact PNG round-trips, JPEG within codec error, channel
// conversion, and corrupt files that must come back as errors naming the file, never as a dead process.
#include "ramjet/plugin/components.hpp"
#include "ramjet/plugin/failure.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <png.h>

#include <cstdio>  // before jpeglib.h
#include <jpeglib.h>

#include <cstring>
#include <sstream>

using namespace ramjet::core;
using namespace ramjet::test;

namespace {

// ---- writers, with the libraries themselves ------------------------------------------------------------------

// PNG via libpng's simplified API. format: PNG_FORMAT_GRAY, _RGB, _RGBA; or _RGB_COLORMAP with `palette`
// (pixels are then palette indices).
std::string png_bytes(uint32_t width, uint32_t height, uint32_t format, const std::vector<uint8_t>& pixels,
                      const std::vector<uint8_t>& palette = {}) {
  png_image image{};
  image.version = PNG_IMAGE_VERSION;
  image.width = width;
  image.height = height;
  image.format = format;
  image.colormap_entries = static_cast<png_uint_32>(palette.size() / 3);
  const void* colormap = palette.empty() ? nullptr : palette.data();
  png_alloc_size_t size = 0;
  EXPECT_TRUE(png_image_write_to_memory(&image, nullptr, &size, 0, pixels.data(), 0, colormap)) << image.message;
  std::string out(size, '\0');
  EXPECT_TRUE(png_image_write_to_memory(&image, out.data(), &size, 0, pixels.data(), 0, colormap)) << image.message;
  out.resize(size);
  return out;
}

std::string jpeg_bytes(uint32_t width, uint32_t height, int components, const std::vector<uint8_t>& pixels) {
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr err{};
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  unsigned char* buffer = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&cinfo, &buffer, &size);
  cinfo.image_width = width;
  cinfo.image_height = height;
  cinfo.input_components = components;
  cinfo.in_color_space = components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, 95, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < height) {
    auto* row = const_cast<JSAMPLE*>(pixels.data() + size_t{cinfo.next_scanline} * width * size_t(components));
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  std::string out(reinterpret_cast<char*>(buffer), size);
  jpeg_destroy_compress(&cinfo);
  std::free(buffer);
  return out;
}

std::vector<uint8_t> ramp(size_t n, uint8_t start = 0, uint8_t step = 7) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(start + i * step);
  return v;
}

std::vector<int64_t> shape_of(const DLTensor& t) { return std::vector<int64_t>(t.shape, t.shape + t.ndim); }
std::vector<uint8_t> bytes_of(const DLTensor& t) {
  const auto* p = static_cast<const uint8_t*>(t.data);
  return std::vector<uint8_t>(p, p + element_count(t));
}
int32_t label_of(Example& e) { return *static_cast<const int32_t*>(e.find("label")->data); }

class ImageFolderTest : public ::testing::Test {
 protected:
  PluginRegistry registry{DiscoveryOptions{{stock_plugin_dir()}, {}, {}}};
  TempDir dir;

  DataSource open(nlohmann::json config) {
    CreateArgs args;
    args.config = std::move(config);
    args.base_dir = dir.path();
    args.where = "test.json#/data/train/source";
    return DataSource(registry.component(RAMJET_KIND_DATA_SOURCE, "image_folder"), args);
  }
  Transform decoder(nlohmann::json config) {
    CreateArgs args;
    args.config = std::move(config);
    args.where = "test.json#/data/train/map/0";
    return Transform(registry.component(RAMJET_KIND_TRANSFORM, "decode_image"), args);
  }
  // Expects fn() to throw InvalidInput whose message holds every fragment.
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

}  // namespace

TEST_F(ImageFolderTest, LabelsFollowSortedClassFoldersAndPngRoundTripsExactly) {
  const auto rgb = ramp(3 * 2 * 3);   // 3 wide, 2 high, RGB
  const auto gray = ramp(4 * 4, 5);   // 4x4 gray
  const std::vector<uint8_t> flat(8 * 8, 100);
  write_file(dir / "root/b_dog/x.png", png_bytes(3, 2, PNG_FORMAT_RGB, rgb));
  write_file(dir / "root/a_cat/2.png", png_bytes(4, 4, PNG_FORMAT_GRAY, gray));
  write_file(dir / "root/a_cat/1.jpg", jpeg_bytes(8, 8, 1, flat));
  write_file(dir / "root/a_cat/sub/0.PNG", png_bytes(4, 4, PNG_FORMAT_GRAY, gray));  // recursive, any case
  write_file(dir / "root/a_cat/notes.txt", "not an image");
  write_file(dir / "root/a_cat/.hidden.png", "skipped");
  write_file(dir / "root/.git/y.png", "skipped");
  write_file(dir / "root/loose.png", png_bytes(3, 2, PNG_FORMAT_RGB, rgb));  // not in a class folder

  auto source = open({{"root", "root"}});
  ASSERT_EQ(source.cardinality(), 4);
  auto spec = source.element_spec();
  ASSERT_TRUE(spec);
  EXPECT_EQ((*spec)["label"]["classes"], (nlohmann::json{"a_cat", "b_dog"}));
  EXPECT_EQ((*spec)["label"]["dtype"], "int32");
  EXPECT_EQ((*spec)["image"]["shape"], (nlohmann::json{nullptr, nullptr, nullptr}));

  // Order: class, then path within the class: a_cat/1.jpg, a_cat/2.png, a_cat/sub/0.PNG, b_dog/x.png.
  std::vector<Example> e(4);
  for (int i = 0; i < 4; ++i) source.get(i, e[i]);
  EXPECT_EQ(label_of(e[0]), 0);
  EXPECT_EQ(label_of(e[1]), 0);
  EXPECT_EQ(label_of(e[2]), 0);
  EXPECT_EQ(label_of(e[3]), 1);
  EXPECT_EQ(shape_of(*e[0].find("label")), std::vector<int64_t>{});

  EXPECT_EQ(shape_of(*e[0].find("image")), (std::vector<int64_t>{8, 8, 1}));
  for (uint8_t v : bytes_of(*e[0].find("image"))) EXPECT_NEAR(v, 100, 2);  // lossy, but a flat image stays flat
  EXPECT_EQ(shape_of(*e[1].find("image")), (std::vector<int64_t>{4, 4, 1}));
  EXPECT_EQ(bytes_of(*e[1].find("image")), gray);
  EXPECT_EQ(bytes_of(*e[2].find("image")), gray);
  EXPECT_EQ(shape_of(*e[3].find("image")), (std::vector<int64_t>{2, 3, 3}));
  EXPECT_EQ(bytes_of(*e[3].find("image")), rgb);
  EXPECT_EQ(e[3].find("image")->dtype.code, kDLUInt);

  Example out_of_range;
  EXPECT_THROW(source.get(4, out_of_range), InvalidInput);
  auto only_jpeg = open({{"root", "root"}, {"extensions", nlohmann::json::array({".JPG"})}});
  EXPECT_EQ(only_jpeg.cardinality(), 1);
}

TEST_F(ImageFolderTest, ChannelsConvertGrayRgbAlphaAndPalette) {
  const std::vector<uint8_t> gray{10, 200};                         // 2x1
  const std::vector<uint8_t> rgba{50, 50, 50, 7, 90, 90, 90, 255};  // 2x1, R = G = B
  const std::vector<uint8_t> palette{255, 0, 0, 0, 0, 255, 1, 2, 3};
  write_file(dir / "root/c/gray.png", png_bytes(2, 1, PNG_FORMAT_GRAY, gray));
  write_file(dir / "root/c/rgba.png", png_bytes(2, 1, PNG_FORMAT_RGBA, rgba));
  write_file(dir / "root/c/palette.png", png_bytes(3, 1, PNG_FORMAT_RGB_COLORMAP, {2, 0, 1}, palette));

  auto stored = open({{"root", "root"}});  // gray.png, palette.png, rgba.png
  Example g, p, a;
  stored.get(0, g);
  stored.get(1, p);
  stored.get(2, a);
  EXPECT_EQ(shape_of(*g.find("image")), (std::vector<int64_t>{1, 2, 1}));
  EXPECT_EQ(shape_of(*a.find("image")), (std::vector<int64_t>{1, 2, 4}));
  EXPECT_EQ(bytes_of(*a.find("image")), rgba);
  EXPECT_EQ(shape_of(*p.find("image")), (std::vector<int64_t>{1, 3, 3}));
  EXPECT_EQ(bytes_of(*p.find("image")), (std::vector<uint8_t>{1, 2, 3, 255, 0, 0, 0, 0, 255}));

  auto rgb = open({{"root", "root"}, {"channels", 3}});
  EXPECT_EQ((*rgb.element_spec())["image"]["shape"], (nlohmann::json{nullptr, nullptr, 3}));
  Example g3, a3;
  rgb.get(0, g3);
  rgb.get(2, a3);
  EXPECT_EQ(bytes_of(*g3.find("image")), (std::vector<uint8_t>{10, 10, 10, 200, 200, 200}));
  EXPECT_EQ(bytes_of(*a3.find("image")), (std::vector<uint8_t>{50, 50, 50, 90, 90, 90}));  // alpha dropped

  auto mono = open({{"root", "root"}, {"channels", 1}});
  Example a1;
  mono.get(2, a1);
  EXPECT_EQ(shape_of(*a1.find("image")), (std::vector<int64_t>{1, 2, 1}));
  EXPECT_EQ(bytes_of(*a1.find("image")), (std::vector<uint8_t>{50, 90}));

  // JPEG: RGB stored, gray on request; a flat colour survives within codec error.
  std::vector<uint8_t> orange;
  for (int i = 0; i < 16 * 16; ++i) orange.insert(orange.end(), {240, 128, 16});
  write_file(dir / "jpg/o/orange.jpg", jpeg_bytes(16, 16, 3, orange));
  Example j3, j1;
  open({{"root", "jpg"}}).get(0, j3);
  open({{"root", "jpg"}, {"channels", 1}}).get(0, j1);
  EXPECT_EQ(shape_of(*j3.find("image")), (std::vector<int64_t>{16, 16, 3}));
  const auto px = bytes_of(*j3.find("image"));
  EXPECT_NEAR(px[0], 240, 4);
  EXPECT_NEAR(px[1], 128, 4);
  EXPECT_NEAR(px[2], 16, 4);
  EXPECT_EQ(shape_of(*j1.find("image")), (std::vector<int64_t>{16, 16, 1}));
  EXPECT_NEAR(bytes_of(*j1.find("image"))[0], 0.299 * 240 + 0.587 * 128 + 0.114 * 16, 4);  // JPEG's luma
}

TEST_F(ImageFolderTest, CorruptFilesAreErrorsNamingTheFile) {
  const std::string good = png_bytes(16, 16, PNG_FORMAT_RGB, ramp(16 * 16 * 3));
  write_file(dir / "root/a/good.png", good);
  write_file(dir / "root/a/truncated.png", good.substr(0, good.size() / 2));
  std::string flipped = good;  // the last 12 bytes are IEND; the 4 before them are the IDAT chunk's CRC
  flipped[good.size() - 14] = static_cast<char>(flipped[good.size() - 14] ^ 0x55);
  write_file(dir / "root/a/flipped.png", flipped);
  write_file(dir / "root/b/garbage.jpg", std::string("\xff\xd8\xff", 3) + std::string(300, '\x42'));
  const std::string jpeg = jpeg_bytes(16, 16, 3, ramp(16 * 16 * 3));
  write_file(dir / "root/b/truncated.jpg", jpeg.substr(0, jpeg.size() * 2 / 3));
  write_file(dir / "root/b/text.jpg", "hello, not an image");
  auto source = open({{"root", "root"}});
  ASSERT_EQ(source.cardinality(), 6);  // a/flipped, a/good, a/truncated, b/garbage, b/text, b/truncated

  auto expect_error = [&](int64_t index, const std::string& file, const std::vector<std::string>& fragments) {
    std::vector<std::string> all = fragments;
    all.push_back((dir / "root" / file).string());
    expect_invalid([&] { Example e; source.get(index, e); }, all);
  };
  expect_error(0, "a/flipped.png", {"corrupt PNG near byte", "CRC error"});
  expect_error(2, "a/truncated.png", {"truncated PNG", "ends at byte " + std::to_string(good.size() / 2)});
  expect_error(3, "b/garbage.jpg", {"corrupt JPEG near byte"});
  expect_error(4, "b/text.jpg", {"not a PNG or JPEG image", "68 65 6c 6c"});
  expect_error(5, "b/truncated.jpg", {"truncated JPEG", "ends at byte " + std::to_string(jpeg.size() * 2 / 3), "Premature end"});
  // The process and the source survive every one of them.
  Example e;
  source.get(1, e);
  EXPECT_EQ(shape_of(*e.find("image")), (std::vector<int64_t>{16, 16, 3}));
}

TEST_F(ImageFolderTest, RawBytesDecodeLaterWithDecodeImage) {
  const auto rgb = ramp(5 * 3 * 3, 1, 3);
  const std::string png = png_bytes(5, 3, PNG_FORMAT_RGB, rgb);
  write_file(dir / "root/k/x.png", png);
  auto raw = open({{"root", "root"}, {"decode", false}});
  EXPECT_EQ((*raw.element_spec())["image"]["shape"], (nlohmann::json{nullptr}));
  Example e;
  raw.get(0, e);
  ASSERT_EQ(shape_of(*e.find("image")), (std::vector<int64_t>{static_cast<int64_t>(png.size())}));
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(e.find("image")->data), png.size()), png);

  decoder(nlohmann::json::object()).apply(e, 0);
  EXPECT_EQ(shape_of(*e.find("image")), (std::vector<int64_t>{3, 5, 3}));
  EXPECT_EQ(bytes_of(*e.find("image")), rgb);
  EXPECT_EQ(label_of(e), 0);

  // Gray on request, and errors for bytes that are not an image or a tensor that is not bytes.
  Example again;
  raw.get(0, again);
  decoder({{"channels", 1}}).apply(again, 0);
  EXPECT_EQ(shape_of(*again.find("image")), (std::vector<int64_t>{3, 5, 1}));
  Example junk;
  junk.set("image", make_tensor({kDLUInt, 8, 1}, std::vector<int64_t>{10}));
  std::memcpy(junk.find("image")->data, "\x89PNG\r\n\x1a\nxy", 10);
  expect_invalid([&] { decoder(nlohmann::json::object()).apply(junk, 0); }, {"tensor 'image'", "PNG"});
  Example decoded;
  raw.get(0, decoded);
  decoder(nlohmann::json::object()).apply(decoded, 0);
  expect_invalid([&] { decoder(nlohmann::json::object()).apply(decoded, 0); }, {"decode_image", "uint8 [N]"});
  expect_invalid([&] { decoder({{"channels", 2}}); }, {"test.json#/data/train/map/0/channels"});
}

TEST_F(ImageFolderTest, BadConfigurationsNameTheField) {
  expect_invalid([&] { open(nlohmann::json::object()); }, {"test.json#/data/train/source/root", "missing"});
  expect_invalid([&] { open({{"root", "nowhere"}}); }, {"test.json#/data/train/source/root", "not a directory"});
  write_file(dir / "flat/x.png", "x");
  expect_invalid([&] { open({{"root", "flat"}}); }, {"has no class subfolders"});
  write_file(dir / "textonly/c/x.txt", "x");
  expect_invalid([&] { open({{"root", "textonly"}}); }, {"no .jpeg, .jpg, .png files"});
  write_file(dir / "ok/c/x.png", png_bytes(1, 1, PNG_FORMAT_GRAY, {1}));
  expect_invalid([&] { open({{"root", "ok"}, {"channels", 4}}); }, {"test.json#/data/train/source/channels"});
}

TEST(StockImagesPlugin, ExportsOnlyItsEntrySymbol) {
  const auto library = stock_plugin_dir() / "libramjet_stock_images.so";
  auto r = run("nm -D --defined-only --extern-only " + quote(library.string()));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::istringstream lines(r.output);
  std::string address, type, name;
  std::vector<std::string> exported;
  while (lines >> address >> type >> name) exported.push_back(name);
  EXPECT_EQ(exported, std::vector<std::string>{"ramjet_plugin_entry"}) << r.output;
}
