// Discovery and loading: every way a plugin can be broken gets a clear message naming the file, and never a
// crash. Listing reads manifests only; libraries load lazily and stay loaded while a component lives.
#include "ramjet/plugin/components.hpp"
#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/plugin_listing.hpp"
#include "ramjet/plugin/plugin_registry.hpp"
#include "test_support.hpp"

#include <gtest/gtest.h>

#include <elf.h>

#include <atomic>
#include <thread>

using namespace ramjet::core;
using namespace ramjet::test;

namespace {

PluginRegistry registry_of(std::vector<fs::path> dirs, std::vector<std::string> select = {},
                           std::vector<std::string> disable = {}) {
  return PluginRegistry(DiscoveryOptions{std::move(dirs), std::move(select), std::move(disable)});
}

const PluginEntry& only_entry(const PluginRegistry& r) {
  EXPECT_EQ(r.plugins().size(), 1u);
  return r.plugins().front();
}

// Loading the component must fail with RuntimeFailure; returns the message.
std::string load_failure(PluginRegistry& registry, ramjet_component_kind kind, const std::string& name) {
  try {
    registry.component(kind, name);
  } catch (const RuntimeFailure& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("wrong exception type: ") + e.what();
  }
  return "loaded without error";
}

void contains(const std::string& text, const std::string& words) {
  EXPECT_NE(text.find(words), std::string::npos) << "expected \"" << words << "\" in:\n" << text;
}

// 64-byte ELF header of a shared object for the given class and machine.
std::string elf_header(unsigned char elf_class, uint16_t machine) {
  std::string h(64, '\0');
  h[0] = 0x7f, h[1] = 'E', h[2] = 'L', h[3] = 'F';
  h[EI_CLASS] = static_cast<char>(elf_class);
  h[EI_DATA] = ELFDATA2LSB;
  h[EI_VERSION] = EV_CURRENT;
  h[16] = ET_DYN;
  h[18] = static_cast<char>(machine & 0xff);
  h[19] = static_cast<char>(machine >> 8);
  return h;
}

void add_plugin(const TempDir& dir, const std::string& name, const fs::path& library, const nlohmann::json& provides,
                int abi_min = 1, int abi_max = 1) {
  write_file(dir / (name + ".json"), plugin_manifest(name, library, provides, abi_min, abi_max).dump());
}

}  // namespace

TEST(Loader, ManifestThatIsNotJsonIsSkippedWithItsFileNamed) {
  TempDir dir;
  write_file(dir / "broken.json", "this is { not json");
  auto registry = registry_of({dir.path()});
  const auto& e = only_entry(registry);
  EXPECT_FALSE(e.usable);
  contains(e.status, "skipped: invalid manifest " + (dir / "broken.json").string());
  contains(e.status, "not valid JSON");
}

TEST(Loader, MissingAndMistypedFieldsAreSkippedWithPointers) {
  TempDir dir;
  write_file(dir / "partial.json", R"({"file_format_version": "1.0", "name": 7, "abi": {"min": 1, "max": 1}})");
  auto registry = registry_of({dir.path()});
  const auto& e = only_entry(registry);
  EXPECT_FALSE(e.usable);
  contains(e.status, (dir / "partial.json").string());
  contains(e.status, "/name: must be a string");
  contains(e.status, "/library: required field is missing");
  contains(e.status, "/provides: required field is missing");
}

TEST(Loader, AbiRangeWithNoOverlapIsSkippedAndExplainedWhenAsked) {
  TempDir dir;
  add_plugin(dir, "future", fixture_library("c_plugin"), {{"transform", {"c_scale"}}}, 4, 5);
  auto registry = registry_of({dir.path()});
  contains(only_entry(registry).status, "skipped: ABI range 4..5 does not overlap the host's 1..3");
  try {
    registry.component(RAMJET_KIND_TRANSFORM, "c_scale");
    FAIL() << "a plugin outside the ABI range must not load";
  } catch (const InvalidInput& e) {
    contains(e.what(), "plugin 'future'");
    contains(e.what(), "ABI range 4..5");
  }
}

TEST(Loader, MissingLibraryFileIsSkipped) {
  TempDir dir;
  add_plugin(dir, "ghost", dir / "libghost.so", {{"transform", {"boo"}}});
  auto registry = registry_of({dir.path()});
  contains(only_entry(registry).status, "skipped: library file not found: " + (dir / "libghost.so").string());
}

TEST(Loader, FileThatIsNotElfFailsToLoadWithReason) {
  TempDir dir;
  write_file(dir / "libtext.so", "#!/bin/sh\necho I am a script\n");
  add_plugin(dir, "text", dir / "libtext.so", {{"transform", {"t"}}});
  auto registry = registry_of({dir.path()});
  EXPECT_TRUE(only_entry(registry).usable);  // listing did not open the library
  auto message = load_failure(registry, RAMJET_KIND_TRANSFORM, "t");
  contains(message, "not an ELF file");
  contains(message, (dir / "text.json").string());
  contains(message, (dir / "libtext.so").string());
}

