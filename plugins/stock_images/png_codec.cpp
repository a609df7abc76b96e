// PNG decoding with libpng's sequential reader (png_read_info, png_read_image), errors routed through our own
// handlers.
#include "image_codec.hpp"

#include <png.h>

#include <cctype>
#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <vector>

namespace stock_images {
namespace {

// Everything libpng's callbacks touch. It lives in the C++ caller's frame; the functions that call setjmp only
// reach it through a pointer, so its values survive the longjmp.
struct PngJob {
  const uint8_t* data;
  size_t size;
  size_t offset;  // bytes handed to libpng so far
  bool truncated;
  png_structp png;
  png_infop info;
  std::jmp_buf jump;
  char message[256];
};

void on_error(png_structp png, png_const_charp message) {
  auto* job = static_cast<PngJob*>(png_get_error_ptr(png));
  std::snprintf(job->message, sizeof job->message, "%s", message ? message : "unknown libpng error");
  std::longjmp(job->jump, 1);
}

void on_warning(png_structp, png_const_charp) {}  // benign (ancillary chunk) problems; the pixels are intact

void on_read(png_structp png, png_bytep out, size_t count) {
  auto* job = static_cast<PngJob*>(png_get_io_ptr(png));
  if (count > job->size - job->offset) {
    job->truncated = true;
    png_error(png, "unexpected end of data");
  }
  std::memcpy(out, job->data + job->offset, count);
  job->offset += count;
}

// The two steps that can fail inside libpng. No object with a destructor lives in these frames.
bool read_header(PngJob* job, int channels, png_uint_32* height, png_uint_32* width, int* out_channels,
                 size_t* stored_row_bytes) {
  if (setjmp(job->jump)) return false;
  png_structp png = job->png;
  png_infop info = job->info;
  png_set_read_fn(png, job, on_read);
  png_read_info(png, info);
  *stored_row_bytes = png_get_rowbytes(png, info);  // as the file stores rows, before any conversion
  const int color_type = png_get_color_type(png, info);
  const bool has_alpha = (color_type & PNG_COLOR_MASK_ALPHA) != 0 || png_get_valid(png, info, PNG_INFO_tRNS) != 0;
  const bool is_color = (color_type & PNG_COLOR_MASK_COLOR) != 0;
  png_set_expand(png);  // palette -> RGB, gray < 8 bits -> 8 bits, tRNS -> alpha
  if (png_get_bit_depth(png, info) == 16) png_set_scale_16(png);
  if (channels == 1) {
    if (is_color) png_set_rgb_to_gray_fixed(png, 1, -1, -1);
    if (has_alpha) png_set_strip_alpha(png);
  } else if (channels == 3) {
    if (!is_color) png_set_gray_to_rgb(png);
    if (has_alpha) png_set_strip_alpha(png);
  }
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  *height = png_get_image_height(png, info);
  *width = png_get_image_width(png, info);
  *out_channels = png_get_channels(png, info);
  if (png_get_bit_depth(png, info) != 8 || png_get_rowbytes(png, info) != size_t{*width} * size_t(*out_channels))
    png_error(png, "unexpected row layout after conversion to 8 bits");
  return true;
}

bool read_pixels(PngJob* job, png_bytep* rows) {
  if (setjmp(job->jump)) return false;
  png_read_image(job->png, rows);
  png_read_end(job->png, nullptr);
  return true;
}

[[noreturn]] void fail(const PngJob& job, const std::string& what) {
  if (job.truncated)
    throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, what + ": truncated PNG: the data ends at byte " +
                                                     std::to_string(job.size) + " before the image does");
  throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, what + ": corrupt PNG near byte " + std::to_string(job.offset) + ": " +
                                                   job.message);
}

// libpng allocates a chunk's declared length before reading it, and Debian's libpng 1.6.39 does so for text
// chunks whatever png_set_chunk_malloc_max says (a 43-byte PNG whose iTXt chunk claimed 1.9 GB allocated 1.9 GB).
// So every chunk's length is checked against the data first: libpng then never allocates more than the file holds.
void check_chunk_lengths(const uint8_t* data, size_t size, const std::string& what) {
  uint64_t at = 8;  // after the signature
  while (at + 8 <= size) {
    const uint32_t length = (uint32_t(data[at]) << 24) | (uint32_t(data[at + 1]) << 16) |
                            (uint32_t(data[at + 2]) << 8) | uint32_t(data[at + 3]);
    std::string type(reinterpret_cast<const char*>(data + at + 4), 4);
    for (char& c : type)
      if (!std::isalpha(static_cast<unsigned char>(c))) c = '?';
    if (uint64_t{length} + 12 > size - at)
      throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, what + ": truncated PNG: chunk '" + type + "' at byte " +
                                                       std::to_string(at) + " declares " + std::to_string(length) +
                                                       " data bytes but the data ends at byte " + std::to_string(size));
    if (type == "IEND") return;
    at += uint64_t{length} + 12;
  }
}

struct PngJobOwner {
  PngJob& job;
  ~PngJobOwner() { png_destroy_read_struct(&job.png, job.info ? &job.info : nullptr, nullptr); }
};

}  // namespace

ramjet::Tensor decode_png(const uint8_t* data, size_t size, int channels, const std::string& what) {
  if (size > 8) check_chunk_lengths(data, size, what);
  PngJob job{};
  job.data = data;
  job.size = size;
  job.png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &job, on_error, on_warning);
  if (job.png == nullptr) throw ramjet::Error(RAMJET_ERR_OUT_OF_MEMORY, what + ": cannot create a PNG reader");
  PngJobOwner owner{job};
  job.info = png_create_info_struct(job.png);
  if (job.info == nullptr) throw ramjet::Error(RAMJET_ERR_OUT_OF_MEMORY, what + ": cannot create a PNG reader");
  // Besides check_chunk_lengths: no chunk we read needs more than a few MiB (where libpng honours the cap).
  png_set_chunk_malloc_max(job.png, size_t{8} << 20);
  png_set_chunk_cache_max(job.png, 256);

  png_uint_32 height = 0, width = 0;
  int out_channels = 0;
  size_t stored_row_bytes = 0;
  if (!read_header(&job, channels, &height, &width, &out_channels, &stored_row_bytes)) fail(job, what);
  check_image_size(height, width, static_cast<uint64_t>(out_channels), what);
  // Deflate expands at most 1032:1, so the file's size bounds the pixel data it can hold. A header declaring far
  // more is forged or the data is cut short: refused before the pixels are allocated, not after inflating.
  const uint64_t stored_bytes = uint64_t{height} * (uint64_t{stored_row_bytes} + 1);  // + a filter byte per row
  const uint64_t can_hold = uint64_t{size} * 1032 + 4096;
  if (stored_bytes > can_hold)
    throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA,
                        what + ": the PNG header (IHDR, byte 16) declares " + std::to_string(width) + "x" +
                            std::to_string(height) + " pixels, " + std::to_string(stored_bytes) +
                            " bytes of image data, but " + std::to_string(size) +
                            " bytes of PNG can hold at most " + std::to_string(can_hold) +
                            ": the header is forged or the data is truncated");
  ramjet::Tensor image = ramjet::Tensor::zeros(ramjet::dtype_of<uint8_t>(), {int64_t{height}, int64_t{width}, int64_t{out_channels}});
  uint8_t* pixels = image.data<uint8_t>();
  std::vector<png_bytep> rows(height);
  for (png_uint_32 y = 0; y < height; ++y) rows[y] = pixels + size_t{y} * width * size_t(out_channels);
  if (!read_pixels(&job, rows.data())) fail(job, what);
  return image;
}

}  // namespace stock_images
