#include "ramjet/train/safetensors.hpp"

#include "ramjet/plugin/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <limits>
#include <set>
#include <vector>

namespace ramjet::core {
namespace {

struct DtypeName {
  DLDataType dtype;
  const char* name;
};
constexpr DtypeName kDtypes[] = {
    {{kDLFloat, 32, 1}, "F32"}, {{kDLFloat, 64, 1}, "F64"}, {{kDLFloat, 16, 1}, "F16"}, {{kDLBfloat, 16, 1}, "BF16"},
    {{kDLInt, 64, 1}, "I64"},   {{kDLInt, 32, 1}, "I32"},   {{kDLInt, 16, 1}, "I16"},   {{kDLInt, 8, 1}, "I8"},
    {{kDLUInt, 8, 1}, "U8"},    {{kDLUInt, 16, 1}, "U16"},  {{kDLUInt, 32, 1}, "U32"},  {{kDLUInt, 64, 1}, "U64"}};

const char* name_of(DLDataType d) {
  for (const auto& x : kDtypes)
    if (x.dtype.code == d.code && x.dtype.bits == d.bits && x.dtype.lanes == d.lanes) return x.name;
  return nullptr;
}

bool dtype_of(const std::string& name, DLDataType& out) {
  for (const auto& x : kDtypes)
    if (name == x.name) {
      out = x.dtype;
      return true;
    }
  return false;
}

// Thrown from inside nlohmann's parser callback, caught around the parse.
struct DuplicateKey {
  std::string key;
};

// Depth and value count found by a scan of the raw text, before the parser builds anything: a 100k-level nesting
// never reaches the recursive destructor, and the byte offset of the first excess is known.
void check_shape_of_json(std::string_view text, uint64_t base, const JsonFailure& fail) {
  int depth = 0;
  uint64_t values = 1;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) throw fail(base + i, "nests JSON deeper than " + std::to_string(kMaxJsonDepth) + " levels");
    } else if (c == ']' || c == '}') --depth;
    if ((c == ',' || c == '[' || c == '{') && ++values > kMaxJsonValues)
      throw fail(base + i, "holds more than " + std::to_string(kMaxJsonValues) + " JSON values");
  }
}

// One open regular file read by offset; a FIFO, directory or device is refused before it is opened.
class RegularFile {
 public:
  explicit RegularFile(const std::filesystem::path& path) : path_(path) {
    std::error_code ec;
    const auto status = std::filesystem::status(path, ec);
    std::error_code link_ec;
    if (std::filesystem::is_symlink(std::filesystem::symlink_status(path, link_ec)) && !std::filesystem::exists(status))
      throw InvalidInput(path.string() + ": is a symbolic link to a file that does not exist");
    if (ec) throw InvalidInput(path.string() + ": cannot open: " + ec.message());
    if (!std::filesystem::is_regular_file(status)) throw InvalidInput(path.string() + ": " + kind_of(status.type()));
    // O_NONBLOCK: should the path turn into a FIFO after the check, opening it still returns at once.
    fd_ = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd_ < 0) throw InvalidInput(path.string() + ": cannot open: " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd_);
      throw InvalidInput(path.string() + ": is not a regular file");
    }
    size_ = static_cast<uint64_t>(st.st_size);
  }
  ~RegularFile() { ::close(fd_); }
  RegularFile(const RegularFile&) = delete;
  RegularFile& operator=(const RegularFile&) = delete;

  uint64_t size() const { return size_; }
  // False when the file ends early (it shrank since it was measured) or cannot be read.
  bool read(uint64_t offset, void* into, uint64_t bytes) const {
    char* out = static_cast<char*>(into);
    while (bytes > 0) {
      const size_t chunk = static_cast<size_t>(std::min<uint64_t>(bytes, 1u << 30));
      const ssize_t n = ::pread(fd_, out, chunk, static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      out += n, offset += static_cast<uint64_t>(n), bytes -= static_cast<uint64_t>(n);
    }
    return true;
  }

 private:
  static std::string kind_of(std::filesystem::file_type type) {
    switch (type) {
      case std::filesystem::file_type::not_found: return "no such file";
      case std::filesystem::file_type::directory: return "is a directory, not a safetensors file";
      case std::filesystem::file_type::fifo: return "is a FIFO (named pipe), not a safetensors file; refusing to read it";
      case std::filesystem::file_type::socket: return "is a socket, not a safetensors file";
      default: return "is not a regular file";
    }
  }
  std::filesystem::path path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

// One header entry, checked but not yet read.
struct TensorSpec {
  std::string name;
  DLDataType dtype{};
  std::vector<int64_t> shape;
  uint64_t begin = 0, end = 0;
};

}  // namespace

