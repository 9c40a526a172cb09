#include "tools/formats/option_values.hpp"

#include <fmt/format.h>

#include <cmath>
#include <optional>

namespace tilesim {

namespace {

// `text` read whole by `convert` (std::stoll, std::stod): nullopt when it is not, or overflows.
template <class T>
std::optional<T> parse_whole(const std::string& text, T (*convert)(const std::string&, size_t*)) {
  size_t used = 0;
  try {
    const T v = convert(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

int64_t to_int64(const std::string& s, size_t* used) {
  return std::stoll(s, used);
}
double to_double(const std::string& s, size_t* used) {
  return std::stod(s, used);
}

}  // namespace

std::string integer_option_error(const std::string& text, int64_t min, int64_t max) {
  const auto v = parse_whole<int64_t>(text, to_int64);
  if (v && *v >= min && *v <= max) return "";
  if (max == std::numeric_limits<int64_t>::max())
    return fmt::format("'{}' is not an integer >= {}", text, min);
  return fmt::format("'{}' is not an integer from {} to {}", text, min, max);
}

std::string number_option_error(const std::string& text, double above, double at_most) {
  const auto v = parse_whole<double>(text, to_double);
  if (v && std::isfinite(*v) && *v > above && *v <= at_most) return "";
  if (std::isinf(at_most)) return fmt::format("'{}' is not a finite number > {}", text, above);
  return fmt::format("'{}' is not a finite number in ({}, {}]", text, above, at_most);
}

}  // namespace tilesim
