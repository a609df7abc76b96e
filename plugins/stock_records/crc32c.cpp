#include "crc32c.hpp"

#include <array>
#include <bit>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <nmmintrin.h>
#define STOCK_RECORDS_HAVE_SSE42 1
#endif

namespace stock_records {
namespace {

constexpr uint32_t kPolynomial = 0x82f63b78u;  // Castagnoli, bit-reversed

// kTables[s][b]: the CRC register after byte b followed by s zero bytes.
constexpr std::array<std::array<uint32_t, 256>, 8> make_tables() {
  std::array<std::array<uint32_t, 256>, 8> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (kPolynomial & (0u - (c & 1u)));
    t[0][i] = c;
  }
  for (size_t s = 1; s < 8; ++s)
    for (size_t i = 0; i < 256; ++i) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xffu];
  return t;
}
constexpr auto kTables = make_tables();

uint32_t portable_update(uint32_t crc, const uint8_t* p, size_t n) {
  if constexpr (std::endian::native == std::endian::little) {
    for (; n >= 8; p += 8, n -= 8) {
      uint64_t w;
      std::memcpy(&w, p, 8);
      w ^= crc;
      crc = kTables[7][w & 0xff] ^ kTables[6][(w >> 8) & 0xff] ^ kTables[5][(w >> 16) & 0xff] ^
            kTables[4][(w >> 24) & 0xff] ^ kTables[3][(w >> 32) & 0xff] ^ kTables[2][(w >> 40) & 0xff] ^
            kTables[1][(w >> 48) & 0xff] ^ kTables[0][w >> 56];
    }
  }
  for (; n > 0; ++p, --n) crc = kTables[0][(crc ^ *p) & 0xffu] ^ (crc >> 8);
  return crc;
}

#ifdef STOCK_RECORDS_HAVE_SSE42
__attribute__((target("sse4.2"))) uint32_t hardware_update(uint32_t crc, const uint8_t* p, size_t n) {
  uint64_t c = crc;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c = _mm_crc32_u64(c, w);
  }
  auto c32 = static_cast<uint32_t>(c);
  for (; n > 0; ++p, --n) c32 = _mm_crc32_u8(c32, *p);
  return c32;
}
#endif

}  // namespace

bool crc32c_hardware_available() {
#ifdef STOCK_RECORDS_HAVE_SSE42
  static const bool available = [] {
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2") != 0;
  }();
  return available;
#else
  return false;
#endif
}

uint32_t crc32c_portable(const void* data, size_t size) {
  return ~portable_update(~0u, static_cast<const uint8_t*>(data), size);
}

uint32_t crc32c_hardware(const void* data, size_t size) {
#ifdef STOCK_RECORDS_HAVE_SSE42
  return ~hardware_update(~0u, static_cast<const uint8_t*>(data), size);
#else
  return crc32c_portable(data, size);
#endif
}

uint32_t crc32c(const void* data, size_t size) {
  return crc32c_hardware_available() ? crc32c_hardware(data, size) : crc32c_portable(data, size);
}

}  // namespace stock_records
