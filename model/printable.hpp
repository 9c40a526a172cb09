#pragma once
// A text read from an input (a name, a field, a key, a message quoting one) as it may appear on a
// terminal or in a one-line message: the one escaping every printer uses.

#include <cstddef>
#include <string>
#include <string_view>

namespace tilesim {

// Control characters and DEL escaped (\n, \r, \t, else \xNN), so the text can neither forge a
// line nor send an escape sequence; `max_bytes` > 0 cuts it there ("...").
std::string printable(std::string_view text, size_t max_bytes = 0);

}  // namespace tilesim
