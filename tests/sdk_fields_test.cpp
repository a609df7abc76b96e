// Declared configuration fields (sdk/include/ramjet/sdk/fields.hpp): every problem is found, located by its JSON
// pointer, and said in words a pipeline author can act on.
#include <ramjet/sdk/fields.hpp>
#include <ramjet/sdk/file_check.hpp>

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>

using nlohmann::json;
using ramjet::Field;
using ramjet::Fields;
using ramjet::Problems;

namespace {

Fields quantizer_fields() {
  return {Field::string("method").one_of({"minmax", "percentile", "mse"}).fallback("minmax"),
          Field::number("percentile").above(50).at_most(100).fallback(99.99),
          Field::integer("classes").at_least(1).required(),
          Field::boolean("per_channel"),
          Field::array("layers"),
          Field::any("extra")};
}

// The only problem `config` has, as "pointer: message".
std::string only_problem(const Fields& fields, const json& config) {
  const Problems problems = fields.check(config);
  if (problems.size() != 1) {
    std::string all;
    for (const auto& p : problems) all += "\n  " + p.pointer + ": " + p.message;
    ADD_FAILURE() << problems.size() << " problems for " << config.dump() << all;
    return {};
  }
  return problems[0].pointer + ": " + problems[0].message;
}

}  // namespace

TEST(SdkFields, AValidConfigurationHasNoProblems) {
  EXPECT_TRUE(quantizer_fields().check({{"classes", 10}}).empty());
  EXPECT_TRUE(quantizer_fields()
                  .check({{"method", "mse"}, {"percentile", 99.9}, {"classes", 1}, {"per_channel", true},
                          {"layers", json::array()}, {"extra", {{"anything", 1}}}})
                  .empty());
}

TEST(SdkFields, UnknownKeySuggestsTheClosestFieldAndListsThemAll) {
  EXPECT_EQ(only_problem(quantizer_fields(), {{"classes", 1}, {"methd", "mse"}}),
            "/methd: unknown field 'methd' (did you mean 'method'?); the fields are: method, percentile, classes, "
            "per_channel, layers, extra");
  // Nothing close: no guess, still the list.
  EXPECT_EQ(only_problem(quantizer_fields(), {{"classes", 1}, {"zzzzzzzzzz", 1}}),
            "/zzzzzzzzzz: unknown field 'zzzzzzzzzz'; the fields are: method, percentile, classes, per_channel, "
            "layers, extra");
  EXPECT_EQ(only_problem(Fields{}, {{"x", 1}}), "/x: unknown field 'x'; the fields are: none");
}

TEST(SdkFields, RequiredFieldMissing) {
  EXPECT_EQ(only_problem(quantizer_fields(), json::object()), "/classes: required field is missing");
}

TEST(SdkFields, TypeErrorsSayWhatWasExpectedAndWhatCame) {
  const Fields fields = quantizer_fields();
  EXPECT_EQ(only_problem(fields, {{"classes", 1}, {"method", 5}}), "/method: must be a string, got 5");
  EXPECT_EQ(only_problem(fields, {{"classes", 1.5}}), "/classes: must be an integer, got 1.5");
  EXPECT_EQ(only_problem(fields, {{"classes", "10"}}), "/classes: must be an integer, got \"10\"");
  EXPECT_EQ(only_problem(fields, {{"classes", 1}, {"percentile", "high"}}),
            "/percentile: must be a finite number, got \"high\"");
  EXPECT_EQ(only_problem(fields, {{"classes", 1}, {"percentile", std::numeric_limits<double>::infinity()}}),
            "/percentile: must be a finite number, got null");
  EXPECT_EQ(only_problem(fields, {{"classes", 1}, {"per_channel", 1}}), "/per_channel: must be true or false, got 1");
  EXPECT_EQ(only_problem(fields, {{"classes", 1}, {"layers", {{"a", 1}}}}), "/layers: must be an array, got {\"a\":1}");
  EXPECT_EQ(only_problem(Fields{Field::object("opt", Fields{})}, {{"opt", json::array({1})}}),
            "/opt: must be an object, got [1]");
  // A float that is a whole number is an integer; `any` takes anything.
  EXPECT_TRUE(fields.check({{"classes", 2.0}, {"extra", nullptr}}).empty());
}

TEST(SdkFields, EveryProblemIsReportedNotJustTheFirst) {
  const Problems problems = quantizer_fields().check({{"method", "nope"}, {"percentile", 10}, {"bogus", 1}});
  ASSERT_EQ(problems.size(), 4u);
  EXPECT_EQ(problems[0].pointer, "/bogus");  // keys in the object's (sorted) order, then missing required fields
  EXPECT_EQ(problems[1].pointer, "/method");
  EXPECT_EQ(problems[2].pointer, "/percentile");
  EXPECT_EQ(problems[3].pointer, "/classes");
}