std::string shortened(std::string_view text, size_t limit) {
  if (text.size() <= limit) return std::string(text);
  return std::string(text.substr(0, limit)) + "...(" + std::to_string(text.size()) + " bytes)";
}

nlohmann::json parse_bounded_json(std::string_view text, uint64_t base, const JsonFailure& fail) {
  check_shape_of_json(text, base, fail);
  std::vector<std::set<std::string>> open_objects;
  auto watch = [&](int, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
    using E = nlohmann::json::parse_event_t;
    if (event == E::object_start) open_objects.emplace_back();
    else if (event == E::object_end) open_objects.pop_back();
    else if (event == E::key && !open_objects.back().insert(parsed.get<std::string>()).second)
      throw DuplicateKey{parsed.get<std::string>()};
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), watch);
  } catch (const DuplicateKey& d) {
    throw fail(base, "has the key '" + shortened(d.key) + "' twice in one object");
  } catch (const nlohmann::json::parse_error& e) {
    const uint64_t at = e.byte > 0 ? static_cast<uint64_t>(e.byte) - 1 : 0;
    throw fail(base + std::min<uint64_t>(at, text.size()), "is not JSON (or not UTF-8) there");
  } catch (const nlohmann::json::exception&) {
    throw fail(base, "is not JSON");
  }
}

