// Files that appear whole or not at all (sdk/include/ramjet/sdk/atomic_file.hpp).
#include <ramjet/sdk/atomic_file.hpp>

#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

class SdkAtomicFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "ramjet-sdk-atomic-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::permissions(dir_, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(dir_, ec);
  }

  static std::string read(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    return bytes.str();
  }
  static void write_plain(const fs::path& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  // Every entry of the test directory, by name.
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  fs::path dir_;
};

std::string patterned(size_t size) {
  std::string bytes(size, '\0');
  for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<char>((i * 131 + i / 7) & 0xFF);
  return bytes;
}

}  // namespace

TEST_F(SdkAtomicFile, WritesTheWholeContent) {
  const std::string bytes = patterned(3 << 20);  // several write() calls' worth, with NUL bytes in it
  ramjet::write_file_atomically(dir_ / "model.bin", bytes);
  EXPECT_EQ(read(dir_ / "model.bin"), bytes);
  ramjet::write_file_atomically(dir_ / "empty", "");
  EXPECT_TRUE(fs::exists(dir_ / "empty"));
  EXPECT_EQ(fs::file_size(dir_ / "empty"), 0u);
}

TEST_F(SdkAtomicFile, ReplacesAnExistingFile) {
  write_plain(dir_ / "report.json", std::string(5000, 'o'));  // longer than the new content: no stale tail
  ramjet::write_file_atomically(dir_ / "report.json", "{\"new\": true}");
  EXPECT_EQ(read(dir_ / "report.json"), "{\"new\": true}");
}

TEST_F(SdkAtomicFile, LeavesNoTemporaryFileBehind) {
  ramjet::write_file_atomically(dir_ / "a.txt", "a");
  ramjet::write_file_atomically(dir_ / "a.txt", "b");
  EXPECT_EQ(entries(), std::vector<std::string>{"a.txt"});
}

TEST_F(SdkAtomicFile, TheTargetKeepsItsOldContentUntilCommit) {
  write_plain(dir_ / "state", "old");
  {
    ramjet::AtomicFile file(dir_ / "state");
    file.write("new, half written");
    EXPECT_EQ(read(dir_ / "state"), "old");
    const std::vector<std::string> during = entries();
    ASSERT_EQ(during.size(), 2u);
    EXPECT_EQ(during[0].rfind(".state.tmp", 0), 0u) << during[0];  // the temporary sits beside the target
    file.write(", now whole");
    file.commit();
  }
  EXPECT_EQ(read(dir_ / "state"), "new, half written, now whole");
  EXPECT_EQ(entries(), std::vector<std::string>{"state"});
}

TEST_F(SdkAtomicFile, AbandonedWithoutCommitTheTargetIsUntouchedAndTheTemporaryGone) {
  write_plain(dir_ / "state", "old");
  {
    ramjet::AtomicFile file(dir_ / "state");
    file.write("never committed");
  }
  EXPECT_EQ(read(dir_ / "state"), "old");
  EXPECT_EQ(entries(), std::vector<std::string>{"state"});
}

TEST_F(SdkAtomicFile, AnUnwritableDirectoryThrowsAnIoErrorNamingThePath) {
  write_plain(dir_ / "model.tflite", "old");
  fs::permissions(dir_, fs::perms::owner_read | fs::perms::owner_exec);
  if (::access(dir_.c_str(), W_OK) == 0)
    GTEST_SKIP() << "this process may write into a read-only directory (running as root?); "
                    "NotADirectoryThrowsAnIoError covers the failure without permissions";
  const fs::path target = dir_ / "model.tflite";
  try {
    ramjet::write_file_atomically(target, "new");
    ADD_FAILURE() << "wrote into a read-only directory";
  } catch (const ramjet::Error& e) {
    EXPECT_EQ(e.status(), RAMJET_ERR_IO);
    EXPECT_NE(std::string(e.what()).find(target.string() + ": cannot write"), std::string::npos) << e.what();
  }
  fs::permissions(dir_, fs::perms::owner_all);
  EXPECT_EQ(read(target), "old");
  EXPECT_EQ(entries(), std::vector<std::string>{"model.tflite"});
}

TEST_F(SdkAtomicFile, NotADirectoryThrowsAnIoErrorNamingThePathWhoeverRunsIt) {
  write_plain(dir_ / "plain", "I am a file");
  const fs::path target = dir_ / "plain" / "model.tflite";  // its "directory" is a file: ENOTDIR, even for root
  try {
    ramjet::write_file_atomically(target, "new");
    ADD_FAILURE() << "wrote under a regular file";
  } catch (const ramjet::Error& e) {
    EXPECT_EQ(e.status(), RAMJET_ERR_IO);
    const std::string what = e.what();
    EXPECT_NE(what.find(target.string()), std::string::npos) << what;
    EXPECT_NE(what.find("cannot write (create)"), std::string::npos) << what;
  }
  EXPECT_EQ(read(dir_ / "plain"), "I am a file");
  EXPECT_EQ(entries(), std::vector<std::string>{"plain"});
}

TEST_F(SdkAtomicFile, ReplacingADirectoryFailsAndLeavesNoTemporary) {
  // The rename step fails (a file cannot replace a non-empty directory): the error names the step, and the
  // temporary that was already written is removed.
  fs::create_directory(dir_ / "taken");
  write_plain(dir_ / "taken" / "inside", "x");
  try {
    ramjet::write_file_atomically(dir_ / "taken", "new");
    ADD_FAILURE() << "replaced a directory";
  } catch (const ramjet::Error& e) {
    EXPECT_EQ(e.status(), RAMJET_ERR_IO);
    EXPECT_NE(std::string(e.what()).find("cannot write (rename)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(entries(), std::vector<std::string>{"taken"});
  EXPECT_EQ(read(dir_ / "taken" / "inside"), "x");
}