TEST(SdkFields, OneOfListsTheChoicesAndGuesses) {
  EXPECT_EQ(only_problem(quantizer_fields(), {{"classes", 1}, {"method", "mse2"}}),
            "/method: must be one of minmax, percentile, mse, got \"mse2\" (did you mean 'mse'?)");
  EXPECT_EQ(only_problem(quantizer_fields(), {{"classes", 1}, {"method", "histogram"}}),
            "/method: must be one of minmax, percentile, mse, got \"histogram\"");
  // On an `any` field, one_of judges the string alternative only.
  const Fields mixed{Field::any("prefetch").one_of({"auto"})};
  EXPECT_TRUE(mixed.check({{"prefetch", 4}}).empty());
  EXPECT_TRUE(mixed.check({{"prefetch", "auto"}}).empty());
  EXPECT_EQ(only_problem(mixed, {{"prefetch", "autp"}}),
            "/prefetch: must be one of auto, got \"autp\" (did you mean 'auto'?)");
}

TEST(SdkFields, InclusiveBoundsAcceptTheBoundExclusiveOnesRefuseIt) {
  const Fields fields{Field::number("lo_in").at_least(1), Field::number("lo_ex").above(50),
                      Field::number("hi_in").at_most(100), Field::number("hi_ex").below(0.5)};
  EXPECT_TRUE(fields.check({{"lo_in", 1}, {"lo_ex", 50.001}, {"hi_in", 100}, {"hi_ex", 0.499}}).empty());
  EXPECT_EQ(only_problem(fields, {{"lo_in", 0.999}}), "/lo_in: must be >= 1, got 0.999");
  EXPECT_EQ(only_problem(fields, {{"lo_ex", 50}}), "/lo_ex: must be > 50, got 50");
  EXPECT_EQ(only_problem(fields, {{"hi_in", 100.5}}), "/hi_in: must be <= 100, got 100.5");
  EXPECT_EQ(only_problem(fields, {{"hi_ex", 0.5}}), "/hi_ex: must be < 0.5, got 0.5");
  // Bounds apply to integers too, and a type error is reported instead of a range error, not as well.
  const Fields counts{Field::integer("n").at_least(1).at_most(8)};
  EXPECT_EQ(only_problem(counts, {{"n", 9}}), "/n: must be <= 8, got 9");
  EXPECT_EQ(only_problem(counts, {{"n", -3}}), "/n: must be >= 1, got -3");
  EXPECT_EQ(only_problem(counts, {{"n", 0.5}}), "/n: must be an integer, got 0.5");
}

TEST(SdkFields, NestedObjectsReportFullPointers) {
  const Fields fields{Field::string("type").required(),
                      Field::object("optimizer", Fields{Field::number("beta_1").at_least(0).below(1),
                                                        Field::number("beta_2").at_least(0).below(1),
                                                        Field::object("clip", Fields{Field::number("norm").above(0)})})};
  const Problems problems = fields.check(
      {{"type", "adam"}, {"optimizer", {{"beta_1", 1.5}, {"bta_2", 0.9}, {"clip", {{"norm", 0}}}}}});
  ASSERT_EQ(problems.size(), 3u);
  EXPECT_EQ(problems[0].pointer, "/optimizer/beta_1");
  EXPECT_EQ(problems[0].message, "must be < 1, got 1.5");
  EXPECT_EQ(problems[1].pointer, "/optimizer/bta_2");
  EXPECT_EQ(problems[1].message, "unknown field 'bta_2' (did you mean 'beta_2'?); the fields are: beta_1, beta_2, clip");
  EXPECT_EQ(problems[2].pointer, "/optimizer/clip/norm");
  EXPECT_EQ(problems[2].message, "must be > 0, got 0");
  // Pointers escape '/' and '~' in keys (RFC 6901), and a check can start below the root.
  EXPECT_EQ(only_problem(Fields{}, {{"a/b~c", 1}}).substr(0, 8), "/a~1b~0c");
  Problems under;
  fields.check({{"type", 1}}, "/train/backend", under);
  ASSERT_EQ(under.size(), 1u);
  EXPECT_EQ(under[0].pointer, "/train/backend/type");
}

TEST(SdkFields, AConfigurationThatIsNoObject) {
  EXPECT_EQ(only_problem(quantizer_fields(), json::array({1, 2})), ": must be an object, got array");
}

TEST(SdkFields, AllowUnknownAcceptsExtraKeysButStillChecksDeclaredOnes) {
  Fields open{Field::integer("n").at_least(0)};
  open.allow_unknown();
  EXPECT_TRUE(open.check({{"n", 1}, {"passed_on", "to someone else"}}).empty());
  EXPECT_EQ(only_problem(open, {{"n", -1}, {"passed_on", 1}}), "/n: must be >= 0, got -1");
  EXPECT_EQ(only_problem(Fields{Field::integer("n")}, {{"passed_on", 1}}),
            "/passed_on: unknown field 'passed_on'; the fields are: n");
}

TEST(SdkFields, WithDefaultsFillsOnlyAbsentFieldsThatDeclareOne) {
  const json filled = quantizer_fields().with_defaults({{"classes", 3}, {"method", "mse"}});
  EXPECT_EQ(filled, json({{"classes", 3}, {"method", "mse"}, {"percentile", 99.99}}));
  EXPECT_EQ(quantizer_fields().with_defaults(json::array()), json::array());  // not an object: untouched
  ASSERT_TRUE(quantizer_fields().find("method")->fallback_value().has_value());
  EXPECT_FALSE(quantizer_fields().find("classes")->fallback_value().has_value());
}

