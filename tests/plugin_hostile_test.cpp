// Hostile plugin libraries and manifests, met the way a user meets them: through the `ramjet` host. Copies of a real
// plugin library cut short or with one field corrupted, non-files named like the library, foreign headers. Each
// must be refused with the manifest, the library and the ELF field or byte offset named: never a signal inside
// dlopen (a library cut inside its loadable segments used to die of SIGBUS), never a hang, never a blowup. And a
// lookup that finds nothing names the skipped manifests that declared the component, with why.
#include "hostile_run.hpp"
#include "test_support.hpp"

#include "ramjet/plugin/elf_check.hpp"
#include "ramjet/plugin/failure.hpp"
#include "ramjet/plugin/plugin_listing.hpp"
#include "ramjet/plugin/plugin_registry.hpp"

#include <gtest/gtest.h>

#include <elf.h>
#include <sys/stat.h>

#include <cstddef>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>

using namespace ramjet::core;
using namespace ramjet::test;

namespace {

// The real library every damaged copy starts from, parsed so that each cut or corruption lands in the structure
// it aims at whatever the compiler laid out.
struct Library {
  std::string bytes;
  Elf64_Ehdr header{};
  std::vector<Elf64_Phdr> segments;

  uint64_t size() const { return bytes.size(); }
  uint64_t phdr_byte(size_t i) const { return header.e_phoff + i * sizeof(Elf64_Phdr); }
  uint64_t shdr_byte(size_t i) const { return header.e_shoff + i * sizeof(Elf64_Shdr); }
  // Index of the nth program header of a type (the fixture's layout is checked by LayoutIsWhatTheCasesAimAt).
  size_t segment(uint32_t type, size_t nth = 0) const {
    for (size_t i = 0; i < segments.size(); ++i)
      if (segments[i].p_type == type && nth-- == 0) return i;
    return 0;
  }
  size_t load_count() const {
    size_t n = 0;
    for (const auto& p : segments) n += p.p_type == PT_LOAD;
    return n;
  }
  const Elf64_Phdr& dynamic() const { return segments[segment(PT_DYNAMIC)]; }
  // File byte of the first dynamic entry with this tag, or 0.
  uint64_t dynamic_entry(int64_t tag) const {
    for (uint64_t at = dynamic().p_offset; at + sizeof(Elf64_Dyn) <= dynamic().p_offset + dynamic().p_filesz;
         at += sizeof(Elf64_Dyn)) {
      Elf64_Dyn d;
      std::memcpy(&d, bytes.data() + at, sizeof d);
      if (d.d_tag == tag) return at;
    }
    return 0;
  }
};

const Library& real_library() {
  static const Library library = [] {
    Library l;
    l.bytes = read_file(fixture_library("c_plugin"));
    if (l.bytes.size() < sizeof l.header) return l;
    std::memcpy(&l.header, l.bytes.data(), sizeof l.header);
    if (l.header.e_phoff + l.header.e_phnum * sizeof(Elf64_Phdr) > l.bytes.size()) return l;
    l.segments.resize(l.header.e_phnum);
    std::memcpy(l.segments.data(), l.bytes.data() + l.header.e_phoff, l.segments.size() * sizeof(Elf64_Phdr));
    return l;
  }();
  return library;
}

using Bytes = std::function<std::string(const Library&)>;
using Offset = std::function<uint64_t(const Library&)>;

// The library cut to its first `at` bytes.
Bytes cut(Offset at) {
  return [at](const Library& l) { return l.bytes.substr(0, at(l)); };
}

// The library with the value at byte `at` overwritten; the value may depend on the layout too.
template <class T>
Bytes poke(Offset at, std::function<T(const Library&)> value) {
  return [at, value](const Library& l) {
    std::string b = l.bytes;
    const T v = value(l);
    std::memcpy(b.data() + at(l), &v, sizeof v);
    return b;
  };
}
template <class T>
Bytes poke(Offset at, T value) {
  return poke<T>(at, [value](const Library&) { return value; });
}

// A fixed byte: a field of the ELF header.
Offset byte(uint64_t at) {
  return [at](const Library&) { return at; };
}

// Where a field of the nth program header of a type sits.
Offset phdr_field(uint32_t type, size_t nth, size_t field) {
  return [=](const Library& l) { return l.phdr_byte(l.segment(type, nth)) + field; };
}
Offset load_field(size_t nth, size_t field) { return phdr_field(PT_LOAD, nth, field); }
Offset last_load_field(size_t field) {
  return [=](const Library& l) { return l.phdr_byte(l.segment(PT_LOAD, l.load_count() - 1)) + field; };
}
Offset dynamic_value(int64_t tag) {
  return [=](const Library& l) { return l.dynamic_entry(tag) + offsetof(Elf64_Dyn, d_un); };
}

constexpr uint64_t kMax = std::numeric_limits<uint64_t>::max();

struct DamagedCase {
  std::string name;
  Bytes bytes;
  // What the refusal must say besides the manifest and library paths; "{size}" stands for the damaged file's size.
  std::vector<std::string> needles;
};

std::vector<DamagedCase> damaged_cases() {
  using P = Elf64_Phdr;
  using E = Elf64_Ehdr;
  return {
      // Cut short, from nothing to one byte short of the whole.
      {"EmptyFile", cut(byte(0)), {"not an ELF file (only 0 bytes)"}},
      {"ThreeBytes", cut(byte(3)), {"not an ELF file (only 3 bytes)"}},
      {"CutInsideIdent", cut(byte(10)), {"truncated ELF header", "has 10 bytes"}},
      {"CutInsideHeader", cut(byte(40)), {"truncated ELF header", "has 40 bytes"}},
      {"CutOneByteShortOfHeader", cut(byte(63)), {"truncated ELF header", "has 63 bytes"}},
      {"CutRightAfterHeader", cut(byte(64)),
       {"program header table at e_phoff (byte 32)", "past the end of the 64-byte file"}},
      {"CutInsideProgramHeaders", cut([](const Library& l) { return l.phdr_byte(2) + 7; }),
       {"program header table at e_phoff (byte 32)", "past the end of the {size}-byte file"}},
      {"CutRightAfterProgramHeaders", cut([](const Library& l) { return l.phdr_byte(l.header.e_phnum); }),
       {"(PT_LOAD, at byte ", "p_filesz", "past the end of the {size}-byte file"}},
      {"CutInsideFirstLoad",
       cut([](const Library& l) { return l.segments[l.segment(PT_LOAD)].p_filesz * 3 / 4; }),
       {"program header 0 (PT_LOAD, at byte 64): p_offset 0", "past the end of the {size}-byte file"}},
      // The case that used to end in SIGBUS: the header and tables intact, the code segment cut.
      {"CutInsideCodeSegment",
       cut([](const Library& l) {
         const auto& p = l.segments[l.segment(PT_LOAD, 1)];
         return p.p_offset + p.p_filesz / 2;
       }),
       {"(PT_LOAD, at byte ", "past the end of the {size}-byte file"}},
      {"CutOneByteShortOfLastLoad",
       cut([](const Library& l) {
         const auto& p = l.segments[l.segment(PT_LOAD, l.load_count() - 1)];
         return p.p_offset + p.p_filesz - 1;
       }),
       {"(PT_LOAD, at byte ", "past the end of the {size}-byte file"}},
      {"CutInsideDynamicSection", cut([](const Library& l) { return l.dynamic().p_offset + 40; }),
       {"(PT_LOAD, at byte ", "past the end of the {size}-byte file"}},
      {"CutAfterSegmentsBeforeSectionHeaders",
       cut([](const Library& l) {
         const auto& p = l.segments[l.segment(PT_LOAD, l.load_count() - 1)];
         return p.p_offset + p.p_filesz + 16;
       }),
       {"section header table at e_shoff (byte 40)", "past the end of the {size}-byte file"}},
      {"CutInsideSectionHeaders", cut([](const Library& l) { return l.shdr_byte(5) + 3; }),
       {"section header table at e_shoff (byte 40)", "past the end of the {size}-byte file"}},
      {"CutOneByteShortOfTheEnd", cut([](const Library& l) { return l.size() - 1; }),
       {"e_shoff (byte 40)", "past the end of the {size}-byte file"}},

      // The ELF header's tables pointing elsewhere.
      {"PhoffPastTheEnd", poke<uint64_t>(byte(offsetof(E, e_phoff)), [](const Library& l) { return l.size(); }),
       {"program header table at e_phoff (byte 32) = {size}", "past the end"}},
      {"PhoffOverflows", poke<uint64_t>(byte(offsetof(E, e_phoff)), kMax - 8),
       {"e_phoff (byte 32)", "overflows"}},
      {"PhnumHuge", poke<uint16_t>(byte(offsetof(E, e_phnum)), 0xfffe),
       {"e_phoff (byte 32)", "65534 entries", "past the end"}},
      {"PhnumZero", poke<uint16_t>(byte(offsetof(E, e_phnum)), 0), {"e_phnum (byte 56) is 0"}},
      {"PhnumExtended", poke<uint16_t>(byte(offsetof(E, e_phnum)), PN_XNUM),
       {"e_phnum (byte 56) is 65535"}},
      {"PhentsizeWrong", poke<uint16_t>(byte(offsetof(E, e_phentsize)), 32),
       {"e_phentsize (byte 54) is 32, not the 56 bytes"}},
      {"ShoffPastTheEnd", poke<uint64_t>(byte(offsetof(E, e_shoff)), [](const Library& l) { return l.size() + 100; }),
       {"section header table at e_shoff (byte 40)", "past the end of the {size}-byte file"}},
      {"ShoffOverflows", poke<uint64_t>(byte(offsetof(E, e_shoff)), kMax - 10),
       {"e_shoff (byte 40)", "overflows"}},
      {"ShentsizeWrong", poke<uint16_t>(byte(offsetof(E, e_shentsize)), 40),
       {"e_shentsize (byte 58) is 40, not the 64 bytes"}},
      {"ShnumHuge", poke<uint16_t>(byte(offsetof(E, e_shnum)), 0xfeff),
       {"e_shoff (byte 40)", "65279 entries", "past the end"}},
      {"ShstrndxPastTheSections",
       poke<uint16_t>(byte(offsetof(E, e_shstrndx)),
                      [](const Library& l) { return static_cast<uint16_t>(l.header.e_shnum + 5); }),
       {"e_shstrndx (byte 62)", "past the"}},
      {"SectionPastTheEnd",
       poke<uint64_t>([](const Library& l) { return l.shdr_byte(3) + offsetof(Elf64_Shdr, sh_offset); },
                      [](const Library& l) { return l.size(); }),
       {"section 3 (header at byte ", "sh_offset {size}", "past the end"}},

      // Segments promising bytes the file does not have.
      {"LoadFileSizeOverflows", poke<uint64_t>(load_field(1, offsetof(P, p_filesz)), kMax),
       {"(PT_LOAD, at byte ", "p_filesz 18446744073709551615 overflows"}},
      {"LoadOffsetOverflows", poke<uint64_t>(load_field(1, offsetof(P, p_offset)), kMax - 100),
       {"(PT_LOAD, at byte ", "overflows"}},
      {"LoadOffsetPastTheEnd",
       poke<uint64_t>(load_field(1, offsetof(P, p_offset)), [](const Library& l) { return l.size(); }),
       {"(PT_LOAD, at byte ", "p_offset {size}", "past the end of the {size}-byte file"}},
      {"LastLoadOneBytePastTheEnd",
       poke<uint64_t>(last_load_field(offsetof(P, p_filesz)),
                      [](const Library& l) {
                        return l.size() - l.segments[l.segment(PT_LOAD, l.load_count() - 1)].p_offset + 1;
                      }),
       {"(PT_LOAD, at byte ", "p_filesz", "past the end of the {size}-byte file"}},
      {"LoadMemoryOverflows", poke<uint64_t>(load_field(1, offsetof(P, p_memsz)), kMax),
       {"(PT_LOAD, at byte ", "p_memsz", "overflows"}},
      {"LoadFileSizeOverMemorySize",
       poke<uint64_t>(load_field(0, offsetof(P, p_memsz)), uint64_t{16}),
       {"program header 0 (PT_LOAD, at byte 64): p_filesz", "is larger than p_memsz 16"}},
      {"LoadsOutOfOrder", poke<uint64_t>(load_field(1, offsetof(P, p_vaddr)), uint64_t{0}),
       {"(PT_LOAD, at byte ", "overlaps or precedes the PT_LOAD before it"}},

      // The dynamic segment: present, inside the file and the loaded memory, and sane inside.
      {"NoDynamicSegment", poke<uint32_t>(phdr_field(PT_DYNAMIC, 0, offsetof(P, p_type)), PT_NULL),
       {"0 of the", "are PT_DYNAMIC"}},
      {"TwoDynamicSegments", poke<uint32_t>(phdr_field(PT_NOTE, 0, offsetof(P, p_type)), PT_DYNAMIC),
       {"2 of the", "are PT_DYNAMIC"}},
      {"DynamicPastTheEnd",
       poke<uint64_t>(phdr_field(PT_DYNAMIC, 0, offsetof(P, p_offset)), [](const Library& l) { return l.size(); }),
       {"(PT_DYNAMIC, at byte ", "past the end of the {size}-byte file"}},
      {"DynamicOutsideLoadedMemory", poke<uint64_t>(phdr_field(PT_DYNAMIC, 0, offsetof(P, p_vaddr)), 1ull << 40),
       {"(PT_DYNAMIC, at byte ", "lies outside every PT_LOAD segment"}},
      {"NoteOutsideLoadedMemory", poke<uint64_t>(phdr_field(PT_NOTE, 0, offsetof(P, p_vaddr)), 1ull << 40),
       {"(PT_NOTE, at byte ", "lies outside every PT_LOAD segment"}},
      {"UnwindTableOutsideLoadedMemory",
       poke<uint64_t>(phdr_field(PT_GNU_EH_FRAME, 0, offsetof(P, p_memsz)), 1ull << 40),
       {"(PT_GNU_EH_FRAME, at byte ", "lies outside every PT_LOAD segment"}},
      {"DynamicEmpty", poke<uint64_t>(phdr_field(PT_DYNAMIC, 0, offsetof(P, p_memsz)), uint64_t{0}),
       {"(PT_DYNAMIC, at byte ", "is empty"}},
      {"DynamicOffsetDisagreesWithItsLoad",
       poke<uint64_t>(phdr_field(PT_DYNAMIC, 0, offsetof(P, p_offset)), uint64_t{8}),
       {"(PT_DYNAMIC, at byte ", "disagree with the PT_LOAD that maps it"}},
      {"DynamicWithoutTerminator",
       [](const Library& l) {
         std::string b = l.bytes;
         for (uint64_t at = l.dynamic().p_offset; at < l.dynamic().p_offset + l.dynamic().p_filesz;
              at += sizeof(Elf64_Dyn)) {
           Elf64_Dyn d;
           std::memcpy(&d, b.data() + at, sizeof d);
           if (d.d_tag == DT_NULL) d.d_tag = DT_DEBUG;
           std::memcpy(b.data() + at, &d, sizeof d);
         }
         return b;
       },
       {"dynamic section (PT_DYNAMIC at byte ", "no DT_NULL entry ends it"}},
      {"StringTableOutsideLoadedMemory", poke<uint64_t>(dynamic_value(DT_STRTAB), 1ull << 40),
       {"dynamic section (PT_DYNAMIC at byte ", "DT_STRTAB 1099511627776", "points outside every PT_LOAD"}},
      {"InitArrayOutsideLoadedMemory", poke<uint64_t>(dynamic_value(DT_INIT_ARRAY), kMax - 4),
       {"DT_INIT_ARRAY", "points outside every PT_LOAD"}},
      {"NeededNamePastTheStringTable", poke<uint64_t>(dynamic_value(DT_NEEDED), 1ull << 30),
       {"names string 1073741824", "(DT_STRSZ)"}},

      // Not for this host, or not a library at all.
      {"TextFile", [](auto&) { return std::string("#!/bin/sh\necho I am a script, not a library\n"); },
       {"not an ELF file (bad magic at byte 0)"}},
      {"ThirtyTwoBitClass", poke<uint8_t>(byte(EI_CLASS), ELFCLASS32),
       {"ELF class mismatch at byte 4: the library is 32-bit"}},
      {"BigEndian", poke<uint8_t>(byte(EI_DATA), ELFDATA2MSB), {"ELF byte order at byte 5"}},
      {"ForeignMachine", poke<uint16_t>(byte(offsetof(E, e_machine)), EM_RISCV),
       {"ELF machine mismatch at byte 18: the library is for RISC-V"}},
      {"ExecutableNotLibrary", poke<uint16_t>(byte(offsetof(E, e_type)), ET_EXEC),
       {"ELF type at byte 16 is 2, not a shared object"}},
  };
}

std::string replace_size(std::string needle, uint64_t size) {
  for (auto at = needle.find("{size}"); at != std::string::npos; at = needle.find("{size}"))
    needle.replace(at, 6, std::to_string(size));
  return needle;
}

// A plugin manifest in `dir` naming `library` and declaring the transform c_scale (which the real library has).
fs::path write_hostile_manifest(const TempDir& dir, const fs::path& library) {
  const fs::path manifest = dir / "hostile.json";
  write_file(manifest, plugin_manifest("hostile", library, {{"transform", {"c_scale"}}}).dump());
  return manifest;
}

// `ramjet plugins --load` with only the hostile plugin selected: it must report the failed load and exit 1.
HostileResult plugins_load(const TempDir& dir) {
  return run_hostile({"/usr/bin/env", "RAMJET_PLUGIN_PATH=" + dir.path().string(), "RAMJET_PLUGINS_SELECT=hostile",
                      host_binary().string(), "plugins", "--load"});
}

// `ramjet validate` on a pipeline whose one transform is the hostile plugin's c_scale. The pipeline lives apart
// from the plugin directory, where it would be read as a plugin manifest.
HostileResult validate_pipeline_needing_it(const TempDir& dir) {
  TempDir elsewhere;
  const nlohmann::json pipeline = {
      {"data",
       {{"train",
         {{"source",
           {{"type", "synthetic"},
            {"count", 4},
            {"tensors",
             {{"value", {{"shape", nlohmann::json::array()}, {"dtype", "float32"}, {"low", 0}, {"high", 1}}}}}}},
          {"map", {{{"type", "c_scale"}, {"factor", 2}}}},
          {"batch", 2}}}}}};
  write_file(elsewhere / "pipeline.json", pipeline.dump());
  return run_hostile({"/usr/bin/env",
                      "RAMJET_PLUGIN_PATH=" + dir.path().string() + ":" + stock_plugin_dir().string(),
                      "RAMJET_PLUGINS_SELECT=hostile,stock_sources", host_binary().string(), "validate",
                      (elsewhere / "pipeline.json").string()});
}

}  // namespace

