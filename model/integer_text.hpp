#pragma once
// A whole text read as an integer, without exceptions (std::from_chars), accepting exactly what
// the readers accepted when they called std::stoll and checked that nothing was left over.

#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>
#include <system_error>

namespace tilesim {

// The base-10 int64 `text` spells: leading white space (" \t\n\v\f\r") and one '+' or '-' allowed,
// as std::stoll allows them; nullopt when there are no digits, anything follows them, or the value
// does not fit int64.
inline std::optional<int64_t> parse_int64(std::string_view text) {
  size_t p = text.find_first_not_of(" \t\n\v\f\r");
  if (p == std::string_view::npos) return std::nullopt;
  // std::from_chars takes no '+': step over one, but not into a second sign ("+-1").
  if (text[p] == '+' && ++p < text.size() && text[p] == '-') return std::nullopt;
  int64_t v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data() + p, end, v);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return v;
}

}  // namespace tilesim
