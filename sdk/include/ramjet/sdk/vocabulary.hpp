// ramjet::Vocabulary: the token IDs of a character-level or byte-level language model, kept in a Hugging Face
// `tokenizers` file (tokenizer.json) that `tokenizers.Tokenizer.from_file(path).encode(text).ids` turns into the
// same IDs as encode() here, so a model trained by ramjet can be fed by that library and the other way round.
//
//   char level: one token per Unicode code point. ID 0 is the unknown token "[UNK]"; the corpus's distinct code
//               points follow in code-point order from 1. Written as a WordLevel model behind a Split pre-tokenizer
//               that isolates every code point (regex [\s\S]), no normalizer, a Fuse decoder.
//   byte level: one token per byte, ID = the byte's value (256 entries). Written as a BPE model without merges over
//               GPT-2's byte alphabet (the ByteLevel pre-tokenizer's bytes_to_unicode), use_regex false.
//
// The data source `text` (plugins/stock_text) builds and reads these files; a `generate` command encodes its prompt
// and decodes its samples with the same code. Malformed files or text throw ramjet::Error(RAMJET_ERR_CORRUPT_DATA)
// naming the file and the place (JSON pointer or byte offset); a file that cannot be read, RAMJET_ERR_IO.
#ifndef RAMJET_SDK_VOCABULARY_HPP
#define RAMJET_SDK_VOCABULARY_HPP

#include <ramjet/abi.h>
#include <ramjet/sdk/atomic_file.hpp>
#include <ramjet/sdk/error.hpp>
#include <ramjet/sdk/fields.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <span>
#include <string>
#include <string_view>
#include <system_error>
#include <utility>
#include <vector>

namespace ramjet {

// ---- UTF-8 ------------------------------------------------------------------------------------------------------

// One UTF-8 sequence: its code point and length, or, when invalid, the length of its maximal invalid subpart (at
// least 1; Unicode's Table 3-7), which lossy decoders (Python's, Rust's) replace with one U+FFFD.
struct Utf8Char {
  char32_t code_point = 0xFFFD;
  size_t length = 1;
  bool valid = false;
};

// The sequence starting at text[at] (at < text.size()).
inline Utf8Char next_utf8(std::string_view text, size_t at) {
  const auto byte = [&](size_t i) { return static_cast<unsigned char>(text[i]); };
  const unsigned char lead = byte(at);
  if (lead < 0x80) return {lead, 1, true};
  size_t more = 0;
  char32_t code_point = 0;
  unsigned char low = 0x80, high = 0xBF;  // the second byte's range: narrower after E0, ED, F0 and F4
  if (lead >= 0xC2 && lead <= 0xDF) {
    more = 1, code_point = lead & 0x1F;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    more = 2, code_point = lead & 0x0F;
    if (lead == 0xE0) low = 0xA0;   // no overlong forms
    if (lead == 0xED) high = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    more = 3, code_point = lead & 0x07;
    if (lead == 0xF0) low = 0x90;   // no overlong forms
    if (lead == 0xF4) high = 0x8F;  // nothing above U+10FFFF
  } else {
    return {};
  }
  for (size_t k = 1; k <= more; ++k) {
    if (at + k >= text.size()) return {0xFFFD, k, false};
    const unsigned char b = byte(at + k);
    if (b < (k == 1 ? low : 0x80) || b > (k == 1 ? high : 0xBF)) return {0xFFFD, k, false};
    code_point = (code_point << 6) | (b & 0x3F);
  }
  return {code_point, more + 1, true};
}

inline void append_utf8(std::string& out, char32_t c) {
  if (c < 0x80) {
    out += static_cast<char>(c);
  } else if (c < 0x800) {
    out += static_cast<char>(0xC0 | (c >> 6)), out += static_cast<char>(0x80 | (c & 0x3F));
  } else if (c < 0x10000) {
    out += static_cast<char>(0xE0 | (c >> 12)), out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (c & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (c >> 18)), out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((c >> 6) & 0x3F)), out += static_cast<char>(0x80 | (c & 0x3F));
  }
}

// Calls on_code_point(char32_t) for every code point of `text`. Invalid UTF-8 throws Error(CORRUPT_DATA):
// "<what>: invalid UTF-8 at byte N (bytes e2 82)".
template <class F>
void for_each_code_point(std::string_view text, const std::string& what, F&& on_code_point) {
  for (size_t at = 0; at < text.size();) {
    const Utf8Char c = next_utf8(text, at);
    if (!c.valid) {
      static constexpr char kHex[] = "0123456789abcdef";
      std::string bytes;
      for (size_t i = at; i < at + c.length; ++i) {
        const auto b = static_cast<unsigned char>(text[i]);
        bytes += std::string(bytes.empty() ? "" : " ") + kHex[b >> 4] + kHex[b & 15];
      }
      throw Error(RAMJET_ERR_CORRUPT_DATA,
                  what + ": invalid UTF-8 at byte " + std::to_string(at) + " (bytes " + bytes + ")");
    }
    on_code_point(c.code_point);
    at += c.length;
  }
}