class DamagedLibrary : public ::testing::TestWithParam<DamagedCase> {
 protected:
  void SetUp() override {
    ASSERT_GE(real_library().load_count(), 3u) << "the fixture library's layout changed; the cases aim at it";
    library_ = dir_ / "libhostile.so";
    bytes_ = GetParam().bytes(real_library());
    write_file(library_, bytes_);
    manifest_ = write_hostile_manifest(dir_, library_);
    for (const auto& n : GetParam().needles) reason_.push_back(replace_size(n, bytes_.size()));
    needles_ = {manifest_.string(), library_.string()};
    needles_.insert(needles_.end(), reason_.begin(), reason_.end());
  }
  TempDir dir_;
  fs::path library_, manifest_;
  std::string bytes_;
  std::vector<std::string> reason_;   // the field or byte offset, and what is wrong there
  std::vector<std::string> needles_;  // the manifest and library paths, then the reason
};

TEST_P(DamagedLibrary, IsRefusedBeforeDlopenNamingTheFieldOrOffset) {
  const std::string why = check_elf_compatible(library_);
  for (const auto& n : reason_) EXPECT_NE(why.find(n), std::string::npos) << "expected \"" << n << "\" in: " << why;
  EXPECT_LT(why.size(), 400u) << why;
}

TEST_P(DamagedLibrary, PluginsLoadFailsCleanlyNamingManifestLibraryAndPlace) {
  EXPECT_TRUE(refused_cleanly(plugins_load(dir_), 1, needles_));
}

