#include "image_codec.hpp"

#include <cstdio>

namespace stock_images {

ImageFormat sniff_format(const uint8_t* data, size_t size) {
  static constexpr uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (size >= 8 && std::memcmp(data, kPng, 8) == 0) return ImageFormat::png;
  if (size >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff) return ImageFormat::jpeg;
  return ImageFormat::unknown;
}

ramjet::Tensor decode_image(const uint8_t* data, size_t size, int channels, const std::string& what) {
  switch (sniff_format(data, size)) {
    case ImageFormat::png: return decode_png(data, size, channels, what);
    case ImageFormat::jpeg: return decode_jpeg(data, size, channels, what);
    case ImageFormat::unknown: break;
  }
  if (size == 0) throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, what + ": is empty, not a PNG or JPEG image");
  std::string head;
  for (size_t i = 0; i < size && i < 8; ++i) {
    char hex[4];
    std::snprintf(hex, sizeof hex, "%02x", data[i]);
    head += (i ? " " : "") + std::string(hex);
  }
  throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA,
                      what + ": not a PNG or JPEG image (byte 0 starts with " + head + ", no known signature)");
}

ramjet::Field channels_field() {
  return ramjet::Field::integer("channels").fallback(0).rule([](const nlohmann::json& v) -> std::optional<std::string> {
    const double c = v.get<double>();
    if (c != 0 && c != 1 && c != 3) return "must be 0 (as stored), 1 (gray) or 3 (RGB), got " + ramjet::quote_value(v);
    return std::nullopt;
  });
}

void check_image_size(uint64_t height, uint64_t width, uint64_t channels, const std::string& what) {
  // height and width are at most 2^32 each, so their product cannot overflow 64 bits.
  if (height == 0 || width == 0 || channels == 0 || height * width > kMaxImageBytes / channels)
    throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, what + ": the image header declares " + std::to_string(height) + "x" +
                                                     std::to_string(width) + "x" + std::to_string(channels) +
                                                     " pixels, outside the supported 1 byte .. 256 MiB");
}

}  // namespace stock_images