// ---- the vocabulary ---------------------------------------------------------------------------------------------

class Vocabulary {
 public:
  enum class Level { kChar, kByte };
  static constexpr int32_t kUnknownId = 0;
  static constexpr const char* kUnknownToken = "[UNK]";
  static constexpr uintmax_t kMaxFileBytes = uintmax_t{64} << 20;  // every code point takes about 20 MB

  // One token per byte: ID = byte value.
  static Vocabulary bytes() { return Vocabulary(Level::kByte); }

  // One token per code point of `code_points` (any order; duplicates count once), IDs from 1 in code-point order.
  // Throws Error(INVALID_ARGUMENT) for a value that is not a Unicode scalar value.
  static Vocabulary characters(std::vector<char32_t> code_points) {
    std::sort(code_points.begin(), code_points.end());
    code_points.erase(std::unique(code_points.begin(), code_points.end()), code_points.end());
    Vocabulary v(Level::kChar);
    v.by_id_.push_back(0xFFFD);  // ID 0: [UNK]
    for (char32_t c : code_points) {
      if (c > 0x10FFFF || (c >= 0xD800 && c <= 0xDFFF))
        throw Error(RAMJET_ERR_INVALID_ARGUMENT, "U+" + hex(c) + " is not a Unicode character");
      v.add(c, static_cast<int32_t>(v.by_id_.size()));
      v.by_id_.push_back(c);
    }
    return v;
  }

  // A tokenizer.json as write() writes it, of either level. Throws Error(CORRUPT_DATA) naming `path` and the JSON
  // pointer (or byte offset) of the first problem, Error(IO) when it cannot be read.
  static Vocabulary read(const std::filesystem::path& path) {
    const std::string name = path.string();
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
      throw Error(RAMJET_ERR_IO, name + ": " + (std::filesystem::exists(path, ec) ? "not a regular file" : "no such file"));
    const uintmax_t size = std::filesystem::file_size(path, ec);
    if (ec) throw Error(RAMJET_ERR_IO, name + ": cannot read: " + ec.message());
    if (size > kMaxFileBytes)
      throw Error(RAMJET_ERR_CORRUPT_DATA, name + ": " + std::to_string(size) + " bytes; a vocabulary file holds at most " +
                                               std::to_string(kMaxFileBytes));
    std::string text(static_cast<size_t>(size), '\0');
    std::ifstream in(path, std::ios::binary);
    if (!in.read(text.data(), static_cast<std::streamsize>(text.size()))) throw Error(RAMJET_ERR_IO, name + ": cannot read");
    return parse(text, name);
  }

