#include "idx_file.hpp"

#include "file_bytes.hpp"

#include <ramjet/sdk.hpp>

#include <algorithm>
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

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s;
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "x" : "") + std::to_string(dims[i]);
  return s;
}

}  // namespace

IdxFile read_idx(const std::filesystem::path& path) {
  IdxFile f;
  f.path = path;
  const std::string name = path.string();
  auto corrupt = [&](uint64_t offset, const std::string& what) {
    return ramjet::Error(RAMJET_ERR_CORRUPT_DATA, name + ": not a valid IDX file at byte " + std::to_string(offset) +
                                                      " (after decompression): " + what);
  };
  ByteReader in(path);

  // The header: magic, then one big-endian uint32 per dimension. At most 4 + 4 × 255 bytes.
  uint8_t header[4 + 4 * 255];
  const size_t got = in.read(header, 4);
  if (got < 4) throw corrupt(got, "the file is shorter than the 4-byte IDX magic");
  if (header[0] != 0 || header[1] != 0) throw corrupt(0, "the magic must start with two zero bytes");
  if (!dtype_from_code(header[2], f.dtype))
    throw corrupt(2, "unknown element type code " + std::to_string(header[2]) + " (expected 8, 9, 11, 12, 13 or 14)");
  const size_t ndim = header[3];
  if (ndim == 0) throw corrupt(3, "zero dimensions");
  f.data_offset = 4 + 4 * ndim;
  const size_t dims_got = in.read(header + 4, 4 * ndim);
  if (dims_got < 4 * ndim)
    throw corrupt(4 + dims_got, "the header is truncated: it declares " + std::to_string(ndim) +
                                    " dimensions, so it ends at byte " + std::to_string(f.data_offset));
  uint64_t item_elements = 1;
  for (size_t d = 0; d < ndim; ++d) {
    const uint32_t extent = big_endian_u32(header + 4 + 4 * d);
    f.dims.push_back(extent);
    if (d > 0) {
      if (extent == 0) throw corrupt(4 + 4 * d, "dimension " + std::to_string(d) + " is zero");
      if (item_elements > std::numeric_limits<uint32_t>::max() / extent)
        throw corrupt(4 + 4 * d, "dimension " + std::to_string(d) + ": one item of " + dims_text(f.dims) +
                                     "... holds more than 2^32 values");
      item_elements *= extent;
    }
  }
  f.item_bytes = static_cast<size_t>(item_elements) * ramjet::dtype_bytes(f.dtype);

  // What the header declares, judged before anything is allocated (item_bytes < 2^35 and dims[0] < 2^32: the
  // product can pass 2^64, and a wrapped size would let items lie outside the buffer).
  uint64_t declared = 0;
  const bool overflows = __builtin_mul_overflow(static_cast<uint64_t>(f.dims[0]), uint64_t{f.item_bytes}, &declared) ||
                         __builtin_add_overflow(declared, uint64_t{f.data_offset}, &declared);
  const uint64_t limit = declared_size_limit();
  if (overflows)
    throw corrupt(4, "the header declares " + dims_text(f.dims) + " values of " +
                         std::to_string(ramjet::dtype_bytes(f.dtype)) + " bytes, more than 2^64 bytes");
  if (declared > limit)
    throw corrupt(4, "the header declares " + dims_text(f.dims) + " values (" + std::to_string(declared) +
                         " bytes), more than this machine's memory allows (" + std::to_string(limit) + " bytes)");
  auto truncated = [&](uint64_t ends_at) {
    return corrupt(ends_at, "truncated: the header promises " + std::to_string(f.dims[0]) + " items (" +
                                std::to_string(declared) + " bytes) but the data ends at byte " +
                                std::to_string(ends_at) + ", inside item " +
                                std::to_string((ends_at - f.data_offset) / f.item_bytes));
  };
  if (!in.gzipped()) {  // the file's size tells at once
    if (in.file_size() < declared) throw truncated(in.file_size());
    if (in.file_size() > declared)
      throw corrupt(declared, std::to_string(in.file_size() - declared) + " unexpected bytes after the last item");
  }

  // The values, read up to what the header declares and no further. Gzip input grows the buffer as the data
  // actually arrives, so a header that lies costs no more memory than the data behind it.
  const size_t total = static_cast<size_t>(declared);
  reserve_bytes(f.bytes, in.gzipped() ? std::min<size_t>(total, std::max<size_t>(in.file_size() * 4, 1 << 16)) : total,
                name);
  std::memcpy(f.bytes.begin(), header, f.data_offset);
  f.bytes.size = f.data_offset;
  while (f.bytes.size < total) {
    if (f.bytes.size == f.bytes.capacity) reserve_bytes(f.bytes, std::min(total, f.bytes.capacity * 2), name);
    const size_t n = in.read(f.bytes.begin() + f.bytes.size, f.bytes.capacity - f.bytes.size);
    f.bytes.size += n;
    if (n == 0) throw truncated(f.bytes.size);
  }
  uint8_t extra = 0;
  if (in.read(&extra, 1) != 0)
    throw corrupt(declared, "unexpected bytes after the last item (the header declares " + dims_text(f.dims) +
                                ", " + std::to_string(declared) + " bytes)");
  swap_to_host_order(f);
  return f;
}

}  // namespace stock_sources
