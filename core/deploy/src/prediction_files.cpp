#include "prediction_files.hpp"

#include "ramjet/plugin/atomic_file.hpp"
#include "ramjet/plugin/failure.hpp"

#include <png.h>

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ramjet::core {
namespace {

bool is_image(const std::vector<int64_t>& shape) {
  return shape.size() == 3 && (shape[2] == 1 || shape[2] == 3 || shape[2] == 4);
}

// libpng reports through callbacks; they collect the bytes or the message, and a longjmp ends a failed write.
struct PngSink {
  std::string bytes;
  std::string error;
};

void append(png_structp png, png_bytep data, png_size_t length) {
  static_cast<PngSink*>(png_get_io_ptr(png))->bytes.append(reinterpret_cast<const char*>(data), length);
}
void flush(png_structp) {}
[[noreturn]] void on_error(png_structp png, png_const_charp message) {
  static_cast<PngSink*>(png_get_error_ptr(png))->error = message;
  png_longjmp(png, 1);
}
void on_warning(png_structp, png_const_charp) {}

std::string example_name(int64_t i, int64_t count, const char* extension) {
  const size_t width = std::max<size_t>(5, std::to_string(std::max<int64_t>(count - 1, 0)).size());
  std::string digits = std::to_string(i);
  return std::string(width - std::min(width, digits.size()), '0') + digits + extension;
}

}  // namespace

std::string npy_bytes(const std::string& descr, const std::vector<int64_t>& shape, const void* data, size_t bytes) {
  std::string dims;
  for (int64_t d : shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
  if (shape.size() == 1) dims += ",";  // a Python tuple of one
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + dims + "), }";
  // Magic, version 1.0, a 2-byte length, then the header padded with spaces to a multiple of 64 and a newline.
  const size_t unpadded = 10 + header.size() + 1;
  header.append((64 - unpadded % 64) % 64, ' ');
  header += '\n';
  std::string out = std::string("\x93NUMPY\x01\x00", 8);
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>((header.size() >> 8) & 0xff);
  out += header;
  out.append(static_cast<const char*>(data), bytes);
  return out;
}

std::string png_bytes(const float* image, int64_t height, int64_t width, int64_t channels, double max_val) {
  std::vector<unsigned char> pixels(static_cast<size_t>(height * width * channels));
  for (size_t i = 0; i < pixels.size(); ++i) {
    const double v = std::round(static_cast<double>(image[i]) / max_val * 255.0);
    pixels[i] = static_cast<unsigned char>(std::clamp(std::isnan(v) ? 0.0 : v, 0.0, 255.0));
  }
  PngSink sink;
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &sink, on_error, on_warning);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (!png || !info) {
    png_destroy_write_struct(&png, nullptr);
    throw RuntimeFailure("--predictions: libpng could not start a PNG");
  }
  std::vector<png_bytep> rows(static_cast<size_t>(height));
  for (int64_t r = 0; r < height; ++r) rows[static_cast<size_t>(r)] = pixels.data() + r * width * channels;
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    throw RuntimeFailure("--predictions: writing a PNG failed: " + sink.error);
  }
  const int color = channels == 1 ? PNG_COLOR_TYPE_GRAY : channels == 3 ? PNG_COLOR_TYPE_RGB : PNG_COLOR_TYPE_RGBA;
  png_set_write_fn(png, &sink, append, flush);
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), 8, color,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_set_rows(png, info, rows.data());
  png_write_png(png, info, PNG_TRANSFORM_IDENTITY, nullptr);
  png_destroy_write_struct(&png, &info);
  return std::move(sink.bytes);
}

std::vector<std::filesystem::path> write_prediction_files(const std::filesystem::path& dir, const Evaluation& result,
                                                          double max_val) {
  std::vector<std::filesystem::path> written;
  std::filesystem::create_directories(dir);
  const int64_t samples = result.samples;
  auto write_npy = [&](const char* name, const Evaluation::Kept& kept) {
    if (kept.values.empty()) return;
    std::vector<int64_t> shape = {samples};
    shape.insert(shape.end(), kept.shape.begin(), kept.shape.end());
    written.push_back(dir / name);
    write_file_atomically(written.back(), npy_bytes("<f4", shape, kept.values.data(), kept.values.size() * sizeof(float)));
  };
  write_npy("predictions.npy", result.outputs);
  write_npy("inputs.npy", result.inputs);
  write_npy("targets.npy", result.targets);
  if (!result.predictions.empty()) {
    written.push_back(dir / "classes.npy");
    write_file_atomically(written.back(), npy_bytes("<i4", {static_cast<int64_t>(result.predictions.size())},
                                                    result.predictions.data(), result.predictions.size() * sizeof(int32_t)));
  }
  const std::vector<int64_t>& image = result.outputs.shape;
  if (is_image(image) && !result.outputs.values.empty()) {
    const int64_t h = image[0], w = image[1], c = image[2];
    for (int64_t i = 0; i < samples; ++i) {
      written.push_back(dir / example_name(i, samples, ".png"));
      write_file_atomically(written.back(), png_bytes(result.outputs.values.data() + i * h * w * c, h, w, c, max_val));
    }
  }
  return written;
}

}  // namespace ramjet::core
