#include "text_source.hpp"

#include "corpus.hpp"

#include <ramjet/sdk/vocabulary.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <system_error>

namespace stock_text {
namespace {

namespace fs = std::filesystem;
using ramjet::Vocabulary;

// 0.9 as "0.9", 1.0 as "1", as a user writes them.
std::string number_text(double v) {
  return v == std::floor(v) ? std::to_string(static_cast<int64_t>(v)) : nlohmann::json(v).dump();
}

// The corpus as it is read: code points (char level) or bytes, before they become IDs.
std::vector<int32_t> read_corpus(const ramjet::Config& config, bool char_level) {
  const std::vector<fs::path> files = expand_files(config);
  uint64_t total = 0;
  for (const auto& file : files) {
    std::error_code ec;
    const uintmax_t size = fs::file_size(file, ec);
    if (!ec) total += size;
  }
  if (total > TextSource::kMaxCorpusBytes)
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT,
                        config.where("files") + ": the " + std::to_string(files.size()) + " files hold " +
                            std::to_string(total) + " bytes; the text source keeps its corpus in memory and reads at most " +
                            std::to_string(TextSource::kMaxCorpusBytes) + " bytes (256 MiB) of text");
  std::vector<int32_t> corpus;
  corpus.reserve(static_cast<size_t>(total));
  uint64_t used = 0;
  for (const auto& file : files) {
    const std::string text = read_whole_file(file, TextSource::kMaxCorpusBytes - used);
    used += text.size();
    if (char_level)
      ramjet::for_each_code_point(text, file.string(), [&](char32_t c) { corpus.push_back(static_cast<int32_t>(c)); });
    else
      for (char b : text) corpus.push_back(static_cast<unsigned char>(b));
  }
  return corpus;
}

// Every distinct code point of the corpus, in order.
Vocabulary vocabulary_of(const std::vector<int32_t>& code_points) {
  std::vector<bool> seen(0x110000);
  for (int32_t c : code_points) seen[static_cast<size_t>(c)] = true;
  std::vector<char32_t> distinct;
  for (char32_t c = 0; c < 0x110000; ++c)
    if (seen[c]) distinct.push_back(c);
  return Vocabulary::characters(std::move(distinct));
}

// The vocabulary file when it exists (its errors prefixed with the field's pointer), else the corpus's, written
// there when a path was given.
Vocabulary vocabulary_for(const ramjet::Config& config, bool char_level, const std::vector<int32_t>& corpus) {
  const Vocabulary::Level level = char_level ? Vocabulary::Level::kChar : Vocabulary::Level::kByte;
  const char* level_name = char_level ? "char" : "byte";
  if (!config.has("vocabulary")) return Vocabulary::bytes();  // check() demands it for char
  const fs::path path = config.path("vocabulary");
  std::error_code ec;
  if (fs::exists(path, ec) || fs::is_symlink(path, ec)) {
    std::optional<Vocabulary> read;
    try {
      read = Vocabulary::read(path);
    } catch (const ramjet::Error& e) {
      throw ramjet::Error(e.status(), config.where("vocabulary") + ": " + e.what());
    }
    if (read->level() != level)
      throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT,
                          config.where("vocabulary") + ": " + path.string() + " is a " +
                              (char_level ? "byte" : "char") + "-level tokenizer, but level is \"" + level_name + "\"");
    return std::move(*read);
  }
  Vocabulary built = char_level ? vocabulary_of(corpus) : Vocabulary::bytes();
  try {
    if (path.has_parent_path()) fs::create_directories(path.parent_path(), ec);  // else write() says why it cannot
    built.write(path);
  } catch (const ramjet::Error& e) {
    throw ramjet::Error(e.status(), config.where("vocabulary") + ": " + e.what());
  }
  ramjet::log(RAMJET_LOG_INFO, "text",
              "wrote the " + std::string(level_name) + "-level vocabulary of the corpus (" +
                  std::to_string(built.size()) + " tokens) to " + path.string());
  return built;
}

}  // namespace

ramjet::Fields TextSource::fields() {
  using ramjet::Field;
  return {Field::any("files").required().rule([](const nlohmann::json& v) -> std::optional<std::string> {
            if (v.is_string() || (v.is_array() && !v.empty())) return std::nullopt;
            return "must be a path, a glob pattern or a non-empty array of them, got " + ramjet::quote_value(v);
          }).doc("relative to the manifest; read in order, each pattern's matches sorted, concatenated"),
          Field::integer("context").required().at_least(1).at_most(double(kMaxContext)).doc("tokens per window"),
          Field::integer("stride").at_least(1).at_most(double(INT32_MAX)).doc("tokens between window starts; default: context"),
          Field::string("level").one_of({"char", "byte"}).fallback("char"),
          Field::string("vocabulary").rule([](const nlohmann::json& v) -> std::optional<std::string> {
            if (v.get<std::string>().empty()) return "must name a file (a tokenizer.json)";
            return std::nullopt;
          }).doc("tokenizer.json: read when it exists, else built from the corpus and written"),
          Field::array("split").doc("[from, to], 0 <= from < to <= 1: the part of the corpus's tokens to use")};
}

