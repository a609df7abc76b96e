#include "npy_format.hpp"

#include <ramjet/sdk.hpp>

#include <cstring>
#include <limits>
#include <optional>

namespace stock_sources {
namespace {

constexpr uint8_t kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

// Preamble length (10 or 12) and header length, or why not.
struct Preamble {
  size_t preamble, header_length;
};

Preamble read_preamble(const uint8_t* d, size_t size, const std::string& name) {
  if (size < 10 || std::memcmp(d, kMagic, sizeof kMagic) != 0)
    npy_corrupt(name, 0, size < 10 && std::memcmp(d, kMagic, std::min(size, sizeof kMagic)) == 0
                             ? "the file ends inside the .npy preamble (" + std::to_string(size) + " bytes)"
                             : "not a .npy file (it does not start with \\x93NUMPY)");
  const uint8_t major = d[6], minor = d[7];
  if (major < 1 || major > 3 || minor != 0)
    npy_corrupt(name, 6, "unsupported .npy version " + std::to_string(major) + "." + std::to_string(minor) +
                             " (1.0, 2.0 and 3.0 are known)");
  if (major == 1) return {10, size_t{d[8]} | size_t{d[9]} << 8};
  if (size < 12) npy_corrupt(name, size, "the file ends inside the .npy preamble");
  return {12, size_t{d[8]} | size_t{d[9]} << 8 | size_t{d[10]} << 16 | size_t{d[11]} << 24};
}

// A recursive-descent reader of the header's dict literal: only strings, True/False and tuples of integers.
class HeaderText {
 public:
  HeaderText(const uint8_t* text, size_t length, size_t base, const std::string& name)
      : s_(reinterpret_cast<const char*>(text)), n_(length), base_(base), name_(name) {}

  size_t offset() const { return base_ + i_; }
  [[noreturn]] void fail(const std::string& why) const { npy_corrupt(name_, offset(), "in the header: " + why); }
  void skip_spaces() {
    while (i_ < n_ && s_[i_] == ' ') ++i_;
  }
  bool take(char c) {
    skip_spaces();
    if (i_ < n_ && s_[i_] == c) return ++i_, true;
    return false;
  }
  void expect(char c, const char* what) {
    if (!take(c)) fail(std::string("expected ") + what + " here, found " + found());
  }
  std::string found() const {
    if (i_ >= n_) return "the end of the header";
    const unsigned char c = static_cast<unsigned char>(s_[i_]);
    if (c >= 0x20 && c < 0x7f) return std::string("'") + static_cast<char>(c) + "'";
    return "byte 0x" + std::string(1, "0123456789abcdef"[c >> 4]) + "0123456789abcdef"[c & 15];
  }
  bool at_string() {
    skip_spaces();
    return i_ < n_ && (s_[i_] == '\'' || s_[i_] == '"');
  }
  std::string string() {
    skip_spaces();
    if (i_ >= n_ || (s_[i_] != '\'' && s_[i_] != '"')) fail("expected a quoted string, found " + found());
    const char quote = s_[i_++];
    std::string out;
    while (i_ < n_ && s_[i_] != quote) {
      if (s_[i_] == '\\' || s_[i_] == '\n') fail("escapes and line breaks are not allowed in a header string");
      out += s_[i_++];
    }
    if (i_ >= n_) fail("a string is not closed");
    ++i_;
    return out;
  }
  bool boolean() {
    skip_spaces();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      const size_t len = std::strlen(word);
      if (n_ - i_ >= len && std::memcmp(s_ + i_, word, len) == 0) return i_ += len, value;
    }
    fail("expected True or False, found " + found());
  }
  int64_t integer() {
    skip_spaces();
    const size_t start = i_;
    uint64_t v = 0;
    while (i_ < n_ && s_[i_] >= '0' && s_[i_] <= '9') {
      if (v > (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - 9) / 10) fail("a dimension is too large");
      v = v * 10 + static_cast<uint64_t>(s_[i_++] - '0');
    }
    if (i_ == start) fail("expected a non-negative integer dimension, found " + found());
    if (i_ < n_ && s_[i_] == 'L') ++i_;  // Python 2 wrote longs as 3L
    return static_cast<int64_t>(v);
  }
  std::vector<int64_t> tuple() {
    expect('(', "'(' opening the shape tuple");
    std::vector<int64_t> dims;
    if (take(')')) return dims;
    for (;;) {
      dims.push_back(integer());
      if (take(')')) break;
      expect(',', "',' or ')' in the shape tuple");
      if (take(')')) break;
    }
    return dims;
  }
  // After the dict: spaces, then one '\n' that ends the header.
  void finish() {
    skip_spaces();
    if (i_ >= n_) fail("the header does not end with '\\n'");
    if (s_[i_] == '\n' && i_ + 1 == n_) return;
    if (s_[i_] == '\n') ++i_;
    fail("unexpected " + found() + " after the header's dict");
  }

