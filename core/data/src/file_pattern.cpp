#include "ramjet/data/file_pattern.hpp"

#include "ramjet/plugin/failure.hpp"

#include <glob.h>

namespace ramjet::core {

bool is_file_pattern(const std::string& entry) { return entry.find_first_of("*?[") != std::string::npos; }

std::vector<std::string> pattern_matches(const std::string& pattern, const std::string& where) {
  glob_t g{};
  const int rc = ::glob(pattern.c_str(), 0, nullptr, &g);
  std::vector<std::string> out;
  if (rc == 0) out.assign(g.gl_pathv, g.gl_pathv + g.gl_pathc);
  ::globfree(&g);
  if (rc != 0 && rc != GLOB_NOMATCH) throw InvalidInput(where + ": cannot expand '" + pattern + "'");
  return out;
}

}  // namespace ramjet::core
