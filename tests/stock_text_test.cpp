// The text source (plugins/stock_text): windows and labels, stride and split, files in order, the vocabulary built
// once and reused, every bad input named by file and place, the fortunes corpus, and the tokenizer file read by the
// real Hugging Face `tokenizers` library with the same IDs.
#include "ramjet/plugin/components.hpp"
#include "ramjet/plugin/failure.hpp"
#include "test_support.hpp"

#include <ramjet/sdk/vocabulary.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <iostream>
#include <optional>

using namespace ramjet::core;
using namespace ramjet::test;
using nlohmann::json;

namespace {

const fs::path kFortunes = "/usr/share/games/fortunes";

class StockTextTest : public ::testing::Test {
 protected:
  PluginRegistry registry{DiscoveryOptions{{stock_plugin_dir()}, {}, {}}};
  TempDir dir;

  CreateArgs args(const json& config) {
    CreateArgs a;
    a.config = config;
    a.base_dir = dir.path();
    a.where = "test.json#/data/train/source";
    return a;
  }
  DataSource open(const json& config) {
    return DataSource(registry.component(RAMJET_KIND_DATA_SOURCE, "text"), args(config));
  }
  // The message of the InvalidInput that opening `config` throws ("" and a failure when it opens).
  std::string error_of(const json& config) {
    try {
      open(config);
      ADD_FAILURE() << "expected an error for " << config.dump();
    } catch (const InvalidInput& e) {
      return e.what();
    }
    return "";
  }
  void expect_error(const json& config, const std::vector<std::string>& fragments) {
    const std::string message = error_of(config);
    for (const auto& f : fragments) EXPECT_NE(message.find(f), std::string::npos) << "missing '" << f << "' in: " << message;
  }
};

std::vector<int32_t> tensor_of(const Example& e, const char* name) {
  const DLTensor* t = e.find(name);
  if (t == nullptr) {
    ADD_FAILURE() << "no tensor " << name;
    return {};
  }
  EXPECT_EQ(t->dtype.code, kDLInt);
  EXPECT_EQ(t->dtype.bits, 32);
  EXPECT_EQ(t->ndim, 1);
  const auto* p = static_cast<const int32_t*>(t->data);
  return std::vector<int32_t>(p, p + t->shape[0]);
}

struct Window {
  std::vector<int32_t> tokens, labels;
  bool operator==(const Window&) const = default;
};

Window window(const DataSource& source, int64_t i) {
  Example e;
  source.get(i, e);
  return {tensor_of(e, "tokens"), tensor_of(e, "labels")};
}

// Bytes 0 .. n-1 (mod 256): at byte level each token is its own position.
std::string positions(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += static_cast<char>(i & 0xff);
  return s;
}

std::vector<int32_t> range(int32_t from, int32_t count) {
  std::vector<int32_t> v;
  for (int32_t i = 0; i < count; ++i) v.push_back(from + i);
  return v;
}

}  // namespace

TEST_F(StockTextTest, WindowsAndLabelsAreTheRightSlices) {
  write_file(dir / "abc.txt", "abcdefghij");
  auto source = open({{"files", "abc.txt"}, {"context", 3}, {"vocabulary", "tokenizer.json"}});
  // 10 tokens, windows of 3 need 4: starts 0, 3, 6. Vocabulary: [UNK] = 0, a..j = 1..10 in code-point order.
  ASSERT_EQ(source.cardinality(), 3);
  const auto spec = source.element_spec();
  ASSERT_TRUE(spec);
  // The tokens name their vocabulary, so that `ramjet generate` decodes with the same tokenizer.json.
  const json tokens = {{"dtype", "int32"}, {"shape", {3}}, {"level", "char"}, {"vocabulary_size", 11},
                       {"vocabulary", fs::absolute(dir / "tokenizer.json").string()}};
  EXPECT_EQ(*spec, (json{{"tokens", tokens}, {"labels", {{"dtype", "int32"}, {"shape", {3}}}}}));
  EXPECT_EQ(window(source, 0), (Window{{1, 2, 3}, {2, 3, 4}}));
  EXPECT_EQ(window(source, 1), (Window{{4, 5, 6}, {5, 6, 7}}));
  EXPECT_EQ(window(source, 2), (Window{{7, 8, 9}, {8, 9, 10}}));
  Example past;
  EXPECT_THROW(source.get(3, past), InvalidInput);
  EXPECT_THROW(source.get(-1, past), InvalidInput);
}

