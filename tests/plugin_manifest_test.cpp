// Plugin manifests are read without loading anything; every problem names the file and the JSON pointer.
#include "ramjet/plugin/plugin_manifest.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

using namespace ramjet::core;
using namespace ramjet::test;

namespace {

ManifestParse parse_text(const TempDir& dir, const std::string& text) {
  write_file(dir / "p.json", text);
  return read_plugin_manifest(dir / "p.json");
}

bool has_problem(const ManifestParse& p, const std::string& pointer, const std::string& words) {
  for (const auto& problem : p.problems)
    if (problem.pointer == pointer && problem.message.find(words) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(PluginManifest, ReadsAValidManifest) {
  TempDir dir;
  auto p = parse_text(dir, plugin_manifest("x", "libx.so", {{"transform", {"a", "b"}}, {"backend", {"cpu"}}}).dump());
  ASSERT_TRUE(p.manifest) << p.describe();
  EXPECT_EQ(p.manifest->name, "x");
  EXPECT_EQ(p.manifest->library, dir / "libx.so");  // relative to the manifest
  EXPECT_EQ(p.manifest->provides.at(RAMJET_KIND_TRANSFORM), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(p.manifest->provides.at(RAMJET_KIND_BACKEND), (std::vector<std::string>{"cpu"}));
}

TEST(PluginManifest, NotJsonSaysWhereItBroke) {
  TempDir dir;
  auto p = parse_text(dir, "{\"name\": \"x\",, }");
  ASSERT_FALSE(p.manifest);
  EXPECT_NE(p.describe().find("not valid JSON at byte 14"), std::string::npos) << p.describe();
}

TEST(PluginManifest, MissingFieldsAreEachReported) {
  TempDir dir;
  auto p = parse_text(dir, R"({"name": "x"})");
  ASSERT_FALSE(p.manifest);
  EXPECT_TRUE(has_problem(p, "/file_format_version", "missing"));
  EXPECT_TRUE(has_problem(p, "/version", "missing"));
  EXPECT_TRUE(has_problem(p, "/abi", "missing"));
  EXPECT_TRUE(has_problem(p, "/library", "missing"));
  EXPECT_TRUE(has_problem(p, "/provides", "missing"));
}

TEST(PluginManifest, MistypedFieldsNameTheirPointer) {
  TempDir dir;
  auto p = parse_text(dir, R"({"file_format_version": 1, "name": "x", "version": "1", "abi": {"min": "1", "max": 0},
                               "library": ["l.so"], "provides": {"transform": "a", "gizmo": ["b"], "backend": [3]}})");
  ASSERT_FALSE(p.manifest);
  EXPECT_TRUE(has_problem(p, "/file_format_version", "must be a string"));
  EXPECT_TRUE(has_problem(p, "/abi/min", "positive integer"));
  EXPECT_TRUE(has_problem(p, "/abi/max", "positive integer"));
  EXPECT_TRUE(has_problem(p, "/library", "must be a string"));
  EXPECT_TRUE(has_problem(p, "/provides/transform", "array"));
  EXPECT_TRUE(has_problem(p, "/provides/gizmo", "unknown component kind"));
  EXPECT_TRUE(has_problem(p, "/provides/backend/0", "non-empty string"));
}

TEST(PluginManifest, RefusesAnotherMajorFormatVersion) {
  TempDir dir;
  auto doc = plugin_manifest("x", "libx.so", nlohmann::json::object());
  doc["file_format_version"] = "2.0";
  auto p = parse_text(dir, doc.dump());
  EXPECT_TRUE(has_problem(p, "/file_format_version", "unsupported version '2.0'"));
  doc["file_format_version"] = "1.7";  // newer minor: still readable
  EXPECT_TRUE(parse_text(dir, doc.dump()).manifest);
}

TEST(PluginManifest, AbiMinAboveMaxIsAnError) {
  TempDir dir;
  auto p = parse_text(dir, plugin_manifest("x", "libx.so", nlohmann::json::object(), 3, 2).dump());
  EXPECT_TRUE(has_problem(p, "/abi", "min is greater than max"));
}
