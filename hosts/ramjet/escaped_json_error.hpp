// The host's last resort for an exception of the JSON library that escaped every checked reader. Every value a
// manifest holds is checked with its JSON pointer before it is read, so this means a check is missing; the user
// still gets exit 2 with the manifest's name and a plain sentence, never the library's "[json.exception...]"
// text, which names neither the file nor the place.
#pragma once

#include <nlohmann/json.hpp>

#include <ostream>
#include <string>

namespace ramjet::host {

// Prints the message for `e` met while reading `manifest` (empty when none was being read) and returns the exit
// code: 2, the input's fault.
inline int report_escaped_json_error(const nlohmann::json::exception& e, const std::string& manifest,
                                     std::ostream& err) {
  // nlohmann ids: 1xx parse, 3xx type, 4xx out of range (a missing key or index), 5xx other.
  const int kind = e.id / 100;
  const char* what = kind == 1   ? "text that is not valid JSON"
                     : kind == 3 ? "a value of the wrong type"
                     : kind == 4 ? "a missing field or an index out of range"
                                 : "a value ramjet cannot use";
  err << "ramjet: error: " << (manifest.empty() ? std::string("the input") : manifest) << ": " << what
      << " was read without being checked first, so its JSON pointer is unknown; `ramjet validate` names the place "
         "for every checked field. Please report this as a bug (JSON error "
      << e.id << ").\n";
  return 2;
}

}  // namespace ramjet::host