TEST_F(StockTextTest, CardinalityFollowsStrideAndSplit) {
  write_file(dir / "p.bin", positions(100));
  const json base = {{"files", "p.bin"}, {"context", 4}, {"level", "byte"}};
  auto with = [&](json extra) {
    json c = base;
    c.update(extra);
    return c;
  };
  EXPECT_EQ(open(base).cardinality(), 24);                            // (100 - 5) / 4 + 1: stride = context
  EXPECT_EQ(open(with({{"stride", 1}})).cardinality(), 96);           // 100 - 5 + 1
  EXPECT_EQ(open(with({{"stride", 3}})).cardinality(), 32);           // (100 - 5) / 3 + 1
  EXPECT_EQ(open(with({{"stride", 1000}})).cardinality(), 1);
  EXPECT_EQ(window(open(with({{"stride", 3}})), 31), (Window{range(93, 4), range(94, 4)}));

  // The split cuts the tokens: train [0, 90), validation [90, 100); no token is in both.
  auto train = open(with({{"stride", 1}, {"split", {0, 0.9}}}));
  auto validation = open(with({{"stride", 1}, {"split", {0.9, 1}}}));
  ASSERT_EQ(train.cardinality(), 86);     // 90 - 5 + 1
  ASSERT_EQ(validation.cardinality(), 6);  // 10 - 5 + 1
  EXPECT_EQ(window(train, 0), (Window{range(0, 4), range(1, 4)}));
  EXPECT_EQ(window(train, 85), (Window{range(85, 4), range(86, 4)}));  // its last label is token 89
  EXPECT_EQ(window(validation, 0), (Window{range(90, 4), range(91, 4)}));
  EXPECT_EQ(window(validation, 5), (Window{range(95, 4), range(96, 4)}));
  EXPECT_EQ(open(with({{"split", {0.5, 1}}})).cardinality(), 12);  // tokens [50, 100), stride 4
}

TEST_F(StockTextTest, ElementsAreDeterministic) {
  write_file(dir / "t.txt", "the quick brown fox jumps over the lazy dog\n");
  const json config = {{"files", "t.txt"}, {"context", 5}, {"stride", 2}, {"vocabulary", "v.json"}};
  auto a = open(config);
  auto b = open(config);
  ASSERT_EQ(a.cardinality(), b.cardinality());
  ASSERT_GT(a.cardinality(), 10);
  for (int64_t i = a.cardinality() - 1; i >= 0; --i) EXPECT_EQ(window(a, i), window(b, i)) << i;
  EXPECT_EQ(window(a, 3), window(a, 3));
  EXPECT_NE(window(a, 3), window(a, 4));
}

TEST_F(StockTextTest, SeveralFilesAreReadInSortedOrder) {
  fs::create_directories(dir / "corpus");
  write_file(dir / "corpus/b.txt", "DEF");
  write_file(dir / "corpus/c.txt", "GHI");
  write_file(dir / "corpus/a.txt", "ABC");
  auto as_text = [](const std::vector<int32_t>& bytes) { return std::string(bytes.begin(), bytes.end()); };
  auto globbed = open({{"files", "corpus/*.txt"}, {"context", 8}, {"level", "byte"}});
  ASSERT_EQ(globbed.cardinality(), 1);
  EXPECT_EQ(as_text(window(globbed, 0).tokens), "ABCDEFGH");
  EXPECT_EQ(as_text(window(globbed, 0).labels), "BCDEFGHI");
  // An array keeps its order; each pattern's matches are sorted.
  auto listed = open({{"files", {"corpus/c.txt", "corpus/[ab].txt"}}, {"context", 8}, {"level", "byte"}});
  EXPECT_EQ(as_text(window(listed, 0).tokens), "GHIABCDE");
  // Absolute paths are taken as they are.
  auto absolute = open({{"files", (dir / "corpus/b.txt").string()}, {"context", 2}, {"level", "byte"}});
  EXPECT_EQ(as_text(window(absolute, 0).tokens), "DE");
}