TEST(Loader, ElfOfAnotherClassIsRefusedBeforeDlopen) {
  TempDir dir;
  write_file(dir / "lib32.so", elf_header(ELFCLASS32, EM_386));
  add_plugin(dir, "old", dir / "lib32.so", {{"transform", {"t"}}});
  auto registry = registry_of({dir.path()});
  auto message = load_failure(registry, RAMJET_KIND_TRANSFORM, "t");
  contains(message, "ELF class mismatch at byte 4: the library is 32-bit");
}

TEST(Loader, ElfOfAnotherMachineIsRefusedBeforeDlopen) {
  TempDir dir;
  write_file(dir / "libother.so", elf_header(ELFCLASS64, EM_RISCV));
  add_plugin(dir, "other", dir / "libother.so", {{"transform", {"t"}}});
  auto registry = registry_of({dir.path()});
  auto message = load_failure(registry, RAMJET_KIND_TRANSFORM, "t");
  contains(message, "ELF machine mismatch at byte 18: the library is for RISC-V");
}

TEST(Loader, TruncatedElfIsRefusedBeforeDlopen) {
  TempDir dir;
  write_file(dir / "libcut.so", read_file(fixture_library("c_plugin")).substr(0, 200));
  add_plugin(dir, "cut", dir / "libcut.so", {{"transform", {"t"}}});
  auto registry = registry_of({dir.path()});
  auto message = load_failure(registry, RAMJET_KIND_TRANSFORM, "t");
  contains(message, "program header table at e_phoff (byte 32)");
  contains(message, "past the end of the 200-byte file");
  contains(message, (dir / "libcut.so").string());
}

TEST(Loader, LibraryWithoutTheEntrySymbolIsRefused) {
  TempDir dir;
  add_plugin(dir, "no_entry", fixture_dir("no_entry") / "libramjet_fixture_no_entry.so", {{"transform", {"t"}}});
  auto registry = registry_of({dir.path()});
  auto message = load_failure(registry, RAMJET_KIND_TRANSFORM, "t");
  contains(message, "does not export the entry symbol 'ramjet_plugin_entry'");
}

TEST(Loader, EntryPointErrorIsReportedWithItsStatusAndMessage) {
  auto registry = registry_of({fixture_dir("entry_fails")});
  auto message = load_failure(registry, RAMJET_KIND_TRANSFORM, "never");
  contains(message, "the entry point returned status 9 (device error): no CUDA device found");
  contains(message, "entry_fails.json");
}

TEST(Loader, VtableSmallerThanTheHostRequiresIsRefused) {
  auto registry = registry_of({fixture_dir("small_vtable")});
  auto message = load_failure(registry, RAMJET_KIND_TRANSFORM, "shrunk");
  contains(message, "transform 'shrunk': vtable struct_size is 16 bytes, this host requires at least 32");
}

TEST(Loader, ManifestNameMustMatchTheLibrary) {
  TempDir dir;
  add_plugin(dir, "impostor", fixture_library("c_plugin"), {{"transform", {"c_scale"}}});
  auto registry = registry_of({dir.path()});
  auto message = load_failure(registry, RAMJET_KIND_TRANSFORM, "c_scale");
  contains(message, "the library calls itself 'c_plugin', the manifest says 'impostor'");
}

TEST(Loader, ManifestMustNotPromiseWhatTheLibraryLacks) {
  TempDir dir;
  add_plugin(dir, "c_plugin", fixture_library("c_plugin"), {{"transform", {"c_scale", "c_missing"}}});
  auto registry = registry_of({dir.path()});
  auto message = load_failure(registry, RAMJET_KIND_TRANSFORM, "c_scale");
  contains(message, "the manifest lists transform 'c_missing' but the library does not provide it");
}

TEST(Loader, DuplicateComponentNamesFollowSearchPathOrderAndWarn) {
  for (bool a_first : {true, false}) {
    std::vector<fs::path> dirs{fixture_dir("twin_a"), fixture_dir("twin_b")};
    if (!a_first) std::swap(dirs[0], dirs[1]);
    auto registry = registry_of(dirs);
    const std::string winner = a_first ? "twin_a" : "twin_b";
    const std::string loser = a_first ? "twin_b" : "twin_a";
    ASSERT_EQ(registry.warnings().size(), 1u);
    contains(registry.warnings()[0], "transform 'twin' is offered by both plugin '" + winner + "'");
    contains(registry.warnings()[0], "using '" + winner + "', the first in search-path order");
    EXPECT_EQ(registry.provider(RAMJET_KIND_TRANSFORM, "twin")->name(), winner);

    Transform twin(registry.component(RAMJET_KIND_TRANSFORM, "twin"), CreateArgs{});
    Example ex;
    twin.apply(ex, 0);
    EXPECT_EQ(*static_cast<int32_t*>(ex.find("who")->data), a_first ? 1 : 2);
    // The loser is still listed, with a note saying what it lost.
    for (const auto& p : registry.plugins())
      if (p.name() == loser) contains(p.notes.at(0), "shadowed: transform 'twin'");
  }
}

