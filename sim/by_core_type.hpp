#pragma once
// One value per core type, indexed by CoreType, and the core types in global core order (every
// AIV core, then every AIC core).

#include <array>
#include <cstddef>

#include "model/task_graph.hpp"

namespace tilesim {

inline constexpr std::array<CoreType, 2> kCoreTypes = {CoreType::kAiv, CoreType::kAic};

template <typename T>
struct ByCoreType {
  std::array<T, kCoreTypes.size()> values{};

  T& operator[](CoreType t) { return values[static_cast<size_t>(t)]; }
  const T& operator[](CoreType t) const { return values[static_cast<size_t>(t)]; }
};

}  // namespace tilesim
