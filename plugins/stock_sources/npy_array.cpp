#include "npy_array.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

namespace stock_sources {
namespace {

[[noreturn]] void corrupt(const std::string& name, size_t offset, const std::string& why) {
  throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, name + ": byte " + std::to_string(offset) + ": " + why);
}

NpyArray judge(const uint8_t* data, size_t size, const std::string& name, std::shared_ptr<const void> owner) {
  NpyArray a;
  a.name = name;
  a.header = parse_npy_header(data, size, name);
  const size_t end = a.header.data_offset + a.header.data_bytes;
  if (a.header.data_bytes > size - a.header.data_offset)
    corrupt(name, size, "truncated: the header declares " + std::to_string(a.header.data_bytes) +
                            " bytes of values from byte " + std::to_string(a.header.data_offset) +
                            " (to byte " + std::to_string(end) + "), but the data ends here");
  if (size != end)
    corrupt(name, end, std::to_string(size - end) + " bytes follow the values the header declares (shape " +
                           nlohmann::json(a.header.shape).dump() + ")");
  a.values = data + a.header.data_offset;
  a.owner = std::move(owner);
  return a;
}

}  // namespace

ramjet::Tensor NpyArray::example(int64_t index) const {
  ramjet::Tensor t = ramjet::Tensor::zeros(header.output, example_shape());
  const uint8_t* src = values + static_cast<size_t>(index) * header.example_bytes;
  if (header.stored.bits == header.output.bits) {
    if (header.example_bytes) std::memcpy(t.dl().data, src, header.example_bytes);
    return t;
  }
  const size_t n = header.example_bytes / 8;
  const auto refuse = [&](size_t i, const std::string& value, const char* type) {
    corrupt(name, header.data_offset + static_cast<size_t>(index) * header.example_bytes + i * 8,
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

NpyArray map_npy(const std::filesystem::path& path) {
  const std::string name = path.string();
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // O_NONBLOCK: a FIFO must not hang us
  if (fd < 0) throw ramjet::Error(RAMJET_ERR_IO, name + ": cannot open: " + std::strerror(errno));
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw ramjet::Error(RAMJET_ERR_IO, name + ": not a regular file");
  }
  const auto size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    corrupt(name, 0, "the file is empty (a .npy file starts with \\x93NUMPY)");
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  const int error = errno;
  ::close(fd);  // the mapping keeps the file
  if (map == MAP_FAILED) throw ramjet::Error(RAMJET_ERR_IO, name + ": cannot map: " + std::strerror(error));
  std::shared_ptr<const void> owner(map, [size](const void* p) { ::munmap(const_cast<void*>(p), size); });
  return judge(static_cast<const uint8_t*>(map), size, name, std::move(owner));
}

NpyArray npy_from_bytes(Bytes bytes, const std::string& name) {
  auto held = std::make_shared<Bytes>(std::move(bytes));
  return judge(held->begin(), held->size, name, held);
}

}  // namespace stock_sources