TEST(Loader, SelectAndDisableFilterByPluginName) {
  std::vector<fs::path> dirs{fixture_dir("twin_a"), fixture_dir("twin_b")};
  auto selected = registry_of(dirs, {"twin_b"});
  EXPECT_EQ(selected.provider(RAMJET_KIND_TRANSFORM, "twin")->name(), "twin_b");
  contains(selected.plugins()[0].status, "skipped: not in RAMJET_PLUGINS_SELECT");
  EXPECT_TRUE(selected.warnings().empty());

  auto disabled = registry_of(dirs, {}, {"twin_a"});
  EXPECT_EQ(disabled.provider(RAMJET_KIND_TRANSFORM, "twin")->name(), "twin_b");
  contains(disabled.plugins()[0].status, "skipped: disabled by RAMJET_PLUGINS_DISABLE");
}

TEST(Loader, UnknownComponentListsWhatExists) {
  auto registry = registry_of({fixture_dir("c_plugin")});
  try {
    registry.component(RAMJET_KIND_TRANSFORM, "nope");
    FAIL();
  } catch (const InvalidInput& e) {
    contains(e.what(), "no plugin provides transform 'nope' (available: c_own, c_scale)");
  }
}

TEST(Loader, LibraryStaysLoadedWhileAComponentLivesAndUnloadsAfter) {
  const std::string library = fixture_library("c_plugin").string();
  auto mapped = [&] { return read_file("/proc/self/maps").find(library) != std::string::npos; };
  ASSERT_FALSE(mapped());
  std::optional<Transform> scale;
  {
    auto registry = registry_of({fixture_dir("c_plugin")});
    EXPECT_FALSE(mapped()) << "discovery must not load libraries";
    CreateArgs args;
    args.config = {{"factor", 3}};
    scale.emplace(registry.component(RAMJET_KIND_TRANSFORM, "c_scale"), args);
    EXPECT_TRUE(mapped());
  }  // the registry is gone; the component still holds its library
  EXPECT_TRUE(mapped());
  Example ex;
  ex.set("value", make_tensor({kDLFloat, 32, 1}, std::vector<int64_t>{}));
  *static_cast<float*>(ex.find("value")->data) = 2;
  scale->apply(ex, 0);
  EXPECT_FLOAT_EQ(*static_cast<float*>(ex.find("value")->data), 6);
  {
    // A tensor whose deleter is the plugin's own code keeps the library loaded for as long as it lives.
    auto registry = registry_of({fixture_dir("c_plugin")});
    Transform own(registry.component(RAMJET_KIND_TRANSFORM, "c_own"), CreateArgs{});
    own.apply(ex, 0);
    EXPECT_FALSE(is_host_tensor(ex.entries[0].tensor.get()));
  }
  scale.reset();
  EXPECT_TRUE(mapped()) << "the example holds a tensor with the plugin's deleter";
  EXPECT_FLOAT_EQ(*static_cast<float*>(ex.find("value")->data), 6);
  ex = Example{};
  EXPECT_FALSE(mapped()) << "the library must unload with the last thing made from it";
}

TEST(Loader, ThreadsAskingAtOnceShareOneLoadedLibrary) {
  // Ranks run as threads in the strategy tests, each asking the one registry for its component at the same moment.
  auto registry = registry_of({fixture_dir("c_plugin")});
  constexpr int kThreads = 8;
  std::vector<ComponentRef> refs(kThreads);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int i = 0; i < kThreads; ++i)
    threads.emplace_back([&, i] {
      ++ready;
      while (ready.load() < kThreads) std::this_thread::yield();
      refs[static_cast<size_t>(i)] = registry.component(RAMJET_KIND_TRANSFORM, i % 2 ? "c_scale" : "c_own");
    });
  for (auto& t : threads) t.join();
  for (const auto& ref : refs) {
    ASSERT_NE(ref.library, nullptr);
    EXPECT_EQ(ref.library.get(), refs.front().library.get()) << "the library was loaded more than once";
    EXPECT_NE(ref.component, nullptr);
  }
}

TEST(Loader, ListingWithLoadReportsEachFailure) {
  TempDir dir;
  write_file(dir / "libtext.so", "not a library");
  add_plugin(dir, "text", dir / "libtext.so", {{"transform", {"t"}}});
  auto registry = registry_of({dir.path(), fixture_dir("c_plugin")});
  auto listing = list_plugins(registry, true);
  ASSERT_EQ(listing["plugins"].size(), 2u);
  EXPECT_TRUE(listing_has_load_failures(listing));
  for (const auto& p : listing["plugins"]) {
    if (p["name"] == "c_plugin") EXPECT_TRUE(p["load"]["ok"].get<bool>());
    else contains(p["load"]["error"].get<std::string>(), "not an ELF file");
  }
}