void write_safetensors(const std::filesystem::path& path, const Example& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t offset = 0;
  for (const auto& e : tensors.entries) {
    const DLTensor& t = e.tensor->dl_tensor;
    const char* dtype = name_of(t.dtype);
    if (dtype == nullptr || t.device.device_type != kDLCPU)
      throw InvalidInput(path.string() + ": tensor '" + e.name + "' (" + dtype_to_string(t.dtype) +
                         ") cannot be stored in safetensors");
    const uint64_t bytes = byte_size(t);
    header[e.name] = {{"dtype", dtype},
                      {"shape", std::vector<int64_t>(t.shape, t.shape + t.ndim)},
                      {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // keep the data 8-byte aligned
  const uint64_t length = text.size();
  AtomicFile file(path);
  file.write(std::string_view(reinterpret_cast<const char*>(&length), 8));
  file.write(text);
  for (const auto& e : tensors.entries) {
    const DLTensor& t = e.tensor->dl_tensor;
    if (!is_c_contiguous(t)) throw InvalidInput(path.string() + ": tensor '" + e.name + "' is strided; pass contiguous tensors");
    file.write(std::string_view(static_cast<const char*>(first_byte(t)), byte_size(t)));
  }
  file.commit();
}

TensorFile read_safetensors(const std::filesystem::path& path) {
  const RegularFile file(path);
  const uint64_t size = file.size();
  auto corrupt = [&](uint64_t at, const std::string& what) {
    return InvalidInput(path.string() + ": not a valid safetensors file at byte " + std::to_string(at) + ": " + what);
  };
  uint64_t length = 0;
  if (size < 8 || !file.read(0, &length, 8))
    throw corrupt(0, "the file has " + std::to_string(size) + " bytes, shorter than the 8-byte header length");
  if (length > size - 8)
    throw corrupt(0, "the header length " + std::to_string(length) + " runs past the end of the file (" +
                         std::to_string(size) + " bytes)");
  if (length > kMaxSafetensorsHeaderBytes)
    throw corrupt(0, "the header length " + std::to_string(length) + " is over the format's limit of " +
                         std::to_string(kMaxSafetensorsHeaderBytes) + " bytes");
  if (length < 2) throw corrupt(8, "the header is " + std::to_string(length) + " bytes, too short for a JSON object");
  std::string text(length, '\0');
  if (!file.read(8, text.data(), length)) throw corrupt(8, "cannot read the header");
  const nlohmann::json header =
      parse_bounded_json(text, 8, [&](uint64_t at, const std::string& what) { return corrupt(at, "the header " + what); });
  if (!header.is_object()) throw corrupt(8, "the header must be a JSON object");

  const uint64_t data_start = 8 + length;
  const uint64_t data_size = size - data_start;
  TensorFile out;
  std::vector<TensorSpec> specs;
  for (const auto& [name, spec] : header.items()) {
    const std::string shown = shortened(name);
    if (name == "__metadata__") {
      if (!spec.is_object()) throw corrupt(8, "__metadata__ must be an object of strings");
      for (const auto& [k, v] : spec.items()) {
        if (!v.is_string()) throw corrupt(8, "__metadata__/" + shortened(k) + " must be a string, not " + v.type_name());
        out.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    auto bad = [&](const std::string& what) { return corrupt(8, "tensor '" + shown + "': " + what); };
    if (!spec.is_object()) throw bad(std::string("must be an object, not ") + spec.type_name());
    for (const auto& [key, value] : spec.items())
      if (key != "dtype" && key != "shape" && key != "data_offsets") throw bad("unknown field '" + shortened(key) + "'");
    TensorSpec t;
    t.name = name;
    const auto dtype = spec.find("dtype");
    if (dtype == spec.end() || !dtype->is_string()) throw bad("dtype must be a string such as \"F32\"");
    if (!dtype_of(dtype->get<std::string>(), t.dtype)) throw bad("unknown dtype '" + shortened(dtype->get<std::string>()) + "'");
    const auto shape = spec.find("shape");
    if (shape == spec.end() || !shape->is_array()) throw bad("shape must be an array of non-negative integers");
    if (shape->size() > static_cast<size_t>(kMaxTensorRank))
      throw bad("rank " + std::to_string(shape->size()) + " is over the limit of " + std::to_string(kMaxTensorRank));
    uint64_t bytes = dtype_size(t.dtype);
    bool overflow = false;
    for (const auto& d : *shape) {
      if (!d.is_number_unsigned() || d.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        throw bad("shape must be an array of non-negative integers, not " + shortened(d.dump()));
      t.shape.push_back(d.get<int64_t>());
      overflow = overflow || __builtin_mul_overflow(bytes, d.get<uint64_t>(), &bytes);
    }
    const auto offsets = spec.find("data_offsets");
    if (offsets == spec.end() || !offsets->is_array() || offsets->size() != 2 || !(*offsets)[0].is_number_unsigned() ||
        !(*offsets)[1].is_number_unsigned())
      throw bad("data_offsets must be two non-negative integers [begin, end]");
    t.begin = (*offsets)[0].get<uint64_t>();
    t.end = (*offsets)[1].get<uint64_t>();
    if (t.begin > t.end || t.end > data_size)
      throw bad("data_offsets [" + std::to_string(t.begin) + ", " + std::to_string(t.end) + "]: the tensor lies outside the data (" +
                std::to_string(data_size) + " bytes from byte " + std::to_string(data_start) + ")");
    if (overflow || bytes != t.end - t.begin)
      throw corrupt(data_start + t.begin, "tensor '" + shown + "' holds " + std::to_string(t.end - t.begin) +
                                              " bytes, its dtype and shape need " +
                                              (overflow ? std::string("more than 2^64") : std::to_string(bytes)));
    specs.push_back(std::move(t));
  }
  // The format's rule: the byte ranges tile the data exactly, so no two tensors share bytes and none are left over.
  std::vector<const TensorSpec*> by_offset;
  for (const auto& s : specs) by_offset.push_back(&s);
  std::sort(by_offset.begin(), by_offset.end(), [](const TensorSpec* a, const TensorSpec* b) {
    return a->begin != b->begin ? a->begin < b->begin : a->end < b->end;
  });
  uint64_t covered = 0;
  for (const TensorSpec* s : by_offset) {
    if (s->begin < covered)
      throw corrupt(data_start + s->begin, "tensor '" + shortened(s->name) + "' overlaps the tensor before it");
    if (s->begin > covered)
      throw corrupt(data_start + covered, "bytes " + std::to_string(covered) + " to " + std::to_string(s->begin) +
                                              " of the data belong to no tensor");
    covered = s->end;
  }
  if (covered != data_size)
    throw corrupt(data_start + covered, std::to_string(data_size - covered) + " bytes after the last tensor belong to no tensor");
  for (const auto& s : specs) {
    TensorPtr t = make_tensor(s.dtype, s.shape, false);
    if (!file.read(data_start + s.begin, t->dl_tensor.data, s.end - s.begin))
      throw corrupt(data_start + s.begin, "cannot read tensor '" + shortened(s.name) + "'");
    out.tensors.set(s.name, std::move(t));
  }
  return out;
}

}  // namespace ramjet::core
