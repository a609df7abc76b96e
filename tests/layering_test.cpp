// The core's rooms and their one-way doors (docs/architecture.md): a room may include only its own headers and
// those of the rooms below it; plugins include only the SDK; the host only the core's public headers.
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

// Lowest first.
const std::vector<std::string> kRooms = {"plugin", "data", "model", "plan", "train", "deploy", "run", "report"};

struct Include {
  fs::path file;
  int line;
  std::string target;  // the path inside the quotes or brackets
};

std::vector<Include> includes_under(const fs::path& dir) {
  static const std::regex include_line(R"(^\s*#\s*include\s*[<"]([^>"]+)[>"])");
  std::vector<Include> out;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    const auto ext = entry.path().extension();
    if (ext != ".hpp" && ext != ".cpp" && ext != ".h" && ext != ".c") continue;
    std::ifstream in(entry.path());
    std::string text;
    int n = 0;
    while (std::getline(in, text)) {
      ++n;
      std::smatch m;
      if (std::regex_search(text, m, include_line)) out.push_back({entry.path(), n, m[1]});
    }
  }
  return out;
}

int room_index(const std::string& room) {
  auto it = std::find(kRooms.begin(), kRooms.end(), room);
  return it == kRooms.end() ? -1 : static_cast<int>(it - kRooms.begin());
}

// "ramjet/train/trainer.hpp" -> "train"; "" when it is no core room's header.
std::string room_of_header(const std::string& target) {
  if (target.rfind("ramjet/", 0) != 0) return "";
  const auto slash = target.find('/', 7);
  if (slash == std::string::npos) return "";
  const std::string room = target.substr(7, slash - 7);
  return room_index(room) >= 0 ? room : "";
}

}  // namespace

TEST(Layering, EveryCoreRoomIncludesOnlyItselfAndTheRoomsBelow) {
  const fs::path core = fs::path(RAMJET_TEST_SOURCE_DIR) / "core";
  std::string violations;
  int checked = 0;
  for (const auto& room : kRooms) {
    ASSERT_TRUE(fs::is_directory(core / room)) << "missing room core/" << room;
    for (const auto& inc : includes_under(core / room)) {
      const std::string target = room_of_header(inc.target);
      if (target.empty()) continue;
      ++checked;
      if (room_index(target) > room_index(room))
        violations += inc.file.string() + ":" + std::to_string(inc.line) + ": " + room + " includes " + inc.target + "\n";
    }
  }
  EXPECT_GT(checked, 50) << "the scan must see the core's includes";
  EXPECT_TRUE(violations.empty()) << violations;
}

TEST(Layering, EveryCoreSourceLivesInARoom) {
  const fs::path core = fs::path(RAMJET_TEST_SOURCE_DIR) / "core";
  for (const auto& entry : fs::directory_iterator(core)) {
    if (!entry.is_directory()) continue;
    EXPECT_GE(room_index(entry.path().filename().string()), 0) << entry.path() << " is not one of the rooms";
  }
}

// `report` sits above `run` in the list but reads reports as files: it needs the plugin room (errors, the strict
// JSON reader, atomic files) and nothing between, so a change in training never breaks reading old reports.
TEST(Layering, TheReportRoomUsesOnlyThePluginRoom) {
  std::string violations;
  int checked = 0;
  for (const auto& inc : includes_under(fs::path(RAMJET_TEST_SOURCE_DIR) / "core" / "report")) {
    const std::string target = room_of_header(inc.target);
    if (target.empty()) continue;
    ++checked;
    if (target != "plugin" && target != "report")
      violations += inc.file.string() + ":" + std::to_string(inc.line) + ": report includes " + inc.target + "\n";
  }
  EXPECT_GT(checked, 5) << "the scan must see the report room's includes";
  EXPECT_TRUE(violations.empty()) << violations;
}

TEST(Layering, PluginsIncludeOnlyTheSdk) {
  std::string violations;
  for (const auto& inc : includes_under(fs::path(RAMJET_TEST_SOURCE_DIR) / "plugins"))
    if (!room_of_header(inc.target).empty() || inc.target.find("core/") != std::string::npos)
      violations += inc.file.string() + ":" + std::to_string(inc.line) + ": " + inc.target + "\n";
  EXPECT_TRUE(violations.empty()) << violations;
}

TEST(Layering, TheCheckCanFail) {
  // A known upward include is recognised as one.
  EXPECT_GT(room_index(room_of_header("ramjet/run/run.hpp")), room_index("plugin"));
  EXPECT_EQ(room_of_header("ramjet/sdk.hpp"), "");
  EXPECT_EQ(room_of_header("ramjet/abi.h"), "");
}
