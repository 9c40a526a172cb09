#pragma once
// Presenting a sweep: a ranked terminal table, CSV, JSON and an SVG plot. Every format lists the
// evaluated candidates fastest first, then the rejected ones in candidate order with their reason.

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/hardware.hpp"
#include "tools/analyses/sweep.hpp"
#include "tools/formats/sweep_config.hpp"
#include "tools/reports/svg_heat_map.hpp"
#include "tools/reports/svg_plot.hpp"

namespace tilesim {

// Ranked candidates (fastest first), then rejected ones (candidate order).
std::vector<size_t> report_order(const SweepResult& res);

// `top`: evaluated candidates shown (0: all); the recommendation and its axis are always shown.
// The table fits 120 columns; `wide` shows every column (CSV and JSON always have them all).
std::string sweep_table(const SweepConfig& cfg, const Hardware& hw, const SweepResult& res,
                        size_t top = 25, bool wide = false);
// One row per candidate: op, shape, dtype, hardware, one column per tile dim, the Metrics record's
// fields (tools/reports/report.hpp) and the sweep's own figures.
std::string sweep_csv(const SweepConfig& cfg, const Hardware& hw, const SweepResult& res);
nlohmann::json sweep_json(const SweepConfig& cfg, const Hardware& hw, const SweepResult& res);
Plot sweep_plot(const SweepConfig& cfg, const Hardware& hw, const SweepResult& res);
std::string sweep_svg(const SweepConfig& cfg, const Hardware& hw, const SweepResult& res);

// The two axes a heat map of the candidates shows: x a tile dim (the one with the most values)
// or a block dim, y the grid or the loop count (or a second tile dim). Throws, naming the one
// axis that varies, when fewer than two do (checked before a sweep runs).
struct HeatMapAxes {
  enum class Kind { kTileDim, kBlockDim, kLoopCount, kGrid };
  Kind x = Kind::kTileDim, y = Kind::kLoopCount;
  int x_dim = 0, y_dim = 0;
};
HeatMapAxes heat_map_axes(const std::vector<Candidate>& candidates);
// `tilesim sweep --svg-map`: the objective over those axes, each cell the fastest of the
// candidates there (its label in the cell's hover text), the recommendation outlined.
HeatMap sweep_heat_map(const SweepConfig& cfg, const Hardware& hw, const SweepResult& res);
std::string sweep_heat_map_svg(const SweepConfig& cfg, const Hardware& hw, const SweepResult& res);

}  // namespace tilesim
