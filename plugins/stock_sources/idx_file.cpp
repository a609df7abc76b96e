#include "idx_file.hpp"

#include "file_bytes.hpp"

#include <ramjet/sdk.hpp>

#include <cstring>
#include <limits>

namespace stock_sources {
namespace {

uint32_t big_endian_u32(const uint8_t* p) {
  return (uint32_t(p[0]) << 24) | (uint32_t(p[1]) << 16) | (uint32_t(p[2]) << 8) | uint32_t(p[3]);
}

bool dtype_from_code(uint8_t code, DLDataType& out) {
  switch (code) {
    case 0x08: out = {kDLUInt, 8, 1}; return true;
    case 0x09: out = {kDLInt, 8, 1}; return true;
    case 0x0B: out = {kDLInt, 16, 1}; return true;
    case 0x0C: out = {kDLInt, 32, 1}; return true;
    case 0x0D: out = {kDLFloat, 32, 1}; return true;
    case 0x0E: out = {kDLFloat, 64, 1}; return true;
    default: return false;
  }
}

void swap_to_host_order(IdxFile& f) {
  const size_t width = ramjet::dtype_bytes(f.dtype);
  if (width == 1) return;
  uint8_t* p = f.bytes.begin() + f.data_offset;
  const size_t n = f.bytes.size - f.data_offset;
  for (size_t i = 0; i + width <= n; i += width)
    for (size_t a = 0, b = width - 1; a < b; ++a, --b) std::swap(p[i + a], p[i + b]);
}

}  // namespace

IdxFile read_idx(const std::filesystem::path& path) {
  IdxFile f;
  f.path = path;
  f.bytes = read_maybe_gzipped(path);
  const std::string name = path.string();
  auto corrupt = [&](size_t offset, const std::string& what) {
    return ramjet::Error(RAMJET_ERR_CORRUPT_DATA, name + ": not a valid IDX file at byte " + std::to_string(offset) +
                                                      " (after decompression): " + what);
  };
  if (f.bytes.size < 4) throw corrupt(f.bytes.size, "the file is shorter than the 4-byte IDX magic");
  if (f.bytes.begin()[0] != 0 || f.bytes.begin()[1] != 0) throw corrupt(0, "the magic must start with two zero bytes");
  if (!dtype_from_code(f.bytes.begin()[2], f.dtype))
    throw corrupt(2, "unknown element type code " + std::to_string(f.bytes.begin()[2]) + " (expected 8, 9, 11, 12, 13 or 14)");
  const size_t ndim = f.bytes.begin()[3];
  if (ndim == 0) throw corrupt(3, "zero dimensions");
  f.data_offset = 4 + 4 * ndim;
  if (f.bytes.size < f.data_offset) throw corrupt(f.bytes.size, "the header is truncated");
  size_t item_elements = 1;
  for (size_t d = 0; d < ndim; ++d) {
    const uint32_t extent = big_endian_u32(f.bytes.begin() + 4 + 4 * d);
    f.dims.push_back(extent);
    if (d > 0) {
      if (extent == 0) throw corrupt(4 + 4 * d, "dimension " + std::to_string(d) + " is zero");
      if (item_elements > std::numeric_limits<uint32_t>::max() / extent)
        throw corrupt(4 + 4 * d, "item size overflows");
      item_elements *= extent;
    }
  }
  f.item_bytes = item_elements * ramjet::dtype_bytes(f.dtype);
  const size_t expected = f.data_offset + static_cast<size_t>(f.dims[0]) * f.item_bytes;
  if (f.bytes.size < expected)
    throw corrupt(f.bytes.size, "truncated: the header promises " + std::to_string(f.dims[0]) + " items (" +
                                      std::to_string(expected) + " bytes) but the data ends at byte " +
                                      std::to_string(f.bytes.size) + ", inside item " +
                                      std::to_string((f.bytes.size - f.data_offset) / f.item_bytes));
  if (f.bytes.size > expected)
    throw corrupt(expected, std::to_string(f.bytes.size - expected) + " unexpected bytes after the last item");
  swap_to_host_order(f);
  return f;
}

}  // namespace stock_sources