TEST_F(StockTextTest, VocabularyIsBuiltOnFirstUseAndReused) {
  write_file(dir / "first.txt", "hello world\n");
  const fs::path vocabulary = dir / "lm/tokenizer.json";
  ASSERT_FALSE(fs::exists(vocabulary));
  auto first = open({{"files", "first.txt"}, {"context", 11}, {"vocabulary", "lm/tokenizer.json"}});
  ASSERT_TRUE(fs::exists(vocabulary));
  const std::string written = read_file(vocabulary);
  const json doc = json::parse(written);
  // [UNK] = 0, then "\n", " ", d, e, h, l, o, r, w in code-point order.
  EXPECT_EQ(doc["model"]["type"], "WordLevel");
  EXPECT_EQ(doc["model"]["vocab"], (json{{"[UNK]", 0}, {"\n", 1}, {" ", 2}, {"d", 3}, {"e", 4}, {"h", 5}, {"l", 6},
                                         {"o", 7}, {"r", 8}, {"w", 9}}));
  const std::vector<int32_t> hello = {5, 4, 6, 6, 7, 2, 9, 7, 8, 6, 3};
  EXPECT_EQ(window(first, 0).tokens, hello);

  // A second corpus reuses the file: the same IDs, a character it lacks ('t') is the unknown token, nothing rewritten.
  write_file(dir / "second.txt", "hello there\n");
  auto second = open({{"files", "second.txt"}, {"context", 11}, {"vocabulary", "lm/tokenizer.json"}});
  EXPECT_EQ(window(second, 0).tokens, (std::vector<int32_t>{5, 4, 6, 6, 7, 2, 0, 5, 4, 8, 4}));
  EXPECT_EQ(read_file(vocabulary), written);

  // The SDK reads it back to the same table, and decodes (the unknown token as U+FFFD).
  const auto v = ramjet::Vocabulary::read(vocabulary);
  EXPECT_EQ(v.size(), 10u);
  EXPECT_EQ(v.encode("hello world"), std::vector<int32_t>(hello.begin(), hello.end()));
  EXPECT_EQ(v.decode(std::vector<int32_t>{5, 4, 0, 1}), "he\xEF\xBF\xBD\n");
  EXPECT_THROW(v.decode(std::vector<int32_t>{10}), ramjet::Error);

  // Byte level writes its own file when asked to, and reads it back.
  write_file(dir / "bytes.txt", "abc");
  auto bytes = open({{"files", "bytes.txt"}, {"context", 2}, {"level", "byte"}, {"vocabulary", "bytes.json"}});
  EXPECT_EQ(window(bytes, 0).tokens, (std::vector<int32_t>{'a', 'b'}));
  EXPECT_EQ(ramjet::Vocabulary::read(dir / "bytes.json").level(), ramjet::Vocabulary::Level::kByte);
  EXPECT_EQ(open({{"files", "bytes.txt"}, {"context", 2}, {"level", "byte"}, {"vocabulary", "bytes.json"}}).cardinality(), 1);
}

