// data_source "text": UTF-8 text files as fixed-length windows of token IDs with next-token labels, for language
// models.
// Config: files (a path or glob pattern, or an array of them; relative to the manifest; read in order, each
//           pattern's matches sorted, and concatenated),
//         context (T, tokens per window), stride (tokens between window starts; default T: no overlap),
//         level ("char": one token per code point, the default; "byte": one token per byte),
//         vocabulary (a tokenizer.json, relative to the manifest: read when it exists, else built from the whole
//           corpus and written; required for "char"),
//         split ([from, to] in [0, 1]: only the windows inside that part of the corpus's tokens).
// Elements: tokens int32 [T] = ids[s, s + T) and labels int32 [T] = ids[s + 1, s + T + 1), s = the window's start.
// The element spec's "tokens" also names the level, the vocabulary's size and its tokenizer.json.
// Random access. The corpus lives in memory as int32 IDs: at most kMaxCorpusBytes of text.
#pragma once

#include <ramjet/sdk.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace stock_text {

class TextSource {
 public:
  static constexpr uint64_t kMaxCorpusBytes = uint64_t{256} << 20;  // 1 GiB of IDs at most
  static constexpr int64_t kMaxContext = int64_t{1} << 20;

  static ramjet::Fields fields();
  static void check(const nlohmann::json& config, ramjet::Problems& problems);  // entries of files, split; vocabulary
  static void check_files(const ramjet::Config& config, ramjet::Problems& problems);  // the corpus files exist
  explicit TextSource(const ramjet::Config& config);
  int64_t cardinality() const { return count_; }
  nlohmann::json element_spec() const;
  void get(int64_t index, ramjet::Example& out) const;

 private:
  std::vector<int32_t> ids_;  // the whole corpus
  int64_t context_ = 0;
  int64_t stride_ = 0;
  int64_t first_ = 0;  // where the split's tokens start
  int64_t count_ = 0;  // windows in the split
  int64_t vocabulary_size_ = 0;
  std::string level_;            // "char" or "byte"
  std::string vocabulary_file_;  // absolute; empty for the built-in byte vocabulary
};

}  // namespace stock_text
