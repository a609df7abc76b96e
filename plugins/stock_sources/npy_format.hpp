// The .npy format (numpy.lib.format): the magic "\x93NUMPY", a version byte pair (1.0, 2.0 or 3.0), the header's
// length (uint16 little-endian for 1.0, uint32 for 2.0 and 3.0), then the header itself, a Python dict literal
// such as {'descr': '<f4', 'fortran_order': False, 'shape': (3, 28, 28), } padded with spaces and ended by '\n',
// then the values. The header is parsed strictly: exactly those three keys, nothing after the dict but padding,
// and every problem is reported with the byte offset where it was found.
#pragma once

#include <ramjet/abi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace stock_sources {

struct NpyHeader {
  DLDataType stored{};  // the file's element type: uint8, int32, int64, float32 or float64 (little-endian)
  DLDataType output{};  // what an element becomes: int64 -> int32, float64 -> float32, others as stored
  std::vector<int64_t> shape;  // shape[0] is the number of examples
  size_t data_offset = 0;      // where the values start
  size_t data_bytes = 0;       // product(shape) * element size, checked against overflow
  size_t example_bytes = 0;    // stored bytes of one example (product(shape[1:]) * element size)
};

// Reads the header from the first `size` bytes of a file (which may hold more: the values). `name` is how errors
// call the file. Throws ramjet::Error (CORRUPT_DATA) naming the file, the byte offset and, for a refused value,
// the header field ('descr', 'fortran_order', 'shape'). `size` must reach at least to the header's end; whether
// the values are all there is for the caller to check against data_offset + data_bytes.
NpyHeader parse_npy_header(const uint8_t* data, size_t size, const std::string& name);

// Bytes of the fixed preamble (magic, version, header length) for a version: 10 for 1.0, 12 for 2.0 and 3.0.
// The header's full length is known once these are read; 0 if they do not start a .npy file.
size_t npy_header_end(const uint8_t* data, size_t size);

// Throws the corrupt-data error every .npy reader gives: "<name>: byte <offset>: <why>".
[[noreturn]] void npy_corrupt(const std::string& name, size_t offset, const std::string& why);

}  // namespace stock_sources