TEST_F(StockTextTest, CorruptOrMismatchedVocabularyIsNamed) {
  write_file(dir / "t.txt", "some text\n");
  const json config = {{"files", "t.txt"}, {"context", 3}, {"vocabulary", "v.json"}};
  const std::string file = (dir / "v.json").string();
  write_file(dir / "v.json", "{\"model\": {\"type\": \"WordLevel\",");
  expect_error(config, {"test.json#/data/train/source/vocabulary", file + ": not valid JSON (at byte"});

  ramjet::Vocabulary::characters({U'a', U'b'}).write(dir / "good.json");
  json doc = json::parse(read_file(dir / "good.json"));
  doc["model"]["type"] = "Unigram";
  write_file(dir / "v.json", doc.dump());
  expect_error(config, {file + "#/model/type: must be \"WordLevel\" (level char) or \"BPE\" (level byte)"});

  doc = json::parse(read_file(dir / "good.json"));
  doc["model"]["vocab"]["b"] = 1;  // the id of "a" too
  write_file(dir / "v.json", doc.dump());
  expect_error(config, {file + "#/model/vocab", "id 1 is used twice"});

  doc = json::parse(read_file(dir / "good.json"));
  doc["normalizer"] = {{"type", "Lowercase"}};  // the library would then encode differently
  write_file(dir / "v.json", doc.dump());
  expect_error(config, {file + "#/normalizer: is {\"type\":\"Lowercase\"}, ramjet writes null"});

  ramjet::Vocabulary::bytes().write(dir / "v.json");
  expect_error(config, {"/vocabulary: " + file + " is a byte-level tokenizer, but level is \"char\""});
}

TEST_F(StockTextTest, MissingFilesAreNamedWithTheirPointer) {
  expect_error({{"files", "nothing/*.txt"}, {"context", 2}, {"level", "byte"}},
               {"test.json#/data/train/source/files: pattern " + (dir / "nothing/*.txt").string() + " matches no file"});
  write_file(dir / "here.txt", "text");
  expect_error({{"files", {"here.txt", "absent.txt"}}, {"context", 2}, {"level", "byte"}},
               {"test.json#/data/train/source/files/1: " + (dir / "absent.txt").string() + ": no such file"});
  fs::create_directories(dir / "folder.txt");
  expect_error({{"files", "*.txt"}, {"context", 2}, {"level", "byte"}}, {(dir / "folder.txt").string(), "a directory"});
}

TEST_F(StockTextTest, InvalidUtf8IsNamedByFileAndByte) {
  write_file(dir / "a.txt", "fine\n");
  write_file(dir / "b.txt", "caf\xC3\xA9 ok, then \xC3\x28 bad");  // byte 15 starts a 2-byte sequence that breaks
  expect_error({{"files", "*.txt"}, {"context", 2}, {"vocabulary", "v.json"}},
               {(dir / "b.txt").string() + ": invalid UTF-8 at byte 15 (bytes c3)"});
  write_file(dir / "b.txt", "cut \xE2\x82");  // truncated at the end of the file
  expect_error({{"files", "*.txt"}, {"context", 2}, {"vocabulary", "v.json"}},
               {(dir / "b.txt").string() + ": invalid UTF-8 at byte 4 (bytes e2 82)"});
  write_file(dir / "b.txt", "surrogate \xED\xA0\x80");
  expect_error({{"files", "*.txt"}, {"context", 2}, {"vocabulary", "v.json"}}, {"invalid UTF-8 at byte 10 (bytes ed)"});
  EXPECT_FALSE(fs::exists(dir / "v.json"));
  // Byte level takes any bytes.
  EXPECT_EQ(open({{"files", "*.txt"}, {"context", 2}, {"level", "byte"}}).cardinality(), 8);  // (18 - 3) / 2 + 1
}

TEST_F(StockTextTest, TooShortCorpusSaysHowShort) {
  write_file(dir / "short.txt", "abc");
  expect_error({{"files", "short.txt"}, {"context", 3}, {"vocabulary", "v.json"}},
               {"test.json#/data/train/source/context: the corpus has 3 tokens; one window of 3 needs 4"});
  write_file(dir / "p.bin", positions(20));
  expect_error({{"files", "p.bin"}, {"context", 4}, {"level", "byte"}, {"split", {0.9, 1}}},
               {"test.json#/data/train/source/split: [0.9, 1] of the corpus's 20 tokens holds 2; one window of 4 needs 5"});
}

