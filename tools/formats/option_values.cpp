#include "tools/formats/option_values.hpp"

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "model/integer_text.hpp"

namespace tilesim {

namespace {

// `text` read whole by std::stod: nullopt when it is not a number, or overflows.
std::optional<double> parse_whole_double(const std::string& text) {
  size_t used = 0;
  try {
    const double v = std::stod(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

}  // namespace

std::string integer_option_error(const std::string& text, int64_t min, int64_t max) {
  const auto v = parse_int64(text);
  if (v && *v >= min && *v <= max) return "";
  if (max == std::numeric_limits<int64_t>::max())
    return fmt::format("'{}' is not an integer >= {}", text, min);
  return fmt::format("'{}' is not an integer from {} to {}", text, min, max);
}

std::string number_option_error(const std::string& text, double above, double at_most) {
  const auto v = parse_whole_double(text);
  if (v && std::isfinite(*v) && *v > above && *v <= at_most) return "";
  if (std::isinf(at_most)) return fmt::format("'{}' is not a finite number > {}", text, above);
  return fmt::format("'{}' is not a finite number in ({}, {}]", text, above, at_most);
}

}  // namespace tilesim
