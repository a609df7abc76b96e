#include "ramjet/plan/pipeline_manifest.hpp"

#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/json_text.hpp"

#include <charconv>

namespace ramjet::core {

using nlohmann::json;

namespace {

// `--set` may extend an array by one (index == size, or "-"), never grow it by a gap: an index of 999999999 would
// otherwise fill a billion nulls before anything checks them.
void check_array_indices(const json& doc, const std::string& pointer, const std::string& shown) {
  const json* node = &doc;
  size_t start = 1;
  while (node != nullptr && start <= pointer.size()) {
    const size_t end = std::min(pointer.find('/', start), pointer.size());
    std::string token = pointer.substr(start, end - start);
    start = end + 1;
    if (node->is_array()) {
      if (token == "-") return;
      size_t index = 0;
      const auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), index);
      if (ec != std::errc{} || ptr != token.data() + token.size() || (token.size() > 1 && token[0] == '0'))
        throw InvalidInput("--set '" + shown + "': '" + excerpt(token, 40) + "' is not an array index");
      if (index > node->size())
        throw InvalidInput("--set '" + shown + "': index " + excerpt(token, 40) + " is past the end of an array of " +
                           std::to_string(node->size()) + " (at most " + std::to_string(node->size()) +
                           " to append one)");
      node = index < node->size() ? &(*node)[index] : nullptr;
    } else if (node->is_object()) {
      std::string key;
      for (size_t i = 0; i < token.size(); ++i) {  // RFC 6901 escapes
        if (token[i] == '~' && i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1')) {
          key += token[++i] == '0' ? '~' : '/';
        } else {
          key += token[i];
        }
      }
      auto it = node->find(key);
      node = it == node->end() ? nullptr : &*it;
    } else {
      return;  // a scalar in the way: json_pointer reports it below
    }
  }
}

}  // namespace

PipelineManifest load_pipeline_manifest(const std::filesystem::path& path) {
  PipelineManifest m;
  m.path = path;
  m.doc = read_json_file(path);
  return m;
}

void apply_override(PipelineManifest& manifest, const std::string& assignment) {
  const std::string shown = excerpt(assignment, 120);
  auto eq = assignment.find('=');
  if (assignment.empty() || assignment[0] != '/' || eq == std::string::npos)
    throw InvalidInput("--set '" + shown + "': expected POINTER=VALUE, e.g. --set /data/train/batch=64");
  const std::string pointer = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  json value;
  try {
    value = parse_json_text(text, "--set " + excerpt(pointer, 80));
  } catch (const InvalidInput&) {
    // A bare word such as mixed_bfloat16 is a string; text that starts like JSON but is broken is an error.
    const bool looks_like_json = !text.empty() && std::string("{[\"").find(text.front()) != std::string::npos;
    if (looks_like_json) throw;
    value = text;
  }
  json::json_pointer where;
  try {
    where = json::json_pointer(pointer);
  } catch (const json::exception&) {
    throw InvalidInput("--set '" + shown + "': '" + excerpt(pointer, 80) +
                       "' is not a JSON pointer (a '~' must be followed by 0 or 1)");
  }
  check_array_indices(manifest.doc, pointer, shown);
  try {
    manifest.doc[where] = value;
  } catch (const json::exception&) {
    throw InvalidInput("--set '" + shown + "': cannot set " + manifest.where(excerpt(pointer, 80)) +
                       ": a value on the way there is not an object or array, or an array index is not a number");
  }
}

}  // namespace ramjet::core
