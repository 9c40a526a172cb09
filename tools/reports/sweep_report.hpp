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

}  // namespace tilesim
