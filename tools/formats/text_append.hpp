#pragma once
// fmt-formatted text appended to a string, and wrapped to the terminal: the reports build their
// output with them (text_append.cpp).

#include <fmt/format.h>

#include <iterator>
#include <string>
#include <utility>

#include "model/printable.hpp"  // the names from inputs that reports print

namespace tilesim {

template <typename... T>
void append(std::string& s, fmt::format_string<T...> f, T&&... args) {
  fmt::format_to(std::back_inserter(s), f, std::forward<T>(args)...);
}

// The width reports wrap their long lines to.
constexpr size_t kTerminalColumns = 120;

// Words of `text` on lines of at most `width` columns; lines after the first start with `indent`.
std::string wrap(const std::string& text, size_t first_used, size_t indent, size_t width);

}  // namespace tilesim
