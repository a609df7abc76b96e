#include "ramjet/plugin/json_text.hpp"

#include "ramjet/plugin/failure.hpp"

#include <fstream>
#include <set>
#include <sstream>
#include <vector>

namespace ramjet::core {
namespace {

using nlohmann::json;

// Where the parser stands: one frame per open object or array, so a duplicate key can be named by its pointer.
class Position {
 public:
  void open(bool is_array) {
    count_value();
    frames_.push_back(Frame{is_array, -1, {}, {}});
  }
  void close() { frames_.pop_back(); }
  void count_value() {
    if (!frames_.empty() && frames_.back().is_array) ++frames_.back().index;
  }
  // False when the current object already has this key.
  bool add_key(const std::string& key) {
    frames_.back().key = key;
    return frames_.back().keys.insert(key).second;
  }
  std::string pointer() const {
    std::string out;
    for (const auto& f : frames_) {
      if (f.is_array) {
        if (f.index >= 0) out += "/" + std::to_string(f.index);
        continue;
      }
      if (f.keys.empty()) continue;
      std::string token;
      for (char c : f.key) token += c == '~' ? "~0" : c == '/' ? "~1" : std::string(1, c);
      out += "/" + token;
    }
    return out;
  }

 private:
  struct Frame {
    bool is_array;
    long long index;
    std::string key;
    std::set<std::string> keys;
  };
  std::vector<Frame> frames_;
};

struct Refusal {
  std::string message;
};

// nlohmann's parse_error text is "[json.exception.parse_error.101] parse error at line 1, column 5: syntax error
// while parsing value - invalid literal; last read: '...'": keep what it says, drop its tag, bound the echo.
std::string syntax_message(const json::parse_error& e) {
  std::string text = e.what();
  if (auto close = text.find("] "); text.rfind("[json.exception", 0) == 0 && close != std::string::npos)
    text = text.substr(close + 2);
  return excerpt(text, 200);
}

}  // namespace

std::string excerpt(std::string_view text, size_t limit) {
  if (text.size() <= limit) return std::string(text);
  size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // not inside a UTF-8 sequence
  return std::string(text.substr(0, cut)) + "... (" + std::to_string(text.size() - cut) + " more bytes)";
}

json parse_json_text(std::string_view text, const std::string& source) {
  Position position;
  auto watch = [&](int depth, json::parse_event_t event, json& parsed) -> bool {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (depth >= kMaxJsonDepth)
          throw Refusal{"JSON nested deeper than " + std::to_string(kMaxJsonDepth) + " levels at " + position.pointer()};
        position.open(event == json::parse_event_t::array_start);
        break;
      case json::parse_event_t::object_end:
      case json::parse_event_t::array_end:
        position.close();
        break;
      case json::parse_event_t::key:
        if (!position.add_key(parsed.get<std::string>()))
          throw Refusal{"duplicate key at " + position.pointer() + " (each key may appear once in an object)"};
        break;
      case json::parse_event_t::value:
        position.count_value();
        break;
    }
    return true;
  };
  try {
    return json::parse(text.begin(), text.end(), watch);
  } catch (const Refusal& r) {
    throw InvalidInput(source + ": " + r.message);
  } catch (const json::parse_error& e) {
    throw InvalidInput(source + ": not valid JSON at byte " + std::to_string(e.byte) + " (" + syntax_message(e) + ")");
  } catch (const json::exception& e) {  // out_of_range.406: a number beyond double's range, such as 1e400
    std::string text = e.what();
    if (auto close = text.find("] "); close != std::string::npos) text = text.substr(close + 2);
    throw InvalidInput(source + ": not valid JSON (" + excerpt(text, 200) + ")");
  }
}

json read_json_file(const std::filesystem::path& path, uint64_t max_bytes) {
  std::error_code ec;
  const auto status = std::filesystem::status(path, ec);
  if (ec || !std::filesystem::exists(status)) throw InvalidInput(path.string() + ": cannot open: no such file");
  if (!std::filesystem::is_regular_file(status)) throw InvalidInput(path.string() + ": not a regular file");
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (ec) throw InvalidInput(path.string() + ": cannot read its size: " + ec.message());
  if (size > max_bytes)
    throw InvalidInput(path.string() + ": " + std::to_string(size) + " bytes, more than a manifest may have (" +
                       std::to_string(max_bytes) + ")");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InvalidInput(path.string() + ": cannot open the file");
  std::string text(size, '\0');
  if (!in.read(text.data(), static_cast<std::streamsize>(size)))
    throw InvalidInput(path.string() + ": cannot read the file");
  return parse_json_text(text, path.string());
}

}  // namespace ramjet::core
