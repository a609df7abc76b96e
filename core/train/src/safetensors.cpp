#include "ramjet/train/safetensors.hpp"

#include "ramjet/plugin/atomic_file.hpp"
#include "ramjet/plugin/failure.hpp"

#include <nlohmann/json.hpp>

#include <cstring>
#include <fstream>

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

}  // namespace

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
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InvalidInput(path.string() + ": cannot open");
  in.seekg(0, std::ios::end);
  const uint64_t size = static_cast<uint64_t>(in.tellg());
  in.seekg(0);
  auto corrupt = [&](uint64_t at, const std::string& what) {
    return InvalidInput(path.string() + ": not a valid safetensors file at byte " + std::to_string(at) + ": " + what);
  };
  uint64_t length = 0;
  if (size < 8 || !in.read(reinterpret_cast<char*>(&length), 8)) throw corrupt(0, "shorter than the 8-byte header length");
  if (length > size - 8) throw corrupt(0, "the header length " + std::to_string(length) + " runs past the end of the file");
  std::string text(length, '\0');
  in.read(text.data(), static_cast<std::streamsize>(length));
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    throw corrupt(8 + e.byte, std::string("header is not JSON: ") + e.what());
  }
  if (!header.is_object()) throw corrupt(8, "the header must be a JSON object");
  const uint64_t data_start = 8 + length;
  const uint64_t data_size = size - data_start;
  TensorFile out;
  for (const auto& [name, spec] : header.items()) {
    if (name == "__metadata__") {
      if (!spec.is_object()) throw corrupt(8, "__metadata__ must be an object of strings");
      for (const auto& [k, v] : spec.items()) {
        if (!v.is_string()) throw corrupt(8, "__metadata__/" + k + " must be a string");
        out.metadata[k] = v.get<std::string>();
      }
      continue;
    }
    DLDataType dtype{};
    if (!spec.is_object() || !spec.contains("dtype") || !spec["dtype"].is_string() ||
        !dtype_of(spec["dtype"].get<std::string>(), dtype))
      throw corrupt(8, "tensor '" + name + "' has a missing or unknown dtype");
    if (!spec.contains("shape") || !spec["shape"].is_array() || !spec.contains("data_offsets") ||
        !spec["data_offsets"].is_array() || spec["data_offsets"].size() != 2)
      throw corrupt(8, "tensor '" + name + "' needs shape and data_offsets");
    std::vector<int64_t> shape;
    unsigned __int128 expected = dtype_size(dtype);
    for (const auto& d : spec["shape"]) {
      if (!d.is_number_unsigned()) throw corrupt(8, "tensor '" + name + "' has a bad dimension " + d.dump());
      shape.push_back(d.get<int64_t>());
      expected *= static_cast<uint64_t>(shape.back());
    }
    const auto begin = spec["data_offsets"][0].get<uint64_t>(), end = spec["data_offsets"][1].get<uint64_t>();
    if (begin > end || end > data_size)
      throw corrupt(data_start + begin, "tensor '" + name + "' lies outside the data (" + std::to_string(data_size) + " bytes)");
    if (expected != end - begin)
      throw corrupt(data_start + begin, "tensor '" + name + "' holds " + std::to_string(end - begin) +
                                            " bytes, its shape needs " + std::to_string(static_cast<uint64_t>(expected)));
    TensorPtr t = make_tensor(dtype, shape, false);
    in.seekg(static_cast<std::streamoff>(data_start + begin));
    if (!in.read(static_cast<char*>(t->dl_tensor.data), static_cast<std::streamsize>(end - begin)))
      throw corrupt(data_start + begin, "cannot read tensor '" + name + "'");
    out.tensors.set(name, std::move(t));
  }
  return out;
}

}  // namespace ramjet::core
