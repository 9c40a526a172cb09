// A figure that is not there: a measurement the board did not take, a statistic over no points.
// NaN, so it prints as "nan", compares false, and std::isnan finds it.
#pragma once

#include <limits>

namespace tilesim {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace tilesim