 private:
  const char* s_;
  size_t n_, i_ = 0, base_;
  const std::string& name_;
};

struct Descr {
  DLDataType stored, output;
};

std::optional<Descr> parse_descr(const std::string& d, std::string& why) {
  const DLDataType u8{kDLUInt, 8, 1}, i32{kDLInt, 32, 1}, f32{kDLFloat, 32, 1};
  if (d == "|u1" || d == "<u1") return Descr{u8, u8};
  if (d == "<i4") return Descr{i32, i32};
  if (d == "<i8") return Descr{{kDLInt, 64, 1}, i32};
  if (d == "<f4") return Descr{f32, f32};
  if (d == "<f8") return Descr{{kDLFloat, 64, 1}, f32};
  if (!d.empty() && d[0] == '>') why = "big-endian values are not read (save the array with dtype '<" + d.substr(1) + "')";
  else if (d.find('O') != std::string::npos) why = "object arrays (pickled Python objects) are refused";
  else why = "dtype is not one of uint8 ('|u1'), int32 ('<i4'), int64 ('<i8'), float32 ('<f4'), float64 ('<f8')";
  return std::nullopt;
}

}  // namespace

size_t npy_header_end(const uint8_t* data, size_t size) {
  if (size < 12 || std::memcmp(data, kMagic, sizeof kMagic) != 0) return 0;
  if (data[6] == 1) return 10 + (size_t{data[8]} | size_t{data[9]} << 8);
  return 12 + (size_t{data[8]} | size_t{data[9]} << 8 | size_t{data[10]} << 16 | size_t{data[11]} << 24);
}

NpyHeader parse_npy_header(const uint8_t* data, size_t size, const std::string& name) {
  const Preamble p = read_preamble(data, size, name);
  if (p.header_length > size - p.preamble)
    npy_corrupt(name, size, "the file ends inside the header (it declares " + std::to_string(p.header_length) +
                                " header bytes from byte " + std::to_string(p.preamble) + ")");
  HeaderText h(data + p.preamble, p.header_length, p.preamble, name);
  std::optional<Descr> descr;
  std::optional<bool> fortran;
  std::optional<std::vector<int64_t>> shape;
  size_t fortran_at = 0;
  h.expect('{', "'{' opening the header's dict");
  while (!h.take('}')) {
    h.skip_spaces();
    const size_t key_at = h.offset();
    const std::string key = h.string();
    h.expect(':', "':' after a key");
    h.skip_spaces();
    const size_t value_at = h.offset();
    if (key == "descr" && !descr) {
      if (!h.at_string()) h.fail("'descr' must be a string such as '<f4'; structured (record) dtypes are refused");
      std::string why;
      const std::string d = h.string();
      descr = parse_descr(d, why);
      if (!descr) npy_corrupt(name, value_at, "header field 'descr' is '" + d + "': " + why);
    } else if (key == "fortran_order" && !fortran) {
      fortran = h.boolean();
      fortran_at = value_at;
    } else if (key == "shape" && !shape) {
      shape = h.tuple();
    } else {
      npy_corrupt(name, key_at, "in the header: " +
                                    (key == "descr" || key == "fortran_order" || key == "shape" ? "key '" + key + "' repeats"
                                                                                                : "unknown key '" + key + "'"));
    }
    if (!h.take(',')) {
      h.expect('}', "',' or '}' in the header's dict");
      break;
    }
  }
  h.finish();
  if (!descr || !fortran || !shape)
    npy_corrupt(name, p.preamble, std::string("the header lacks '") + (!descr ? "descr" : !fortran ? "fortran_order" : "shape") + "'");
  if (*fortran)
    npy_corrupt(name, fortran_at, "header field 'fortran_order' is True: Fortran-order (column-major) arrays are refused; "
                                  "save it with numpy.ascontiguousarray");
  if (shape->empty())
    npy_corrupt(name, p.preamble, "header field 'shape' is () (a single scalar); the first axis must count the examples");

  NpyHeader out;
  out.stored = descr->stored;
  out.output = descr->output;
  out.shape = *shape;
  out.data_offset = p.preamble + p.header_length;
  const size_t element = descr->stored.bits / 8;
  size_t per_example = element;
  for (size_t i = 1; i < shape->size(); ++i) {
    const auto d = static_cast<size_t>((*shape)[i]);
    if (d != 0 && per_example > std::numeric_limits<size_t>::max() / d)
      npy_corrupt(name, p.preamble, "header field 'shape' declares more bytes than can be addressed");
    per_example *= d;
  }
  const auto count = static_cast<size_t>((*shape)[0]);
  if (count != 0 && per_example > std::numeric_limits<size_t>::max() / count)
    npy_corrupt(name, p.preamble, "header field 'shape' declares more bytes than can be addressed");
  out.example_bytes = per_example;
  out.data_bytes = per_example * count;
  return out;
}

void npy_corrupt(const std::string& name, size_t offset, const std::string& why) {
  throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA, name + ": byte " + std::to_string(offset) + ": " + why);
}

}  // namespace stock_sources
