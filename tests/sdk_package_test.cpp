// The SDK's package files (sdk/CMakeLists.txt, sdk/cmake/*): an installation that was moved after installing still
// names itself, never the prefix it was configured with nor the one it was first installed to, both for
// find_package(ramjet) and for pkg-config; and ramjet_add_plugin compiles optimised unless the user chose otherwise.
//
// Only the sdk/ folder is configured and installed (through a small wrapper project), so this needs no core.
#include <gtest/gtest.h>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace {

struct Result {
  int exit_code = -1;
  std::string output;
};

Result run(const std::string& command) {
  Result r;
  FILE* pipe = ::popen((command + " 2>&1").c_str(), "r");
  if (pipe == nullptr) return r;
  std::array<char, 4096> chunk;
  size_t n;
  while ((n = std::fread(chunk.data(), 1, chunk.size(), pipe)) > 0) r.output.append(chunk.data(), n);
  const int status = ::pclose(pipe);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

std::string quote(const fs::path& p) { return "'" + p.string() + "'"; }

void write(const fs::path& path, const std::string& text) {
  fs::create_directories(path.parent_path());
  std::ofstream(path) << text;
}

// The value of "-- NAME=value" in CMake's output.
std::string status_value(const std::string& output, const std::string& name) {
  std::istringstream lines(output);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind("-- " + name + "=", 0) == 0) return line.substr(name.size() + 4);
  return "<" + name + " not printed>";
}

fs::path canonical(const std::string& p) { return fs::weakly_canonical(fs::path(p)); }

const std::string kCmake = RAMJET_TEST_CMAKE;
const std::string kGenerator = RAMJET_TEST_CMAKE_GENERATOR;
constexpr const char* kConfiguredPrefix = "/nonexistent/ramjet-configured-prefix";
constexpr const char* kLibdir = "lib/x86_64-linux-gnu";  // more than one level, as Debian's multiarch libdir

class SdkPackage : public ::testing::Test {
 protected:
  // Configure the SDK for kConfiguredPrefix, install it to <tmp>/first, then move that to <tmp>/moved.
  static void SetUpTestSuite() {
    std::string pattern = (fs::temp_directory_path() / "ramjet-sdk-package-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    root_ = new fs::path(pattern);
    write(*root_ / "wrap" / "CMakeLists.txt",
          "cmake_minimum_required(VERSION 3.25)\n"
          "project(ramjet VERSION 0.1.0 LANGUAGES C CXX)\n"
          "include(GNUInstallDirs)\n"
          "set(RAMJET_PLUGIN_INSTALL_DIR lib/ramjet/plugins)\n"
          "find_package(nlohmann_json 3.9 REQUIRED)\n"
          "find_package(dlpack REQUIRED)\n"
          "add_subdirectory(\"" + (fs::path(RAMJET_TEST_SOURCE_DIR) / "sdk").string() + "\" sdk)\n");
    const Result configure = run(kCmake + " -S " + quote(*root_ / "wrap") + " -B " + quote(*root_ / "build") +
                                 " -G '" + kGenerator + "' -DCMAKE_INSTALL_PREFIX=" + kConfiguredPrefix +
                                 " -DCMAKE_INSTALL_LIBDIR=" + kLibdir);
    ASSERT_EQ(configure.exit_code, 0) << configure.output;
    const Result install = run(kCmake + " --install " + quote(*root_ / "build") + " --prefix " + quote(first()));
    ASSERT_EQ(install.exit_code, 0) << install.output;
    fs::rename(first(), moved());
  }
  static void TearDownTestSuite() {
    if (root_ == nullptr) return;
    std::error_code ec;
    fs::remove_all(*root_, ec);
    delete root_;
    root_ = nullptr;
  }
  void SetUp() override {
    if (root_ == nullptr || !fs::exists(moved())) GTEST_SKIP() << "the SDK could not be installed (see the first test)";
  }

  static fs::path first() { return *root_ / "first"; }
  static fs::path moved() { return *root_ / "moved"; }

  // Configures a one-plugin project against the moved installation and prints what the package set.
  static Result configure_probe(const std::string& name, const std::string& arguments) {
    const fs::path dir = *root_ / name;
    write(dir / "p.cpp", "// never compiled\n");
    write(dir / "CMakeLists.txt",
          "cmake_minimum_required(VERSION 3.25)\n"
          "project(probe LANGUAGES CXX)\n"
          "find_package(ramjet CONFIG REQUIRED)\n"
          "message(STATUS \"RAMJET_PREFIX=${RAMJET_PREFIX}\")\n"
          "message(STATUS \"RAMJET_PLUGIN_DIR=${RAMJET_PLUGIN_DIR}\")\n"
          "message(STATUS \"RAMJET_ABI_VERSION=${RAMJET_ABI_VERSION}\")\n"
          "get_target_property(include ramjet::sdk INTERFACE_INCLUDE_DIRECTORIES)\n"
          "message(STATUS \"INCLUDE=${include}\")\n"
          "ramjet_add_plugin(p VERSION 1.0.0 SOURCES p.cpp PROVIDES transform=t NO_INSTALL)\n"
          "get_target_property(options ramjet_p COMPILE_OPTIONS)\n"
          "message(STATUS \"OPTIONS=${options}\")\n");
    return run(kCmake + " -S " + quote(dir) + " -B " + quote(dir / "build") + " -G '" + kGenerator +
               "' -DCMAKE_PREFIX_PATH=" + quote(moved()) + " " + arguments);
  }

  static fs::path* root_;
};
fs::path* SdkPackage::root_ = nullptr;

}  // namespace

