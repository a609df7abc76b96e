// Writes the PNG and JPEG seed corpora (fuzz/corpus/png, fuzz/corpus/jpeg): small images in each layout the
// decoders convert from — gray, gray+alpha, RGB, RGBA, palette with transparency, 16-bit, interlaced PNGs;
// baseline gray, baseline 4:2:0 colour, progressive and restart-marker JPEGs. Built and run by hand:
//   g++ -O1 -o /tmp/make_image_seeds fuzz/tools/make_image_seeds.cpp -lpng -ljpeg && /tmp/make_image_seeds fuzz/corpus
#include <png.h>
#include <cstdio>
#include <jpeglib.h>

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace {

std::vector<uint8_t> pattern(size_t n) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(i * 37 + (i >> 3) * 11);
  return v;
}

void write_png(const std::filesystem::path& path, int width, int height, int color_type, int bit_depth,
               bool interlaced) {
  FILE* f = std::fopen(path.c_str(), "wb");
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, nullptr, nullptr);
  png_infop info = png_create_info_struct(png);
  png_init_io(png, f);
  png_set_IHDR(png, info, width, height, bit_depth, color_type, interlaced ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
               PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  if (color_type == PNG_COLOR_TYPE_PALETTE) {
    png_color palette[4] = {{0, 0, 0}, {255, 0, 0}, {0, 255, 0}, {0, 0, 255}};
    png_set_PLTE(png, info, palette, 4);
    png_byte alpha[2] = {0, 128};
    png_set_tRNS(png, info, alpha, 2, nullptr);
  }
  png_write_info(png, info);
  const int channels = color_type == PNG_COLOR_TYPE_GRAY || color_type == PNG_COLOR_TYPE_PALETTE ? 1
                       : color_type == PNG_COLOR_TYPE_GRAY_ALPHA ? 2 : color_type == PNG_COLOR_TYPE_RGB ? 3 : 4;
  const size_t row_bytes = (size_t(width) * channels * bit_depth + 7) / 8;
  std::vector<uint8_t> pixels = pattern(row_bytes * height);
  if (color_type == PNG_COLOR_TYPE_PALETTE)
    for (auto& p : pixels) p &= bit_depth == 8 ? 0x03 : 0xff;  // indices within the 4-entry palette
  std::vector<png_bytep> rows(height);
  for (int y = 0; y < height; ++y) rows[y] = pixels.data() + y * row_bytes;
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  std::fclose(f);
}

void write_jpeg(const std::filesystem::path& path, int width, int height, int components, bool progressive,
                int restart_rows, int quality) {
  jpeg_compress_struct cinfo{};
  jpeg_error_mgr err{};
  cinfo.err = jpeg_std_error(&err);
  jpeg_create_compress(&cinfo);
  FILE* f = std::fopen(path.c_str(), "wb");
  jpeg_stdio_dest(&cinfo, f);
  cinfo.image_width = width;
  cinfo.image_height = height;
  cinfo.input_components = components;
  cinfo.in_color_space = components == 1 ? JCS_GRAYSCALE : JCS_RGB;
  jpeg_set_defaults(&cinfo);
  jpeg_set_quality(&cinfo, quality, TRUE);
  if (progressive) jpeg_simple_progression(&cinfo);
  cinfo.restart_in_rows = restart_rows;
  jpeg_start_compress(&cinfo, TRUE);
  std::vector<uint8_t> pixels = pattern(size_t(width) * height * components);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = pixels.data() + size_t(cinfo.next_scanline) * width * components;
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  std::fclose(f);
}

}  // namespace

int main(int argc, char** argv) {
  const std::filesystem::path root = argc > 1 ? argv[1] : "fuzz/corpus";
  std::filesystem::create_directories(root / "png");
  std::filesystem::create_directories(root / "jpeg");
  write_png(root / "png/gray8.png", 5, 4, PNG_COLOR_TYPE_GRAY, 8, false);
  write_png(root / "png/gray1.png", 9, 3, PNG_COLOR_TYPE_GRAY, 1, false);
  write_png(root / "png/gray_alpha.png", 4, 4, PNG_COLOR_TYPE_GRAY_ALPHA, 8, false);
  write_png(root / "png/rgb8.png", 6, 5, PNG_COLOR_TYPE_RGB, 8, false);
  write_png(root / "png/rgba8.png", 3, 3, PNG_COLOR_TYPE_RGB_ALPHA, 8, false);
  write_png(root / "png/rgb16.png", 4, 2, PNG_COLOR_TYPE_RGB, 16, false);
  write_png(root / "png/palette_trns.png", 7, 3, PNG_COLOR_TYPE_PALETTE, 8, false);
  write_png(root / "png/palette2.png", 8, 2, PNG_COLOR_TYPE_PALETTE, 2, false);
  write_png(root / "png/interlaced_rgb.png", 9, 9, PNG_COLOR_TYPE_RGB, 8, true);
  write_jpeg(root / "jpeg/gray.jpg", 8, 8, 1, false, 0, 90);
  write_jpeg(root / "jpeg/rgb_420.jpg", 16, 16, 3, false, 0, 75);
  write_jpeg(root / "jpeg/rgb_odd.jpg", 13, 7, 3, false, 0, 50);
  write_jpeg(root / "jpeg/progressive.jpg", 16, 8, 3, true, 0, 80);
  write_jpeg(root / "jpeg/restarts.jpg", 24, 24, 3, false, 1, 85);
  return 0;
}
