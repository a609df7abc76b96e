#include "corpus.hpp"

#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace stock_text {
namespace {

namespace fs = std::filesystem;

bool is_pattern(const std::string& s) { return s.find_first_of("*?[") != std::string::npos; }

void add_matches(const std::string& where, const fs::path& pattern, bool literal, std::vector<fs::path>& out) {
  glob_t matches{};
  const int rc = glob(pattern.c_str(), 0, nullptr, &matches);
  std::vector<std::string> found;
  if (rc == 0) found.assign(matches.gl_pathv, matches.gl_pathv + matches.gl_pathc);
  globfree(&matches);
  if (rc == GLOB_NOMATCH || (rc == 0 && found.empty()))
    throw ramjet::Error(RAMJET_ERR_INVALID_ARGUMENT, where + ": " + (literal ? pattern.string() + ": no such file"
                                                                             : "pattern " + pattern.string() +
                                                                                   " matches no file"));
  if (rc != 0) throw ramjet::Error(RAMJET_ERR_IO, where + ": cannot expand " + pattern.string());
  std::sort(found.begin(), found.end());  // glob(3) sorts by the locale's collation; byte order is the same everywhere
  out.insert(out.end(), found.begin(), found.end());
}

}  // namespace

std::vector<fs::path> expand_files(const ramjet::Config& config) {
  const nlohmann::json& files = config.json().at("files");
  std::vector<fs::path> out;
  if (files.is_string()) {
    const std::string entry = files.get<std::string>();
    add_matches(config.where("files"), config.resolve(entry), !is_pattern(entry), out);
  } else {
    for (size_t i = 0; i < files.size(); ++i) {
      const std::string entry = files[i].get<std::string>();
      add_matches(config.where("files/" + std::to_string(i)), config.resolve(entry), !is_pattern(entry), out);
    }
  }
  return out;
}

std::string read_whole_file(const fs::path& path, uint64_t limit) {
  const std::string name = path.string();
  // O_NONBLOCK: opening a FIFO with no writer would otherwise wait forever; regular files ignore it.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw ramjet::Error(RAMJET_ERR_IO, name + ": cannot open: " + std::strerror(errno));
  const auto fail = [&](ramjet_status status, const std::string& why) {
    ::close(fd);
    return ramjet::Error(status, name + ": " + why);
  };
  struct stat st {};
  if (fstat(fd, &st) != 0) throw fail(RAMJET_ERR_IO, std::string("cannot stat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw fail(RAMJET_ERR_IO, S_ISDIR(st.st_mode) ? "a directory, not a file" : "not a regular file");
  if (static_cast<uint64_t>(st.st_size) > limit)
    throw fail(RAMJET_ERR_INVALID_ARGUMENT, std::to_string(st.st_size) + " bytes is more than the " + std::to_string(limit) +
                                             " left of the text source's bound");
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw fail(RAMJET_ERR_IO, std::string("read failed: ") + std::strerror(errno));
    if (n == 0) break;  // shrank while being read: take what is there
    done += static_cast<size_t>(n);
  }
  bytes.resize(done);
  ::close(fd);
  return bytes;
}

}  // namespace stock_text