TEST_F(StockTextTest, CorpusTooLargeForMemoryIsRefusedBeforeReading) {
  write_file(dir / "huge.txt", "");
  fs::resize_file(dir / "huge.txt", (uint64_t{256} << 20) + 1);  // sparse: nothing is written or read
  expect_error({{"files", "huge.txt"}, {"context", 8}, {"level", "byte"}},
               {"test.json#/data/train/source/files: the 1 files hold 268435457 bytes",
                "reads at most 268435456 bytes (256 MiB)"});
}

TEST_F(StockTextTest, BadFieldValuesAreNamedByPointer) {
  write_file(dir / "t.txt", "text");
  const std::string at = "test.json#/data/train/source";
  const json ok = {{"files", "t.txt"}, {"context", 2}, {"level", "byte"}};
  auto with = [&](json extra) {
    json c = ok;
    c.update(extra);
    return c;
  };
  expect_error(with({{"context", 0}}), {at + "/context: must be >= 1"});
  expect_error(with({{"context", 2.5}}), {at + "/context: must be an integer"});
  expect_error(with({{"context", 1 << 21}}), {at + "/context: must be <= 1048576"});
  expect_error(with({{"stride", 0}}), {at + "/stride: must be >= 1"});
  expect_error(with({{"level", "word"}}), {at + "/level: must be one of char, byte"});
  expect_error(with({{"split", {0.5, 0.2}}}), {at + "/split: from (0.5) must be below to (0.2)"});
  expect_error(with({{"split", {0, 2}}}), {at + "/split/1: must be a number in [0, 1], got 2"});
  expect_error(with({{"split", {0}}}), {at + "/split: must be [from, to]"});
  expect_error(with({{"split", "0.9"}}), {at + "/split: must be an array"});
  expect_error(with({{"files", json::array()}}), {at + "/files: must be a path, a glob pattern or a non-empty array"});
  expect_error(with({{"files", {"t.txt", 3}}}), {at + "/files/1: must be a path or a glob pattern, got 3"});
  expect_error(with({{"vocabulary", ""}}), {at + "/vocabulary: must name a file"});
  expect_error(with({{"contxt", 2}}), {at + "/contxt: unknown field 'contxt' (did you mean 'context'?)"});
  expect_error({{"files", "t.txt"}, {"context", 2}}, {at + "/vocabulary: required for level \"char\""});
  expect_error({{"context", 2}, {"level", "byte"}}, {at + "/files: required field is missing"});
  // `ramjet validate` hears the same from check_config, before any file is read.
  const auto problems = check_component_config(registry.component(RAMJET_KIND_DATA_SOURCE, "text"),
                                               args({{"files", "absent/*"}, {"context", -1}, {"split", {1, 0}}}), "/src");
  ASSERT_EQ(problems.size(), 1u);  // the per-field problems come first; the cross-field rules wait for them
  EXPECT_EQ(problems[0].pointer, "/src/context");
}

