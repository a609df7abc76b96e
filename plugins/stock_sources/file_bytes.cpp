#include "file_bytes.hpp"

#include <ramjet/sdk.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <vector>

namespace stock_sources {

void reserve_bytes(Bytes& b, size_t capacity, const std::string& what) {
  if (capacity <= b.capacity) return;
  std::unique_ptr<uint8_t[]> bigger(new (std::nothrow) uint8_t[capacity]);  // not zero-filled: about to be written
  if (!bigger)
    throw ramjet::Error(RAMJET_ERR_OUT_OF_MEMORY, what + ": cannot allocate " + std::to_string(capacity) +
                                                      " bytes for its contents");
  if (b.size) std::memcpy(bigger.get(), b.data.get(), b.size);
  b.data = std::move(bigger);
  b.capacity = capacity;
}

uint64_t declared_size_limit() {
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
  uint64_t limit = pages > 0 && page > 0 ? uint64_t(pages) * uint64_t(page) : uint64_t{1} << 36;
  rlimit address_space{};
  if (getrlimit(RLIMIT_AS, &address_space) == 0 && address_space.rlim_cur != RLIM_INFINITY)
    limit = std::min<uint64_t>(limit, address_space.rlim_cur);
  return limit;
}

// zlib's state, held only for gzip input.
struct ByteReader::Inflater {
  z_stream z{};
  std::vector<uint8_t> chunk = std::vector<uint8_t>(1 << 16);
  uint64_t compressed_before = 0;  // compressed bytes of the members before the current one
  bool finished = false;           // the last member ended exactly at the end of the file
  ~Inflater() { inflateEnd(&z); }
};

ByteReader::ByteReader(const std::filesystem::path& path) : path_(path) {
  // O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever; regular files ignore it.
  fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd_ < 0) throw ramjet::Error(RAMJET_ERR_IO, path_.string() + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd_, &st) != 0) {
    const int error = errno;
    ::close(fd_);
    throw ramjet::Error(RAMJET_ERR_IO, path_.string() + ": cannot stat: " + std::strerror(error));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd_);
    throw ramjet::Error(RAMJET_ERR_IO, path_.string() + ": not a regular file" +
                                           (S_ISDIR(st.st_mode) ? " (a directory)" : ""));
  }
  file_size_ = static_cast<uint64_t>(st.st_size);
  uint8_t magic[2] = {0, 0};
  const ssize_t got = ::pread(fd_, magic, 2, 0);
  gzipped_ = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
  if (gzipped_) {
    inflater_ = std::make_unique<Inflater>();
    if (inflateInit2(&inflater_->z, 16 + MAX_WBITS) != Z_OK) {
      ::close(fd_);
      throw ramjet::Error(RAMJET_ERR_OUT_OF_MEMORY, path_.string() + ": cannot start gzip decompression");
    }
  }
}

ByteReader::~ByteReader() {
  inflater_.reset();
  if (fd_ >= 0) ::close(fd_);
}

size_t ByteReader::read(uint8_t* out, size_t count) {
  size_t done = 0;
  while (done < count) {
    const size_t n = gzipped_ ? inflate_into(out + done, count - done) : read_file(out + done, count - done);
    if (n == 0) break;
    done += n;
  }
  position_ += done;
  return done;
}

size_t ByteReader::read_file(uint8_t* out, size_t count) {
  for (;;) {
    const ssize_t n = ::read(fd_, out, std::min<size_t>(count, size_t{1} << 30));
    if (n >= 0) return static_cast<size_t>(n);
    if (errno != EINTR)
      throw ramjet::Error(RAMJET_ERR_IO, path_.string() + ": read failed: " + std::strerror(errno));
  }
}

size_t ByteReader::inflate_into(uint8_t* out, size_t count) {
  Inflater& in = *inflater_;
  z_stream& z = in.z;
  const auto compressed_at = [&] { return std::to_string(in.compressed_before + z.total_in); };
  for (;;) {
    if (in.finished) return 0;
    if (z.avail_in == 0) {
      const size_t n = read_file(in.chunk.data(), in.chunk.size());
      if (n == 0)
        throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, path_.string() + ": gzip stream truncated at compressed byte " +
                                                         compressed_at() + " (the file ends before the stream does)");
      z.next_in = in.chunk.data();
      z.avail_in = static_cast<uInt>(n);
    }
    z.next_out = out;
    z.avail_out = static_cast<uInt>(std::min<size_t>(count, size_t{1} << 30));
    const uInt before = z.avail_out;
    const int rc = inflate(&z, Z_NO_FLUSH);
    const size_t produced = before - z.avail_out;
    if (rc == Z_STREAM_END) {
      // Another member may follow (`cat a.gz b.gz` is a valid gzip file); anything else after it is an error.
      in.compressed_before += z.total_in;
      if (z.avail_in == 0) {
        const size_t n = read_file(in.chunk.data(), in.chunk.size());
        z.next_in = in.chunk.data();
        z.avail_in = static_cast<uInt>(n);
      }
      if (z.avail_in == 0) {
        in.finished = true;
      } else if (z.avail_in >= 2 && z.next_in[0] == 0x1f && z.next_in[1] == 0x8b) {
        inflateReset(&z);
      } else {
        throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, path_.string() + ": data that is not gzip after the gzip stream " +
                                                         "ends, at compressed byte " + compressed_at());
      }
    } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
      const std::string why = rc == Z_DATA_ERROR && z.msg ? z.msg : "error " + std::to_string(rc);
      throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, path_.string() + ": corrupt gzip data near compressed byte " +
                                                       compressed_at() + ": " + why);
    }
    if (produced > 0) return produced;
  }
}

}  // namespace stock_sources
