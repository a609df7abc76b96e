// PNG (libpng) and JPEG (libjpeg-turbo) decoding from memory into uint8 [H, W, C] tensors.
//
// Both libraries report errors through callbacks whose default behaviour is to print and exit() (libjpeg) or
// longjmp to a buffer the caller must set (libpng). Here each library gets its own handlers that record the
// message and longjmp back into a small C-style function holding nothing with a destructor; the C++ caller then
// throws ramjet::Error(RAMJET_ERR_CORRUPT_DATA) naming the data and the byte offset. A corrupt file can never end
// the process.
#pragma once

#include <ramjet/sdk.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace stock_images {

enum class ImageFormat { unknown, png, jpeg };

// Recognises the format by its magic bytes (the file name's extension is not trusted).
ImageFormat sniff_format(const uint8_t* data, size_t size);

// Decodes PNG or JPEG bytes. `channels`: 0 keeps what the file stores (1 gray, 2 gray+alpha, 3 RGB, 4 RGBA), 1
// converts to gray, 3 to RGB (alpha is dropped). 16-bit PNGs are scaled to 8 bits, palettes expanded. `what`
// names the data in messages (a file path, or "tensor 'image'"). Throws ramjet::Error: RAMJET_ERR_CORRUPT_DATA for
// bad data, RAMJET_ERR_UNSUPPORTED for valid but unsupported images (CMYK JPEG).
ramjet::Tensor decode_image(const uint8_t* data, size_t size, int channels, const std::string& what);

ramjet::Tensor decode_png(const uint8_t* data, size_t size, int channels, const std::string& what);
ramjet::Tensor decode_jpeg(const uint8_t* data, size_t size, int channels, const std::string& what);

// The "channels" field (0 = as stored, 1 = gray, 3 = RGB; default 0) both components declare.
ramjet::Field channels_field();

// The largest decoded image accepted: 256 MiB of pixels (e.g. 9000 x 9000 RGB), far above what a training
// pipeline feeds a model, far below what a forged header could make us allocate.
inline constexpr uint64_t kMaxImageBytes = uint64_t{1} << 28;

// Refuses images whose pixel buffer would exceed kMaxImageBytes, before anything is allocated for them.
void check_image_size(uint64_t height, uint64_t width, uint64_t channels, const std::string& what);

}  // namespace stock_images
