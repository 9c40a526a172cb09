#pragma once
// The tilesim version every result carries: the CMake project version (TILESIM_VERSION is a
// compile definition of the tools library).

namespace tilesim {

inline const char* tilesim_version() {
  return TILESIM_VERSION;
}

}  // namespace tilesim
