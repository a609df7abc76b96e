#include "npy_array.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace stock_sources {
namespace {

// The values' extent against the bytes there are: exactly data_offset + data_bytes.
void judge_length(const NpyHeader& header, size_t size, const std::string& name) {
  const size_t end = header.data_offset + header.data_bytes;
  if (header.data_bytes > size - header.data_offset)
    npy_corrupt(name, size, "truncated: the header declares " + std::to_string(header.data_bytes) +
                                " bytes of values from byte " + std::to_string(header.data_offset) + " (to byte " +
                                std::to_string(end) + "), but the data ends here");
  if (size != end)
    npy_corrupt(name, end, std::to_string(size - end) + " bytes follow the values the header declares (shape " +
                               nlohmann::json(header.shape).dump() + ")");
}

// numpy itself refuses headers over 10,000 bytes unless told otherwise; past this a header is an attack.
constexpr size_t kLongestHeader = size_t{1} << 20;

}  // namespace

NpyFile::~NpyFile() { ::close(fd_); }

void NpyFile::read(size_t offset, uint8_t* out, size_t count) const {
  size_t done = 0;
  while (done < count) {
    const ssize_t got = ::pread(fd_, out + done, count - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) throw ramjet::Error(RAMJET_ERR_IO, name_ + ": byte " + std::to_string(offset + done) +
                                                        ": cannot read: " + std::strerror(errno));
    if (got == 0) {
      struct stat st {};
      const std::string now = fstat(fd_, &st) == 0 ? "now ends at byte " + std::to_string(st.st_size) : "ended";
      npy_corrupt(name_, offset + done, "cannot read: the file " + now + " but held " + std::to_string(size_) +
                                            " bytes when it was opened: it was truncated or rewritten while being read");
    }
    done += static_cast<size_t>(got);
  }
}

void NpyArray::copy_stored(int64_t index, uint8_t* out) const {
  const size_t at = static_cast<size_t>(index) * header.example_bytes;
  if (file) file->read(header.data_offset + at, out, header.example_bytes);
  else std::memcpy(out, values + at, header.example_bytes);
}

ramjet::Tensor NpyArray::example(int64_t index) const {
  ramjet::Tensor t = ramjet::Tensor::zeros(header.output, example_shape());
  if (header.example_bytes == 0) return t;
  if (header.stored.bits == header.output.bits) {
    copy_stored(index, static_cast<uint8_t*>(t.dl().data));
    return t;
  }
  std::vector<uint8_t> stored(header.example_bytes);
  copy_stored(index, stored.data());
  const uint8_t* src = stored.data();
  const size_t n = header.example_bytes / 8;
  const auto refuse = [&](size_t i, const std::string& value, const char* type) {
    npy_corrupt(name, header.data_offset + static_cast<size_t>(index) * header.example_bytes + i * 8,
                "value " + value + " of example " + std::to_string(index) + " does not fit " + type);
  };
  if (header.stored.code == kDLInt) {  // int64 -> int32
    int32_t* out = t.data<int32_t>();
    for (size_t i = 0; i < n; ++i) {
      int64_t v;
      std::memcpy(&v, src + i * 8, 8);
      if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max())
        refuse(i, std::to_string(v), "int32");
      out[i] = static_cast<int32_t>(v);
    }
  } else {  // float64 -> float32
    float* out = t.data<float>();
    for (size_t i = 0; i < n; ++i) {
      double v;
      std::memcpy(&v, src + i * 8, 8);
      out[i] = static_cast<float>(v);
      if (std::isfinite(v) && !std::isfinite(out[i])) refuse(i, nlohmann::json(v).dump(), "float32");
    }
  }
  return t;
}

NpyArray open_npy(const std::filesystem::path& path) {
  const std::string name = path.string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // O_NONBLOCK: a FIFO must not hang us
  if (fd < 0) throw ramjet::Error(RAMJET_ERR_IO, name + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw ramjet::Error(RAMJET_ERR_IO, name + ": not a regular file");
  }
  const auto size = static_cast<size_t>(st.st_size);
  auto file = std::make_shared<const NpyFile>(fd, name, size);  // owns fd from here
  if (size == 0) npy_corrupt(name, 0, "the file is empty (a .npy file starts with \\x93NUMPY)");
  std::vector<uint8_t> head(std::min<size_t>(size, 12));
  file->read(0, head.data(), head.size());
  const size_t header_end = npy_header_end(head.data(), head.size());
  if (header_end > kLongestHeader && size > kLongestHeader)
    npy_corrupt(name, 8, "the header declares " + std::to_string(header_end) + " bytes; more than " +
                             std::to_string(kLongestHeader) + " is refused (numpy writes a few hundred)");
  if (header_end > head.size()) {
    head.resize(std::min(size, header_end));
    file->read(0, head.data(), head.size());
  }
  NpyArray a;
  a.name = name;
  a.header = parse_npy_header(head.data(), head.size(), name);
  judge_length(a.header, size, name);
  a.file = std::move(file);
  return a;
}

NpyArray npy_from_bytes(Bytes bytes, const std::string& name) {
  auto held = std::make_shared<Bytes>(std::move(bytes));
  NpyArray a;
  a.name = name;
  a.header = parse_npy_header(held->begin(), held->size, name);
  judge_length(a.header, held->size, name);
  a.values = held->begin() + a.header.data_offset;
  a.owner = std::move(held);
  return a;
}

}  // namespace stock_sources
