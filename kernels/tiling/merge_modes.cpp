#include "kernels/tiling/merge_modes.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <utility>

#include "model/error.hpp"

namespace tilesim {

MergeMode parse_merge_mode(const std::string& text) {
  if (const auto m = enum_named(kMergeModeNames, text)) return *m;
  throw Error(fmt::format("params.merge: unknown merge '{}' (allowed: {})", text,
                          fmt::join(enum_names(kMergeModeNames), ", ")),
              ErrorKind::kParams);
}

const char* merge_mode_name(MergeMode m) {
  return enum_name(kMergeModeNames, m);
}

std::vector<std::vector<MergeStep>> merge_levels(int n, MergeMode mode) {
  std::vector<std::vector<MergeStep>> levels;
  if (mode == MergeMode::kTree) {
    for (int stride = 1; stride < n; stride *= 2) {
      std::vector<MergeStep> level;
      level.reserve(static_cast<size_t>((n - stride + 2 * stride - 1) / (2 * stride)));
      for (int a = 0; a + stride < n; a += 2 * stride) level.push_back({a, a + stride});
      levels.push_back(std::move(level));
    }
  } else {
    levels.reserve(static_cast<size_t>(std::max(0, n - 1)));
    for (int b = 1; b < n; ++b) levels.push_back({{0, b}});
  }
  return levels;
}

}  // namespace tilesim
