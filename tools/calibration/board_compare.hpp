#pragma once
// Simulated versus board, side by side, for one run: the figures a board profile has (an msprof
// op_summary's launches of one kernel, or a swimlane's per-core lanes) next to the model's for the
// run config, with the difference in percent. A figure the profile does not carry is shown
// without a board value (an op_summary has no per-core lanes; a swimlane has no pipe times).

#include <string>
#include <utility>
#include <vector>

#include "kernels/spec/kernel_spec.hpp"
#include "sim/metrics.hpp"
#include "tools/formats/msprof_op_summary.hpp"
#include "tools/formats/swimlane.hpp"

namespace tilesim {

// The board's side: NaN where the profile has no figure.
struct BoardSide {
  std::string kind;  // "msprof" or "swimlane"
  std::string source;
  double end_to_end_us;
  double cores, busy_mean_us, busy_max_us, tasks_mean, tasks_max, wait_mean_us, wait_sched_mean_us;
  double vec_us, mte2_us, mte3_us, cube_us;
  std::vector<std::string> notes;
};

// The launches of one kernel: rows whose columns have the texts of `match` (column, text; with
// no "Op Name" among them the file must hold one kernel only), the first `skip_first` dropped;
// medians of each figure. Each row's collected dtype and size must be the run's (`spec`).
BoardSide board_from_msprof(const MsprofFile& file,
                            const std::vector<std::pair<std::string, std::string>>& match,
                            int64_t skip_first, const KernelSpec& spec);
BoardSide board_from_swimlane(const SwimlaneAnalysis& a, const std::string& file);

struct CompareRow {
  std::string metric;
  std::string meaning;  // what the figure is on each side
  double simulated = 0;
  double board = 0;     // NaN: the profile has none
  double diff_pct = 0;  // (simulated - board) / board * 100; NaN when undefined
};

struct BoardComparison {
  std::string board_kind, board_source;
  std::vector<CompareRow> rows;
  std::vector<std::string> notes;
};

BoardComparison compare_with_board(const Metrics& simulated, const BoardSide& board);

// `tilesim analyze PROFILE --compare CONFIG` (tilesim.compare): the profile, an msprof op_summary
// (.csv) or a swimlane, beside the model's run of the run config.
struct CompareRequest {
  std::string profile, config;
  std::string hardware;               // empty: the config's
  std::vector<std::string> settings;  // hardware what-ifs ("key=value")
  double units_per_us = 1;            // a swimlane's ts/dur unit
  std::string graph;                  // a swimlane's dependencies (fixed-latency graph)
  std::string op_name;                // op_summary: the kernel (Op Name)
  std::vector<std::string> match;     // op_summary: COLUMN=TEXT, each must hold
  int64_t skip_first = 0;             // op_summary: warm-up launches to drop
};
struct CompareOutcome {
  BoardComparison comparison;
  std::string hardware_name;
  std::vector<std::string> warnings;  // the swimlane analysis's
};
CompareOutcome compare_profile(const CompareRequest& request);

}  // namespace tilesim