TEST_F(StockTextTest, FortunesCorpusBuildsAndEveryIdIsInTheVocabulary) {
  if (!fs::is_directory(kFortunes)) GTEST_SKIP() << kFortunes << " is absent: Debian's `fortunes` package (./dev deps)";
  // Code points counted here independently: every byte that is not a UTF-8 continuation byte starts one.
  int64_t code_points = 0;
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(kFortunes))
    if (entry.path().extension() == ".u8") files.push_back(entry.path());
  ASSERT_FALSE(files.empty());
  for (const auto& file : files)
    for (char b : read_file(file)) code_points += (static_cast<unsigned char>(b) & 0xC0) != 0x80;
  const int64_t context = 128;
  auto source = open({{"files", (kFortunes / "*.u8").string()}, {"context", context}, {"vocabulary", "fortunes.json"}});
  ASSERT_GT(source.cardinality(), 0);
  EXPECT_EQ(source.cardinality(), (code_points - context - 1) / context + 1);
  const auto vocabulary = ramjet::Vocabulary::read(dir / "fortunes.json");
  const auto size = static_cast<int32_t>(vocabulary.size());
  EXPECT_GT(size, 90);  // printable ASCII and more
  std::vector<bool> used(static_cast<size_t>(size));
  for (int64_t i = 0; i < source.cardinality(); ++i) {
    const Window w = window(source, i);
    ASSERT_EQ(w.tokens.size(), static_cast<size_t>(context));
    for (size_t k = 0; k < w.tokens.size(); ++k) {
      ASSERT_TRUE(w.tokens[k] > 0 && w.tokens[k] < size) << "element " << i << " token " << k << ": " << w.tokens[k];
      ASSERT_TRUE(w.labels[k] > 0 && w.labels[k] < size) << "element " << i << " label " << k << ": " << w.labels[k];
      if (k + 1 < w.tokens.size()) {
        ASSERT_EQ(w.labels[k], w.tokens[k + 1]);
      }
      used[static_cast<size_t>(w.tokens[k])] = used[static_cast<size_t>(w.labels[k])] = true;
    }
  }
  // The vocabulary is the corpus's: every entry but [UNK] occurs, except perhaps in the few tokens after the last window.
  const int64_t after_last = code_points - ((source.cardinality() - 1) * context + context + 1);
  const auto distinct = std::count(used.begin(), used.end(), true);
  EXPECT_LE(distinct, size - 1);
  EXPECT_GE(distinct, size - 1 - after_last);
  std::cout << "[ fortunes ] " << files.size() << " files, " << code_points << " tokens, vocabulary of " << size
            << ", " << source.cardinality() << " windows of " << context << "\n";
}

// ---- the Hugging Face tokenizers library reads the files ---------------------------------------------------------

namespace {

std::optional<std::string> tokenizers_missing() {
  const fs::path python = venv_python();
  if (!fs::exists(python)) return "no Python venv at " + python.string() + "; `./dev test` creates it with tokenizers";
  if (run(quote(python.string()) + " -c 'import tokenizers'").exit_code != 0)
    return "the tokenizers library is not installed in " + python.string() + "; `./dev test` installs it";
  return std::nullopt;
}

// Loads the tokenizer file, encodes each text file (read as bytes, decoded strictly), decodes the IDs again, and
// says whether the library's own serialization of what it loaded equals the file.
constexpr const char* kTokenizerReader = R"(import json, sys
from tokenizers import Tokenizer
path = sys.argv[1]
tokenizer = Tokenizer.from_file(path)
out = {"same_json": json.loads(tokenizer.to_str()) == json.load(open(path, encoding="utf-8")),
       "vocab_size": tokenizer.get_vocab_size(), "texts": []}
for text_path in sys.argv[2:]:
    text = open(text_path, "rb").read().decode("utf-8")
    ids = tokenizer.encode(text).ids
    out["texts"].append({"ids": ids, "decoded": tokenizer.decode(ids)})
print(json.dumps(out))
)";

json read_with_tokenizers(const TempDir& dir, const fs::path& tokenizer, const std::vector<fs::path>& texts) {
  write_file(dir / "read_tokenizer.py", kTokenizerReader);
  std::string command = quote(venv_python().string()) + " " + quote((dir / "read_tokenizer.py").string()) + " " +
                        quote(tokenizer.string());
  for (const auto& t : texts) command += " " + quote(t.string());
  const auto r = run(command);
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto last = r.output.find_last_of('\n', r.output.size() - 2);
  return json::parse(last == std::string::npos ? r.output : r.output.substr(last + 1));
}

// Spaces, tabs, CR LF, punctuation, Latin-1, CJK, an emoji, a combining accent, control characters, "[UNK]" itself.
constexpr char kMixedText[] = "Hello,  world!\tTabs\r\nand new lines\n  \"quotes\" (brackets) [UNK] {braces} ~/\\|\n"
                           "na\xC3\xAFve caf\xC3\xA9 \xE2\x80\x94 \xC3\x9F \xE6\x97\xA5\xE6\x9C\xAC \xF0\x9F\x98\x80 "
                           "e\xCC\x81 bell\x07 nul\x00 blank lines\n\n\nend  \n";
const std::string kMixed(kMixedText, sizeof kMixedText - 1);  // with its NUL

}  // namespace

