// Every shipped plugin exports exactly one dynamic symbol: the entry point (DESIGN.md, ABI rule 2).
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <sstream>

using namespace ramjet::test;

TEST(Exports, EveryShippedPluginExportsOnlyItsEntrySymbol) {
  const auto plugins = shipped_plugins();
  ASSERT_FALSE(plugins.empty());
  for (const auto& library : plugins) {
    // Defined, dynamic, global symbols only (undefined imports from libc etc. are not exports).
    auto r = run("nm -D --defined-only --extern-only " + quote(library.string()));
    ASSERT_EQ(r.exit_code, 0) << r.output;
    std::vector<std::string> exported;
    std::istringstream lines(r.output);
    std::string line;
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      std::string address, type, name;
      if (fields >> address >> type >> name) exported.push_back(name);
    }
    EXPECT_EQ(exported, std::vector<std::string>{"ramjet_plugin_entry"}) << library << " exports:\n" << r.output;
  }
}

TEST(Exports, EveryShippedPluginHasAManifestBesideIt) {
  for (const auto& library : shipped_plugins()) {
    std::string name = library.stem().string().substr(std::string("libramjet_").size());
    auto manifest = nlohmann::json::parse(read_file(library.parent_path() / (name + ".json")));
    EXPECT_EQ(manifest["library"], library.filename().string());
    EXPECT_EQ(manifest["name"], name);
  }
}