  // The same from the file's text; `name` is the file named in errors.
  static Vocabulary parse(std::string_view text, const std::string& name) {
    constexpr int kMaxDepth = 32;  // diff() and dump() recurse; a tokenizer.json nests 4 levels
    const auto depth_limit = [&](int depth, nlohmann::json::parse_event_t event, nlohmann::json&) {
      if ((event == nlohmann::json::parse_event_t::object_start || event == nlohmann::json::parse_event_t::array_start) &&
          depth >= kMaxDepth)
        throw Error(RAMJET_ERR_CORRUPT_DATA, name + ": JSON nested deeper than " + std::to_string(kMaxDepth) + " levels");
      return true;
    };
    nlohmann::json doc;
    try {
      doc = nlohmann::json::parse(text.begin(), text.end(), depth_limit);
    } catch (const nlohmann::json::parse_error& e) {
      throw Error(RAMJET_ERR_CORRUPT_DATA, name + ": not valid JSON (at byte " + std::to_string(e.byte) + ")");
    }
    const auto fail = [&](const std::string& pointer, const std::string& message) {
      return Error(RAMJET_ERR_CORRUPT_DATA, name + "#" + pointer + ": " + message);
    };
    if (!doc.is_object() || !doc.contains("model") || !doc["model"].is_object())
      throw fail("/model", "missing: not a tokenizers tokenizer.json");
    nlohmann::json& model = doc["model"];
    const std::string type = model.value("type", nlohmann::json()).is_string() ? model["type"].get<std::string>() : "";
    if (type == "BPE") {
      same_as_written(bytes().document<nlohmann::json>(), doc, name);
      return bytes();
    }
    if (type != "WordLevel")
      throw fail("/model/type", "must be \"WordLevel\" (level char) or \"BPE\" (level byte), got " +
                                    quote_value(model.value("type", nlohmann::json())));
    if (!model.contains("vocab") || !model["vocab"].is_object() || model["vocab"].empty())
      throw fail("/model/vocab", "must be a non-empty object of token: id");
    const nlohmann::json vocab = std::move(model["vocab"]);
    model.erase("vocab");

    // Every entry one code point (or [UNK] at 0), every ID in [0, n) once: the IDs are exactly 0 .. n-1.
    Vocabulary v(Level::kChar);
    const size_t n = vocab.size();
    if (n > 0x110001) throw fail("/model/vocab", std::to_string(n) + " entries; Unicode has 0x110000 code points");
    constexpr char32_t kFree = 0xFFFFFFFF;
    v.by_id_.assign(n, kFree);
    for (const auto& [token, id_value] : vocab.items()) {
      const std::string entry = "entry " + quote_value(token);
      if (!id_value.is_number_integer() || id_value.get<int64_t>() < 0 || id_value.get<int64_t>() >= int64_t(n))
        throw fail("/model/vocab", entry + " has id " + quote_value(id_value) + "; the ids of " + std::to_string(n) +
                                       " entries are 0 .. " + std::to_string(n - 1));
      const auto id = static_cast<int32_t>(id_value.get<int64_t>());
      char32_t c = 0xFFFD;
      if (token == kUnknownToken) {
        if (id != kUnknownId) throw fail("/model/vocab", entry + " must have id 0, has " + std::to_string(id));
      } else {
        const Utf8Char first = token.empty() ? Utf8Char{} : next_utf8(token, 0);
        if (!first.valid || first.length != token.size())
          throw fail("/model/vocab", entry + " is not one character (a char-level vocabulary has one per token)");
        c = first.code_point;
        if (id == kUnknownId) throw fail("/model/vocab", entry + " has id 0, the id of \"[UNK]\"");
      }
      if (v.by_id_[id] != kFree) throw fail("/model/vocab", entry + ": id " + std::to_string(id) + " is used twice");
      v.by_id_[id] = c;
      if (id != kUnknownId) v.add(c, id);
    }
    if (v.by_id_[kUnknownId] == kFree) throw fail("/model/vocab", "has no \"[UNK]\" entry (id 0)");
    std::sort(v.by_code_point_.begin(), v.by_code_point_.end());
    nlohmann::json expected = v.document<nlohmann::json>();
    expected["model"].erase("vocab");
    same_as_written(expected, doc, name);
    return v;
  }

  Level level() const { return level_; }
  // IDs are 0 .. size() - 1.
  size_t size() const { return level_ == Level::kByte ? 256 : by_id_.size(); }

  // The ID of one code point (char level): 0 when it is not in the vocabulary.
  int32_t id(char32_t code_point) const {
    const auto it = std::lower_bound(by_code_point_.begin(), by_code_point_.end(), std::pair<char32_t, int32_t>(code_point, 0));
    return it != by_code_point_.end() && it->first == code_point ? it->second : kUnknownId;
  }

  // Token IDs of `text` (a prompt, a file's contents). Char level: invalid UTF-8 throws Error(CORRUPT_DATA)
  // naming `what` and the byte offset.
  std::vector<int32_t> encode(std::string_view text, const std::string& what = "text") const {
    std::vector<int32_t> ids;
    ids.reserve(text.size());
    if (level_ == Level::kByte)
      for (char b : text) ids.push_back(static_cast<unsigned char>(b));
    else
      for_each_code_point(text, what, [&](char32_t c) { ids.push_back(id(c)); });
    return ids;
  }

  // UTF-8 text of `ids`. The unknown token (char level) and byte sequences that are not UTF-8 (byte level, as the
  // library's ByteLevel decoder does) become U+FFFD. An ID outside [0, size()) throws Error(INVALID_ARGUMENT).
  std::string decode(std::span<const int32_t> ids) const {
    std::string out;
    for (int32_t id : ids)
      if (id < 0 || static_cast<size_t>(id) >= size())
        throw Error(RAMJET_ERR_INVALID_ARGUMENT, "token id " + std::to_string(id) + " is outside the vocabulary's 0 .. " +
                                                     std::to_string(size() - 1));
    if (level_ == Level::kChar) {
      for (int32_t id : ids) append_utf8(out, id == kUnknownId ? char32_t{0xFFFD} : by_id_[id]);
      return out;
    }
    std::string raw;
    for (int32_t id : ids) raw += static_cast<char>(id);
    for (size_t at = 0; at < raw.size();) {
      const Utf8Char c = next_utf8(raw, at);
      append_utf8(out, c.code_point);
      at += c.length;
    }
    return out;
  }

