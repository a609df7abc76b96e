#include "file_bytes.hpp"

#include <ramjet/sdk.hpp>

#include <zlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>

namespace stock_sources {
namespace {

std::vector<uint8_t> read_raw(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ramjet::Error(RAMJET_ERR_IO, path.string() + ": cannot open: " + std::strerror(errno));
  in.seekg(0, std::ios::end);
  const auto size = static_cast<size_t>(in.tellg());
  in.seekg(0);
  std::vector<uint8_t> bytes(size);
  if (size > 0 && !in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(size)))
    throw ramjet::Error(RAMJET_ERR_IO, path.string() + ": read failed");
  return bytes;
}

std::vector<uint8_t> gunzip(const std::vector<uint8_t>& packed, const std::filesystem::path& path) {
  z_stream z{};
  if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) throw ramjet::Error(RAMJET_ERR_INTERNAL, "zlib init failed");
  std::vector<uint8_t> out(packed.size() * 4 + 1024);
  z.next_in = const_cast<Bytef*>(packed.data());
  z.avail_in = static_cast<uInt>(packed.size());
  int rc = Z_OK;
  while (rc != Z_STREAM_END) {
    if (z.total_out == out.size()) out.resize(out.size() * 2);
    z.next_out = out.data() + z.total_out;
    z.avail_out = static_cast<uInt>(out.size() - z.total_out);
    rc = inflate(&z, Z_NO_FLUSH);
    if (rc == Z_STREAM_END) break;
    if (rc == Z_BUF_ERROR && z.avail_in == 0) {
      const auto at = z.total_in;
      inflateEnd(&z);
      throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, path.string() + ": gzip stream truncated at compressed byte " +
                                                       std::to_string(at) + " (the file ends before the stream does)");
    }
    if (rc != Z_OK && rc != Z_BUF_ERROR) {
      const auto at = z.total_in;
      const std::string why = z.msg ? z.msg : "error " + std::to_string(rc);
      inflateEnd(&z);
      throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA,
                          path.string() + ": corrupt gzip data near compressed byte " + std::to_string(at) + ": " + why);
    }
  }
  out.resize(z.total_out);
  inflateEnd(&z);
  return out;
}

}  // namespace

std::vector<uint8_t> read_maybe_gzipped(const std::filesystem::path& path) {
  std::vector<uint8_t> bytes = read_raw(path);
  if (bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b) return gunzip(bytes, path);
  return bytes;
}

}  // namespace stock_sources
