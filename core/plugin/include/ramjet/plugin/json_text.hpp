// JSON written by users (pipeline manifests, plugin manifests, --set values, checkpoint metadata): parsed once,
// strictly, with bounds. Duplicate keys are refused (JSON parsers disagree on which one wins, so a file that says
// "batch": -1 and "batch": 32 means nothing reliable), nesting is capped (a deep document would overflow the stack
// of anything that walks it recursively, a message's echo included), and the error names the place without the
// JSON library's own wording.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace ramjet::core {

inline constexpr int kMaxJsonDepth = 128;
// A manifest is a page of text; anything larger is a mistake (a dataset passed as the manifest, say).
inline constexpr uint64_t kMaxManifestBytes = 16ull << 20;

// Parses `text`. Throws InvalidInput "<source>: ..." naming the byte offset (syntax), or the JSON pointer (duplicate
// key, nesting deeper than kMaxJsonDepth).
nlohmann::json parse_json_text(std::string_view text, const std::string& source);

// Reads and parses a regular file of at most `max_bytes`. Throws InvalidInput naming the file.
nlohmann::json read_json_file(const std::filesystem::path& path, uint64_t max_bytes = kMaxManifestBytes);

// At most `limit` bytes of `text`, cut on a UTF-8 character boundary, with how much was left out: for echoing a
// user's value in a message.
std::string excerpt(std::string_view text, size_t limit = 80);

}  // namespace ramjet::core
