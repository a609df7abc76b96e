// A source's file patterns (glob(3): *, ? and [...]), expanded as the engine reads them.
#pragma once

#include <string>
#include <vector>

namespace ramjet::core {

// Whether `entry` holds a pattern character.
bool is_file_pattern(const std::string& entry);

// The paths `pattern` matches now, in glob(3)'s order; empty when none does. Throws InvalidInput naming `where` and
// the pattern when it cannot be expanded at all (a read error, out of memory).
std::vector<std::string> pattern_matches(const std::string& pattern, const std::string& where);

}  // namespace ramjet::core
