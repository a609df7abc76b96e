// Text as the report page writes it: escaped for HTML (every string that came from a file or the command line
// passes through html_escape) and numbers in a short, readable form.
#pragma once

#include <string>
#include <string_view>

namespace ramjet::core {

// & < > " ' as character references: safe in element text and in quoted attribute values.
std::string html_escape(std::string_view text);

// At most `significant` significant digits, no exponent between 1e-3 and 1e6: "0.7154", "144.6", "2.5e-05".
std::string format_number(double value, int significant = 4);
// "41.5 s", "2 min 3 s", "1 h 02 min".
std::string format_seconds(double seconds);
// 0.0421 -> "4.2 %".
std::string format_percent(double fraction);

}  // namespace ramjet::core
