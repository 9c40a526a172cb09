#pragma once
// fmt-formatted text appended to a string, and wrapped to the terminal: the reports build their
// output with them (text_append.cpp).

#include <fmt/format.h>

#include <iterator>
#include <string>
#include <utility>

namespace tilesim {

template <typename... T>
void append(std::string& s, fmt::format_string<T...> f, T&&... args) {
  fmt::format_to(std::back_inserter(s), f, std::forward<T>(args)...);
}

// The width reports wrap their long lines to.
constexpr size_t kTerminalColumns = 120;

// A name read from an input file, safe on a terminal: control characters (a NUL, a line break that
// would forge a table row, ESC sequences) and DEL are written as \xNN.
std::string printable(const std::string& name);

// Words of `text` on lines of at most `width` columns; lines after the first start with `indent`.
std::string wrap(const std::string& text, size_t first_used, size_t indent, size_t width);

}  // namespace tilesim
