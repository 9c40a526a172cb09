#pragma once
// The checks of option values that the CLI (its validators, tools/cli/options.hpp) and the Python
// API (tilesim._jobs, through the bindings) share, so both refuse the same values in the same
// words. Each takes the value as text, as a command line gives it, and returns "" when it is
// allowed, else what is wrong ("'-1' is not an integer >= 0").

#include <cstdint>
#include <limits>
#include <string>

namespace tilesim {

std::string integer_option_error(const std::string& text, int64_t min,
                                 int64_t max = std::numeric_limits<int64_t>::max());
// A finite number `above` < x <= `at_most`.
std::string number_option_error(const std::string& text, double above,
                                double at_most = std::numeric_limits<double>::infinity());

}  // namespace tilesim
