#pragma once
// The tilesim version every result carries: the CMake project version (TILESIM_VERSION is a
// compile definition of the tools library).

#include <nlohmann/json.hpp>

namespace tilesim {

inline const char* tilesim_version() {
  return TILESIM_VERSION;
}

// A JSON result as every writer gives it: stamped with the version.
inline nlohmann::json with_version(nlohmann::json j) {
  j["tilesim_version"] = tilesim_version();
  return j;
}

}  // namespace tilesim
