#pragma once
// Presenting a simulated-versus-board comparison (tools/calibration/board_compare.hpp) and the
// result of turning board profiles into measurements (tools/calibration/board_measurements.hpp).

#include <string>

#include <nlohmann/json.hpp>

#include "tools/calibration/board_compare.hpp"
#include "tools/calibration/board_measurements.hpp"

namespace tilesim {

// metric, simulated, board, diff %, meaning; "-" where the board has no figure.
std::string board_comparison_table(const BoardComparison& c);
// {"board": {"kind", "source"}, "rows": [{metric, meaning, simulated, board|null,
// diff_pct|null}], "notes"}.
nlohmann::json board_comparison_to_json(const BoardComparison& c);
// analyze --compare's JSON: the above with the run config and the hardware simulated on.
nlohmann::json board_comparison_json(const CompareOutcome& out, const std::string& config);

// Per kernel: its figures (median, launches, min .. max) and what was left out; then the rows no
// kernel matched.
std::string board_measurements_summary(const BoardMeasurements& m);

}  // namespace tilesim