TEST_F(StockTextTest, TokenizersLibraryReadsTheCharVocabularyWithTheSameIds) {
  if (auto why = tokenizers_missing()) GTEST_SKIP() << *why;
  write_file(dir / "corpus.txt", kMixed);
  int64_t n = 0;
  ramjet::for_each_code_point(kMixed, "kMixed", [&](char32_t) { ++n; });
  // One window over the whole corpus: tokens + the last label are the IDs of every character.
  auto source = open({{"files", "corpus.txt"}, {"context", n - 1}, {"vocabulary", "tokenizer.json"}});
  ASSERT_EQ(source.cardinality(), 1);
  const Window w = window(source, 0);
  std::vector<int32_t> ours = w.tokens;
  ours.push_back(w.labels.back());
  ASSERT_EQ(static_cast<int64_t>(ours.size()), n);

  // Unknown characters (not in the corpus) are ID 0 for both.
  const std::string unseen = "Zebra \xE2\x82\xAC\xF0\x9F\x8E\x89 [UNK] x\n";
  write_file(dir / "unseen.txt", unseen);
  const auto vocabulary = ramjet::Vocabulary::read(dir / "tokenizer.json");
  const std::vector<int32_t> unseen_ids = vocabulary.encode(unseen);
  EXPECT_EQ(std::count(unseen_ids.begin(), unseen_ids.end(), 0), 4);  // Z, the euro sign, the party popper, x

  const json read = read_with_tokenizers(dir, dir / "tokenizer.json", {dir / "corpus.txt", dir / "unseen.txt"});
  EXPECT_TRUE(read["same_json"]) << "the library's serialization differs from the file";
  EXPECT_EQ(read["vocab_size"], vocabulary.size());
  ASSERT_EQ(read["texts"].size(), 2u);
  EXPECT_EQ(read["texts"][0]["ids"].get<std::vector<int32_t>>(), ours);
  EXPECT_EQ(read["texts"][1]["ids"].get<std::vector<int32_t>>(), unseen_ids);
  // Decoding gives the text back exactly (the library writes unknown tokens as "[UNK]", ramjet as U+FFFD).
  EXPECT_EQ(read["texts"][0]["decoded"].get<std::string>(), kMixed);
  EXPECT_EQ(vocabulary.decode(ours), kMixed);
}

TEST_F(StockTextTest, TokenizersLibraryReadsTheByteVocabularyWithTheSameIds) {
  if (auto why = tokenizers_missing()) GTEST_SKIP() << *why;
  write_file(dir / "corpus.txt", kMixed);
  auto source = open({{"files", "corpus.txt"}, {"context", static_cast<int64_t>(kMixed.size()) - 1}, {"level", "byte"},
                      {"vocabulary", "bytes.json"}});
  ASSERT_EQ(source.cardinality(), 1);
  const Window w = window(source, 0);
  std::vector<int32_t> ours = w.tokens;
  ours.push_back(w.labels.back());
  EXPECT_EQ(ours, std::vector<int32_t>(reinterpret_cast<const unsigned char*>(kMixed.data()),
                                       reinterpret_cast<const unsigned char*>(kMixed.data()) + kMixed.size()));
  const json read = read_with_tokenizers(dir, dir / "bytes.json", {dir / "corpus.txt"});
  EXPECT_TRUE(read["same_json"]) << "the library's serialization differs from the file";
  EXPECT_EQ(read["vocab_size"], 256);
  EXPECT_EQ(read["texts"][0]["ids"].get<std::vector<int32_t>>(), ours);
  EXPECT_EQ(read["texts"][0]["decoded"].get<std::string>(), kMixed);
  // Bytes that are not UTF-8 decode as the library's ByteLevel decoder does: one U+FFFD per maximal invalid part.
  const auto bytes = ramjet::Vocabulary::read(dir / "bytes.json");
  EXPECT_EQ(bytes.decode(std::vector<int32_t>{0xE2, 0x82, 'A', 0xC3}), "\xEF\xBF\xBD" "A\xEF\xBF\xBD");
}