  // The tokenizer.json document (J: nlohmann::json or nlohmann::ordered_json, which keeps the library's order).
  template <class J>
  J document() const {
    J doc = {{"version", "1.0"}, {"truncation", nullptr}, {"padding", nullptr}, {"added_tokens", J::array()},
             {"normalizer", nullptr}};
    J vocab = J::object();
    if (level_ == Level::kChar) {
      doc["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "[\\s\\S]"}}}, {"behavior", "Isolated"}, {"invert", false}};
      doc["post_processor"] = nullptr;
      doc["decoder"] = {{"type", "Fuse"}};
      vocab[kUnknownToken] = kUnknownId;
      for (size_t id = 1; id < by_id_.size(); ++id) {
        std::string token;
        append_utf8(token, by_id_[id]);
        vocab[token] = id;
      }
      doc["model"] = {{"type", "WordLevel"}, {"vocab", std::move(vocab)}, {"unk_token", kUnknownToken}};
    } else {
      const J byte_level = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"trim_offsets", false}, {"use_regex", false}};
      doc["pre_tokenizer"] = byte_level;
      doc["post_processor"] = nullptr;
      doc["decoder"] = byte_level;
      for (int b = 0; b < 256; ++b) {
        std::string token;
        append_utf8(token, byte_character(static_cast<uint8_t>(b)));
        vocab[token] = b;
      }
      doc["model"] = {{"type", "BPE"}, {"dropout", nullptr}, {"unk_token", nullptr}, {"continuing_subword_prefix", nullptr},
                      {"end_of_word_suffix", nullptr}, {"fuse_unk", false}, {"byte_fallback", false},
                      {"ignore_merges", false}, {"vocab", std::move(vocab)}, {"merges", J::array()}};
    }
    return doc;
  }

  // The tokenizer.json, written atomically. Throws Error(IO) naming the path.
  void write(const std::filesystem::path& path) const {
    write_file_atomically(path, document<nlohmann::ordered_json>().dump(2) + "\n");
  }

  // GPT-2's bytes_to_unicode (the ByteLevel pre-tokenizer's alphabet): printable Latin-1 bytes stand for themselves,
  // the other bytes, in order, for U+0100 onwards.
  static char32_t byte_character(uint8_t b) {
    static const std::array<char32_t, 256> table = [] {
      std::array<char32_t, 256> t{};
      char32_t next = 256;
      for (int i = 0; i < 256; ++i) {
        const bool printable = (i >= '!' && i <= '~') || (i >= 0xA1 && i <= 0xAC) || (i >= 0xAE && i <= 0xFF);
        t[i] = printable ? char32_t(i) : next++;
      }
      return t;
    }();
    return table[b];
  }

 private:
  explicit Vocabulary(Level level) : level_(level) {}
  void add(char32_t c, int32_t id) { by_code_point_.emplace_back(c, id); }

  static std::string hex(char32_t c) {
    char text[16];
    std::snprintf(text, sizeof text, "%04X", static_cast<unsigned>(c));
    return text;
  }

  // The first place where `actual` differs from what write() writes (less what was checked already): anything else
  // (a normalizer, added tokens, another pre-tokenizer) would make the library's IDs differ from ramjet's.
  static void same_as_written(const nlohmann::json& expected, const nlohmann::json& actual, const std::string& name) {
    const nlohmann::json patch = nlohmann::json::diff(actual, expected);
    if (patch.empty()) return;
    std::string pointer = patch[0]["path"].get<std::string>();
    if (pointer.size() >= 2 && pointer.compare(pointer.size() - 2, 2, "/-") == 0) pointer.resize(pointer.size() - 2);
    const nlohmann::json::json_pointer at(pointer);
    const std::string found = actual.contains(at) ? "is " + quote_value(actual[at]) : "is missing";
    const std::string wanted = expected.contains(at) ? "ramjet writes " + quote_value(expected[at]) : "ramjet writes nothing there";
    throw Error(RAMJET_ERR_CORRUPT_DATA, name + "#" + pointer + ": " + found + ", " + wanted +
                                             "; ramjet reads only the tokenizers it writes, whose IDs the library reproduces");
  }

  Level level_;
  std::vector<char32_t> by_id_;                             // char level: the code point of each ID (0: [UNK])
  std::vector<std::pair<char32_t, int32_t>> by_code_point_;  // char level: sorted by code point
};

}  // namespace ramjet

#endif  // RAMJET_SDK_VOCABULARY_HPP
