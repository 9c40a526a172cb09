#pragma once
// Presenting `tilesim validate`: per dataset a table of its sweeps, the points the model could not
// run (not expressible, rejected) with their reasons, the tolerances and what missed them; then a
// summary over all datasets. CSV has one row per point, JSON everything, SVG one plot per sweep.

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/calibration/validate.hpp"
#include "tools/calibration/validate_sensitivity.hpp"
#include "tools/reports/svg_plot.hpp"

namespace tilesim {

std::string validate_table(const ValidationResult& res);
// The summary over all datasets alone (the last part of validate_table).
std::string validate_summary(const ValidationResult& res);
std::string validate_csv(const ValidationResult& res);
// Per dataset, the `top` parameters that move its absolute MAPE most (validate --sensitivity).
std::string sensitivity_table(const ValidationResult& res,
                              const std::vector<DatasetSensitivity>& sens, double step, size_t top);
// Every parameter of every dataset, largest swing first: {"step", "datasets": [...]}.
nlohmann::json sensitivity_json(const ValidationResult& res,
                                const std::vector<DatasetSensitivity>& sens, double step);
nlohmann::json validate_json(const ValidationResult& res);
// Measured and modeled time along the sweep's axis.
Plot validate_plot(const ValidationDataset& ds, const DatasetScore& score, size_t sweep);
// One SVG per sweep: (file name "<dataset stem>__<sweep name>.svg", SVG text).
std::vector<std::pair<std::string, std::string>> validate_svgs(const ValidationResult& res);

}  // namespace tilesim