void TextSource::check(const nlohmann::json& config, ramjet::Problems& problems) {
  const nlohmann::json& files = config.at("files");
  if (files.is_string() && files.get<std::string>().empty())
    problems.push_back({"/files", "must name a file or a pattern, got \"\""});
  for (size_t i = 0; files.is_array() && i < files.size(); ++i)
    if (!files[i].is_string() || files[i].get<std::string>().empty())
      problems.push_back({"/files/" + std::to_string(i),
                          "must be a path or a glob pattern, got " + ramjet::quote_value(files[i])});
  if (config.value("level", "char") == "char" && !config.contains("vocabulary"))
    problems.push_back({"/vocabulary", "required for level \"char\": the tokenizer.json to read, or to build from the "
                                       "corpus and write"});
  if (config.contains("split")) {
    const nlohmann::json& split = config["split"];
    if (split.size() != 2) {
      problems.push_back({"/split", "must be [from, to], got " + ramjet::quote_value(split)});
      return;
    }
    bool numbers = true;
    for (size_t i = 0; i < 2; ++i)
      if (!split[i].is_number() || !(split[i].get<double>() >= 0 && split[i].get<double>() <= 1)) {
        problems.push_back({"/split/" + std::to_string(i), "must be a number in [0, 1], got " + ramjet::quote_value(split[i])});
        numbers = false;
      }
    if (numbers && !(split[0].get<double>() < split[1].get<double>()))
      problems.push_back({"/split", "from (" + split[0].dump() + ") must be below to (" + split[1].dump() + ")"});
  }
}

// The vocabulary file may not exist yet (it is built and written then); the corpus must.
void TextSource::check_files(const ramjet::Config& config, ramjet::Problems& problems) {
  ramjet::check_paths(config, "files", ramjet::PathKind::kFile, true, problems);
}

// create() has checked the configuration against fields() and check(); here the corpus is read and tokenized.
TextSource::TextSource(const ramjet::Config& config) {
  const nlohmann::json c = fields().with_defaults(config.json());
  const bool char_level = c.at("level") == "char";
  context_ = c.at("context").get<int64_t>();
  stride_ = c.value("stride", context_);

  ids_ = read_corpus(config, char_level);
  const Vocabulary vocabulary = vocabulary_for(config, char_level, ids_);
  vocabulary_size_ = static_cast<int64_t>(vocabulary.size());
  level_ = char_level ? "char" : "byte";
  if (config.has("vocabulary")) vocabulary_file_ = fs::absolute(config.path("vocabulary")).string();
  int64_t unknown = 0;
  if (char_level)
    for (int32_t& id : ids_) {
      id = vocabulary.id(static_cast<char32_t>(id));
      unknown += id == Vocabulary::kUnknownId;
    }
  if (unknown > 0)
    ramjet::log(RAMJET_LOG_WARNING, "text",
                std::to_string(unknown) + " characters of the corpus are not in " + config.path("vocabulary").string() +
                    ": they are the unknown token, ID 0");

  // The split cuts the tokens, not the windows: no token (input or label) is in two splits.
  const auto n = static_cast<int64_t>(ids_.size());
  const int64_t needed = context_ + 1;
  if (n < needed)
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT,
                        config.where("context") + ": the corpus has " + std::to_string(n) + " tokens; one window of " +
                            std::to_string(context_) + " needs " + std::to_string(needed) + " (the labels run one further)");
  int64_t end = n;
  if (c.contains("split")) {
    const double from = c["split"][0].get<double>(), to = c["split"][1].get<double>();
    first_ = static_cast<int64_t>(std::floor(from * static_cast<double>(n)));
    end = std::min(n, static_cast<int64_t>(std::floor(to * static_cast<double>(n))));
    if (end - first_ < needed)
      throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT,
                          config.where("split") + ": [" + number_text(from) + ", " + number_text(to) + "] of the corpus's " +
                              std::to_string(n) + " tokens holds " + std::to_string(end - first_) + "; one window of " +
                              std::to_string(context_) + " needs " + std::to_string(needed));
  }
  count_ = (end - first_ - needed) / stride_ + 1;
  ramjet::log(RAMJET_LOG_INFO, "text",
              std::to_string(n) + " tokens, vocabulary of " + std::to_string(vocabulary.size()) + ": " +
                  std::to_string(count_) + " windows of " + std::to_string(context_) + " in tokens [" +
                  std::to_string(first_) + ", " + std::to_string(end) + ")");
}

// The tokens say which vocabulary they index, so that a reader of the model's outputs (`ramjet generate`) can
// turn IDs back into text with the same tokenizer.json.
nlohmann::json TextSource::element_spec() const {
  const nlohmann::json window = {{"dtype", "int32"}, {"shape", {context_}}};
  nlohmann::json tokens = window;
  tokens["level"] = level_;
  tokens["vocabulary_size"] = vocabulary_size_;
  if (!vocabulary_file_.empty()) tokens["vocabulary"] = vocabulary_file_;
  return {{"tokens", tokens}, {"labels", window}};
}

void TextSource::get(int64_t index, ramjet::Example& out) const {
  if (index < 0 || index >= count_)
    throw ramjet::Error(RAMJET_ERR_OUT_OF_RANGE, "text: element " + std::to_string(index) + " is outside [0, " +
                                                     std::to_string(count_) + ")");
  const int32_t* start = ids_.data() + first_ + index * stride_;
  ramjet::Tensor tokens = ramjet::Tensor::zeros(ramjet::dtype_of<int32_t>(), {context_});
  ramjet::Tensor labels = ramjet::Tensor::zeros(ramjet::dtype_of<int32_t>(), {context_});
  std::copy(start, start + context_, tokens.data<int32_t>());
  std::copy(start + 1, start + 1 + context_, labels.data<int32_t>());
  out.set("tokens", std::move(tokens));
  out.set("labels", std::move(labels));
}

}  // namespace stock_text