TEST_F(SdkPackage, NoInstalledFileNamesTheConfiguredOrTheFirstPrefix) {
  int files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(moved())) {
    if (!entry.is_regular_file()) continue;
    ++files;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_EQ(text.str().find(kConfiguredPrefix), std::string::npos) << entry.path();
    EXPECT_EQ(text.str().find(first().string()), std::string::npos) << entry.path();
  }
  EXPECT_GE(files, 20);  // headers, package files, ramjet.pc
  EXPECT_TRUE(fs::exists(moved() / kLibdir / "pkgconfig" / "ramjet.pc"));
  EXPECT_TRUE(fs::exists(moved() / kLibdir / "cmake" / "ramjet" / "ramjetConfig.cmake"));
  EXPECT_TRUE(fs::exists(moved() / "include" / "ramjet" / "sdk" / "boundary.hpp"));
}

TEST_F(SdkPackage, FindPackageNamesTheMovedInstallation) {
  const Result r = configure_probe("probe_default", "");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(canonical(status_value(r.output, "RAMJET_PREFIX")), canonical(moved().string())) << r.output;
  EXPECT_EQ(canonical(status_value(r.output, "RAMJET_PLUGIN_DIR")),
            canonical((moved() / "lib" / "ramjet" / "plugins").string()));
  EXPECT_EQ(canonical(status_value(r.output, "INCLUDE")), canonical((moved() / "include").string()));
  EXPECT_EQ(status_value(r.output, "RAMJET_ABI_VERSION"), "3");
}

TEST_F(SdkPackage, PkgConfigNamesTheMovedInstallationAndCxx20) {
  if (run("pkg-config --version").exit_code != 0) GTEST_SKIP() << "pkg-config is not installed";
  const std::string env = "PKG_CONFIG_PATH=" + quote(moved() / kLibdir / "pkgconfig") + " pkg-config ";
  const Result cflags = run(env + "--cflags ramjet");
  ASSERT_EQ(cflags.exit_code, 0) << cflags.output;
  EXPECT_NE(cflags.output.find("-std=c++20"), std::string::npos) << cflags.output;
  const Result include = run(env + "--variable=includedir ramjet");
  const Result plugins = run(env + "--variable=plugindir ramjet");
  const Result map = run(env + "--variable=ramjet_datadir ramjet");
  ASSERT_EQ(include.exit_code, 0) << include.output;
  auto line = [](const std::string& s) { return s.substr(0, s.find('\n')); };
  EXPECT_EQ(canonical(line(include.output)), canonical((moved() / "include").string()));
  EXPECT_NE(cflags.output.find("-I" + line(include.output)), std::string::npos) << cflags.output;
  EXPECT_EQ(canonical(line(plugins.output)), canonical((moved() / "lib" / "ramjet" / "plugins").string()));
  EXPECT_TRUE(fs::exists(fs::path(line(map.output)) / "ramjet-plugin.map")) << map.output;
}

TEST_F(SdkPackage, PluginsAreOptimisedUnlessTheUserChoseOtherwise) {
  const Result none = configure_probe("probe_none", "");
  ASSERT_EQ(none.exit_code, 0) << none.output;
  EXPECT_EQ(status_value(none.output, "OPTIONS"), "-O2");
  const Result debug = configure_probe("probe_debug", "-DCMAKE_BUILD_TYPE=Debug");
  ASSERT_EQ(debug.exit_code, 0) << debug.output;
  EXPECT_EQ(status_value(debug.output, "OPTIONS"), "options-NOTFOUND");
  const Result flags = configure_probe("probe_flags", "-DCMAKE_CXX_FLAGS=-O1");
  ASSERT_EQ(flags.exit_code, 0) << flags.output;
  EXPECT_EQ(status_value(flags.output, "OPTIONS"), "options-NOTFOUND");
}