TEST(SdkFields, LongValuesAreCutInMessages) {
  const std::string huge(100000, 'x');
  const std::string message = only_problem(quantizer_fields(), {{"classes", 1}, {"percentile", huge}});
  EXPECT_LT(message.size(), 200u) << message.substr(0, 300);
  EXPECT_EQ(message, "/percentile: must be a finite number, got \"" + std::string(79, 'x') + "...");
  EXPECT_EQ(ramjet::quote_value(json(std::string(10, 'y')), 5), "\"yyyy...");
  EXPECT_EQ(ramjet::quote_value(json("short")), "\"short\"");
  // Bytes that are not UTF-8 are replaced, not thrown on.
  EXPECT_NO_THROW(ramjet::quote_value(json(std::string("\xff\xfe"))));
}

TEST(SdkFields, RulesRunAfterTheTypeCheck) {
  const Fields fields{Field::integer("batch").rule([](const json& v) -> std::optional<std::string> {
    if (v.get<int64_t>() % 8 != 0) return "must be a multiple of 8, got " + v.dump();
    return std::nullopt;
  })};
  EXPECT_TRUE(fields.check({{"batch", 64}}).empty());
  EXPECT_EQ(only_problem(fields, {{"batch", 12}}), "/batch: must be a multiple of 8, got 12");
  EXPECT_EQ(only_problem(fields, {{"batch", "12"}}), "/batch: must be an integer, got \"12\"");  // rule not reached
}

TEST(SdkFields, ProblemsBecomeTheJsonOfTheCheckConfigSlot) {
  const json out = ramjet::problems_to_json({{"/a", "wrong"}, {"", "also wrong"}});
  EXPECT_EQ(out, json::parse(R"([{"pointer": "/a", "message": "wrong"}, {"pointer": "", "message": "also wrong"}])"));
  EXPECT_EQ(ramjet::problems_to_json({}), json::array());
}

TEST(SdkFields, ClosestWordOnlyGuessesLikelyTypos) {
  EXPECT_EQ(ramjet::closest_word("lerning_rate", {"learning_rate", "momentum"}), "learning_rate");
  EXPECT_EQ(ramjet::closest_word("xyz", {"learning_rate", "momentum"}), std::nullopt);
  EXPECT_EQ(ramjet::closest_word("ab", {"ba", "abc"}), "abc");  // one edit beats two
  EXPECT_EQ(ramjet::closest_word("ab", {"ax", "ay"}), "ax");    // the first of equally close candidates
}

// check_paths (ramjet/sdk/file_check.hpp), what a source's check_files uses: paths resolved against the manifest's
// folder, each entry of an array at its own pointer, a pattern that must match something.
TEST(SdkFields, CheckPathsNamesWhatIsNotThere) {
  namespace fs = std::filesystem;
  const fs::path folder = fs::temp_directory_path() / ("ramjet_check_paths_" + std::to_string(::getpid()));
  fs::create_directories(folder / "sub");
  std::ofstream(folder / "a.rec") << "x";
  const std::string config_text =
      R"({"one": "a.rec", "many": ["a.rec", "b.rec", "*.rec", "*.none"], "dir": "sub", "not_dir": "a.rec"})";
  const std::string base = folder.string();
  const ramjet_create_info info{sizeof(ramjet_create_info), RAMJET_ABI_VERSION, config_text.c_str(), base.c_str(),
                                "m.json#/src", 1, 1, 0};
  const ramjet::Config config(info);
  Problems problems;
  ramjet::check_paths(config, "one", ramjet::PathKind::kFile, false, problems);
  ramjet::check_paths(config, "absent_field", ramjet::PathKind::kFile, false, problems);
  EXPECT_TRUE(problems.empty());
  ramjet::check_paths(config, "many", ramjet::PathKind::kFile, true, problems);
  ramjet::check_paths(config, "dir", ramjet::PathKind::kFile, false, problems);
  ramjet::check_paths(config, "dir", ramjet::PathKind::kFolder, false, problems);
  ramjet::check_paths(config, "not_dir", ramjet::PathKind::kFolder, false, problems);
  ASSERT_EQ(problems.size(), 4u);
  EXPECT_EQ(problems[0].pointer, "/many/1");
  EXPECT_EQ(problems[0].message, (folder / "b.rec").string() + ": no such file");
  EXPECT_EQ(problems[1].pointer, "/many/3");
  EXPECT_NE(problems[1].message.find("matches no files"), std::string::npos);
  EXPECT_EQ(problems[2].pointer, "/dir");
  EXPECT_NE(problems[2].message.find("is a folder, not a file"), std::string::npos);
  EXPECT_EQ(problems[3].pointer, "/not_dir");
  EXPECT_NE(problems[3].message.find("is not a folder"), std::string::npos);
  fs::remove_all(folder);
}
