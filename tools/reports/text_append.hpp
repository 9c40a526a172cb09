#pragma once
// fmt-formatted text appended to a string: the reports build their output with it.

#include <fmt/format.h>

#include <iterator>
#include <string>
#include <utility>

namespace tilesim {

template <typename... T>
void append(std::string& s, fmt::format_string<T...> f, T&&... args) {
  fmt::format_to(std::back_inserter(s), f, std::forward<T>(args)...);
}

}  // namespace tilesim
