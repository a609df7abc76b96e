#include "ramjet/data/example_io.hpp"

#include "ramjet/plugin/failure.hpp"

#include <cstring>
#include <vector>

namespace ramjet::core {
namespace {

template <class T>
void put(std::string& out, T value) {
  out.append(reinterpret_cast<const char*>(&value), sizeof value);
}

template <class T>
T get(std::string_view bytes, size_t& offset, const std::string& where) {
  if (offset + sizeof(T) > bytes.size())
    throw InvalidInput(where + ": truncated record at byte " + std::to_string(offset));
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof value);
  offset += sizeof value;
  return value;
}

// Copies a possibly strided tensor into contiguous memory.
void copy_contiguous(const DLTensor& src, void* dst) {
  const size_t item = dtype_size(src.dtype);
  if (is_c_contiguous(src)) {
    std::memcpy(dst, first_byte(src), byte_size(src));
    return;
  }
  const int64_t n = element_count(src);
  std::vector<int64_t> index(static_cast<size_t>(src.ndim), 0);
  auto* out = static_cast<char*>(dst);
  const auto* base = static_cast<const char*>(first_byte(src));
  for (int64_t i = 0; i < n; ++i) {
    int64_t offset = 0;
    for (int32_t d = 0; d < src.ndim; ++d) offset += index[static_cast<size_t>(d)] * src.strides[d];
    std::memcpy(out + static_cast<size_t>(i) * item, base + static_cast<size_t>(offset) * item, item);
    for (int32_t d = src.ndim - 1; d >= 0; --d) {
      if (++index[static_cast<size_t>(d)] < src.shape[d]) break;
      index[static_cast<size_t>(d)] = 0;
    }
  }
}

}  // namespace

Example copy_example(const Example& source) {
  Example out;
  out.entries.reserve(source.entries.size());
  for (const auto& e : source.entries) {
    const DLTensor& t = e.tensor->dl_tensor;
    TensorPtr copy = make_tensor(t.dtype, std::span<const int64_t>(t.shape, static_cast<size_t>(t.ndim)));
    copy_contiguous(t, copy->dl_tensor.data);
    out.entries.push_back({e.name, std::move(copy)});
  }
  return out;
}

size_t example_bytes(const Example& example) {
  size_t n = 0;
  for (const auto& e : example.entries) n += byte_size(e.tensor->dl_tensor);
  return n;
}

void append_example(std::string& out, const Example& example) {
  put<uint32_t>(out, static_cast<uint32_t>(example.entries.size()));
  for (const auto& e : example.entries) {
    const DLTensor& t = e.tensor->dl_tensor;
    put<uint16_t>(out, static_cast<uint16_t>(e.name.size()));
    out += e.name;
    put<uint8_t>(out, t.dtype.code);
    put<uint8_t>(out, t.dtype.bits);
    put<uint16_t>(out, t.dtype.lanes);
    put<int32_t>(out, t.ndim);
    for (int32_t d = 0; d < t.ndim; ++d) put<int64_t>(out, t.shape[d]);
    const size_t bytes = byte_size(t);
    put<uint64_t>(out, bytes);
    const size_t at = out.size();
    out.resize(at + bytes);
    copy_contiguous(t, out.data() + at);
  }
}

Example read_example(std::string_view bytes, size_t& offset, const std::string& where) {
  Example ex;
  const auto count = get<uint32_t>(bytes, offset, where);
  for (uint32_t i = 0; i < count; ++i) {
    const auto name_size = get<uint16_t>(bytes, offset, where);
    if (offset + name_size > bytes.size())
      throw InvalidInput(where + ": truncated record at byte " + std::to_string(offset));
    std::string name(bytes.substr(offset, name_size));
    offset += name_size;
    DLDataType dtype;
    dtype.code = get<uint8_t>(bytes, offset, where);
    dtype.bits = get<uint8_t>(bytes, offset, where);
    dtype.lanes = get<uint16_t>(bytes, offset, where);
    const auto ndim = get<int32_t>(bytes, offset, where);
    if (ndim < 0 || ndim > 32) throw InvalidInput(where + ": bad rank at byte " + std::to_string(offset - 4));
    std::vector<int64_t> shape(static_cast<size_t>(ndim));
    unsigned __int128 expected = dtype_size(dtype);
    for (auto& d : shape) {
      d = get<int64_t>(bytes, offset, where);
      if (d < 0) throw InvalidInput(where + ": negative dimension at byte " + std::to_string(offset - 8));
      expected *= static_cast<uint64_t>(d);
    }
    const auto size = get<uint64_t>(bytes, offset, where);
    if (expected != size || offset + size > bytes.size())
      throw InvalidInput(where + ": tensor '" + name + "' size does not match its shape at byte " +
                         std::to_string(offset));
    TensorPtr t = make_tensor(dtype, shape);
    if (size != byte_size(t->dl_tensor))
      throw InvalidInput(where + ": tensor '" + name + "' size does not match its shape at byte " +
                         std::to_string(offset));
    std::memcpy(t->dl_tensor.data, bytes.data() + offset, size);
    offset += size;
    ex.entries.push_back({std::move(name), std::move(t)});
  }
  return ex;
}

}  // namespace ramjet::core
