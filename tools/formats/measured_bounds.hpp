#pragma once
// Bounds on a measured figure (a time in any unit the metrics use: us, ms, cycles) wherever one
// enters tilesim: measurement files, validation datasets and the board profiles imported into
// them, so an import never writes a figure that the files it writes would refuse.

namespace tilesim {

inline constexpr double kMaxMeasured = 1e15;
// The least: below it a figure is no time in any unit, a denormal or a typo (its error would
// print as inf%).
inline constexpr double kMinMeasured = 1e-9;

}  // namespace tilesim