TEST_P(DamagedLibrary, ARunNeedingItsComponentFailsCleanlyNamingManifestLibraryAndPlace) {
  EXPECT_TRUE(refused_cleanly(validate_pipeline_needing_it(dir_), 1, needles_));
}

INSTANTIATE_TEST_SUITE_P(Cases, DamagedLibrary, ::testing::ValuesIn(damaged_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(HostileLibraryFixture, LayoutIsWhatTheCasesAimAt) {
  const Library& l = real_library();
  ASSERT_GE(l.load_count(), 3u);
  EXPECT_EQ(l.header.e_phoff, 64u);
  EXPECT_NE(l.header.e_shoff, 0u);
  EXPECT_EQ(l.segments[0].p_type, static_cast<uint32_t>(PT_LOAD));
  EXPECT_EQ(l.segments[0].p_offset, 0u);
  EXPECT_NE(l.segment(PT_NOTE), 0u);
  EXPECT_NE(l.segment(PT_GNU_EH_FRAME), 0u);
  for (int64_t tag : {DT_STRTAB, DT_INIT_ARRAY, DT_NEEDED}) EXPECT_NE(l.dynamic_entry(tag), 0u) << tag;
  EXPECT_EQ(check_elf_compatible(fixture_library("c_plugin")), "");
}

// No false alarms: every library this project builds, and the C and C++ runtimes, pass the check.
TEST(HostileLibraryFixture, RealLibrariesPassTheCheck) {
  std::vector<fs::path> libraries;
  for (const auto& entry : fs::directory_iterator(stock_plugin_dir()))
    if (entry.path().extension() == ".so") libraries.push_back(entry.path());
  for (const char* fixture : {"c_plugin", "entry_fails", "small_vtable", "throws", "linear_backend"})
    libraries.push_back(fixture_library(fixture));
  for (const char* system : {"/lib/x86_64-linux-gnu/libc.so.6", "/lib/x86_64-linux-gnu/libstdc++.so.6",
                             "/lib/x86_64-linux-gnu/libm.so.6", "/lib/x86_64-linux-gnu/libz.so.1"})
    if (fs::exists(system)) libraries.emplace_back(system);
  ASSERT_GE(libraries.size(), 5u);
  for (const auto& library : libraries) EXPECT_EQ(check_elf_compatible(library), "") << library;
}

// ---- library paths that cannot be a library: skipped at discovery, named when asked to load or to provide -------

namespace {

struct UnusableCase {
  std::string name;
  std::function<fs::path(const TempDir&)> make;  // makes the thing and returns the path the manifest names
  std::string reason;
};

std::vector<UnusableCase> unusable_cases() {
  return {
      {"Missing", [](const TempDir& d) { return d / "libhostile.so"; }, "library file not found"},
      {"DanglingSymlink",
       [](const TempDir& d) {
         fs::create_symlink(d / "nowhere.so", d / "libhostile.so");
         return d / "libhostile.so";
       },
       "library file not found"},
      {"Directory",
       [](const TempDir& d) {
         fs::create_directory(d / "libhostile.so");
         return d / "libhostile.so";
       },
       "library file is a directory, not a regular file"},
      {"TheManifestsOwnDirectory", [](const TempDir& d) { return d.path(); },
       "library file is a directory, not a regular file"},
      {"Fifo",
       [](const TempDir& d) {
         EXPECT_EQ(mkfifo((d / "libhostile.so").c_str(), 0600), 0);
         return d / "libhostile.so";
       },
       "library file is a FIFO, not a regular file"},
      {"CharacterDevice", [](const TempDir&) { return fs::path("/dev/zero"); },
       "library file is a character device, not a regular file"},
      {"SymlinkLoop",
       [](const TempDir& d) {
         fs::create_symlink(d / "b.so", d / "libhostile.so");
         fs::create_symlink(d / "libhostile.so", d / "b.so");
         return d / "libhostile.so";
       },
       "cannot stat the library file"},
  };
}

}  // namespace

class UnusableLibraryPath : public ::testing::TestWithParam<UnusableCase> {
 protected:
  void SetUp() override {
    library_ = GetParam().make(dir_);
    manifest_ = write_hostile_manifest(dir_, library_);
  }
  TempDir dir_;
  fs::path library_, manifest_;
};

TEST_P(UnusableLibraryPath, PluginsLoadReportsItAsAFailedLoad) {
  EXPECT_TRUE(refused_cleanly(plugins_load(dir_), 1,
                              {manifest_.string(), GetParam().reason, library_.string(), "load: FAILED"}));
}

TEST_P(UnusableLibraryPath, ALookupNamesTheSkippedManifestAndWhy) {
  PluginRegistry registry(DiscoveryOptions{{dir_.path()}, {}, {}});
  try {
    registry.component(RAMJET_KIND_TRANSFORM, "c_scale");
    FAIL() << "a plugin whose library is " << GetParam().name << " must not provide anything";
  } catch (const InvalidInput& e) {
    const std::string message = e.what();
    for (const std::string& n :
         {std::string("no plugin provides transform 'c_scale'"),
          "plugin 'hostile' (" + manifest_.string() + ") declares it but was skipped: " + GetParam().reason,
          library_.string()})
      EXPECT_NE(message.find(n), std::string::npos) << "expected \"" << n << "\" in:\n" << message;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, UnusableLibraryPath, ::testing::ValuesIn(unusable_cases()),
                         [](const auto& info) { return info.param.name; });

// ---- every other reason a manifest that declares the component was skipped ------------------------------------

namespace {

struct SkippedCase {
  std::string name;
  // Writes the plugin manifests into the directory and returns the discovery options to use.
  std::function<DiscoveryOptions(const TempDir&)> setup;
  std::vector<std::string> needles;  // "{dir}" stands for the directory
};

void write_manifest(const fs::path& file, const std::string& name, const nlohmann::json& provides, int abi_min = 1,
                    int abi_max = 1) {
  write_file(file, plugin_manifest(name, fixture_library("c_plugin"), provides, abi_min, abi_max).dump());
}

std::vector<SkippedCase> skipped_cases() {
  const nlohmann::json scale = {{"transform", {"c_scale"}}};
  return {
      {"Disabled",
       [=](const TempDir& d) {
         write_manifest(d / "hostile.json", "hostile", scale);
         return DiscoveryOptions{{d.path()}, {}, {"hostile"}};
       },
       {"plugin 'hostile' ({dir}/hostile.json) declares it but was skipped: disabled by RAMJET_PLUGINS_DISABLE"}},
      {"NotSelected",
       [=](const TempDir& d) {
         write_manifest(d / "hostile.json", "hostile", scale);
         return DiscoveryOptions{{d.path()}, {"someone_else"}, {}};
       },
       {"plugin 'hostile' ({dir}/hostile.json) declares it but was skipped: not in RAMJET_PLUGINS_SELECT"}},
      {"AbiOutOfRange",
       [=](const TempDir& d) {
         write_manifest(d / "hostile.json", "hostile", scale, 7, 9);
         return DiscoveryOptions{{d.path()}, {}, {}};
       },
       {"({dir}/hostile.json) declares it but was skipped: ABI range 7..9 does not overlap"}},
      {"NameTakenEarlierInThePath",
       [=](const TempDir& d) {
         fs::create_directories(d / "first");
         fs::create_directories(d / "second");
         write_manifest(d / "first" / "hostile.json", "hostile", {{"transform", {"c_own"}}});
         write_manifest(d / "second" / "hostile.json", "hostile", scale);
         return DiscoveryOptions{{d / "first", d / "second"}, {}, {}};
       },
       {"({dir}/second/hostile.json) declares it but was skipped: plugin name 'hostile' is already provided by "
        "{dir}/first/hostile.json"}},
      {"InvalidManifest",
       [](const TempDir& d) {
         write_file(d / "hostile.json", "{\"name\": \"hostile\", \"provides\": ");
         return DiscoveryOptions{{d.path()}, {}, {}};
       },
       {"{dir}/hostile.json may declare it but is not a valid plugin manifest: "}},
      {"ManyBrokenManifestsAreCappedAtThree",
       [=](const TempDir& d) {
         for (int i = 0; i < 5; ++i)
           write_file(d / ("broken" + std::to_string(i) + ".json"),
                      plugin_manifest("broken" + std::to_string(i), d / "gone.so", scale).dump());
         return DiscoveryOptions{{d.path()}, {}, {}};
       },
       {"({dir}/broken0.json) declares it but was skipped: library file not found",
        "({dir}/broken2.json) declares it", "; and 2 more (see `ramjet plugins`)"}},
      {"HugeInvalidManifestReasonIsTruncated",
       [](const TempDir& d) {
         write_file(d / "hostile.json", nlohmann::json{{"file_format_version", "1.0"}, {std::string(100000, 'x'), 1}}.dump());
         return DiscoveryOptions{{d.path()}, {}, {}};
       },
       {"{dir}/hostile.json may declare it but is not a valid plugin manifest: "}},
  };
}

}  // namespace

class SkippedManifest : public ::testing::TestWithParam<SkippedCase> {};

TEST_P(SkippedManifest, ALookupNamesItAndWhyInAShortMessage) {
  TempDir dir;
  PluginRegistry registry(GetParam().setup(dir));
  try {
    registry.component(RAMJET_KIND_TRANSFORM, "c_scale");
    FAIL() << "nothing usable provides c_scale here";
  } catch (const InvalidInput& e) {
    const std::string message = e.what();
    EXPECT_NE(message.find("no plugin provides transform 'c_scale'"), std::string::npos) << message;
    for (std::string n : GetParam().needles) {
      for (auto at = n.find("{dir}"); at != std::string::npos; at = n.find("{dir}")) n.replace(at, 5, dir.path().string());
      EXPECT_NE(message.find(n), std::string::npos) << "expected \"" << n << "\" in:\n" << message;
    }
    EXPECT_LT(message.size(), 2048u) << "echoed reasons must be truncated";
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, SkippedManifest, ::testing::ValuesIn(skipped_cases()),
                         [](const auto& info) { return info.param.name; });

TEST(SkippedManifestNote, IsEmptyWhenNoSkippedManifestDeclaresTheComponent) {
  TempDir dir;
  write_manifest(dir / "hostile.json", "hostile", {{"transform", {"c_own"}}});
  PluginRegistry registry(DiscoveryOptions{{dir.path()}, {}, {"hostile"}});
  EXPECT_EQ(registry.skipped_declarations(RAMJET_KIND_TRANSFORM, "c_scale"), "");
  EXPECT_EQ(registry.skipped_declarations(RAMJET_KIND_DATA_SOURCE, "c_own"), "") << "the kind must match too";
  EXPECT_NE(registry.skipped_declarations(RAMJET_KIND_TRANSFORM, "c_own"), "");
}

// A manifest whose plugin name and library path are 100000 characters long (the path too long for the file system):
// every message about it, the listing included, stays short and still names the manifest.
TEST(HugeManifestText, NameAndLibraryPathAreCutInEveryMessage) {
  TempDir dir;
  const fs::path manifest = dir / "hostile.json";
  write_file(manifest, plugin_manifest(std::string(100000, 'n'), "/" + std::string(100000, 'a'),
                                       {{"transform", {"c_scale"}}})
                           .dump());
  PluginRegistry registry(DiscoveryOptions{{dir.path()}, {}, {}});
  ASSERT_EQ(registry.plugins().size(), 1u);
  EXPECT_FALSE(registry.plugins()[0].usable);
  EXPECT_LT(registry.plugins()[0].status.size(), 2048u) << registry.plugins()[0].status.substr(0, 4096);
  std::ostringstream listing;
  print_plugin_listing(list_plugins(registry, true), listing);
  EXPECT_LT(listing.str().size(), 16384u) << listing.str().substr(0, 4096);
  EXPECT_NE(listing.str().find(manifest.string()), std::string::npos) << listing.str().substr(0, 4096);
  try {
    registry.component(RAMJET_KIND_TRANSFORM, std::string(100000, 't'));
    FAIL() << "nothing provides it";
  } catch (const InvalidInput& e) {
    EXPECT_LT(std::string(e.what()).size(), 4096u) << std::string(e.what()).substr(0, 4096);
  }
  try {
    registry.component(RAMJET_KIND_TRANSFORM, "c_scale");
    FAIL() << "nothing usable provides it";
  } catch (const InvalidInput& e) {
    const std::string message = e.what();
    EXPECT_LT(message.size(), 4096u) << message.substr(0, 4096);
    EXPECT_NE(message.find("(" + manifest.string() + ") declares it but was skipped"), std::string::npos) << message;
  }
}
