#pragma once
// `tilesim validate`: runs every expressible point of measured datasets and scores the model per
// sweep and per dataset against the dataset's own tolerances.
//
// Per sweep, over its evaluated points (not-expressible and rejected points are counted, never
// scored):
//   rank correlation  Spearman's rho of measured and modeled times; times within kTiePct of each
//                     other count as ties (spearman in tools/calibration/fit.hpp: a group holds
//                     every time within kTiePct of its fastest and they share their mean rank).
//                     When a side is all one tie group its ranks have no variance and Pearson's
//                     formula is 0/0 (Kendall's tau-b degenerates the same way), so
//                     rank_agreement decides: both sides one group: the rank vectors are
//                     identical, 1 (board and model agree every point is equal); one side one
//                     group: 0, the covariance (one side orders points the other calls equal).
//                     Fewer than 2 points: NaN. A sweep's known_miss replaces the dataset's
//                     min_rank_corr for that sweep by its own lower floor.
//   normalised MAPE   mean |m'/m'best - t/t best| / (t/t best), where t is measured, m' modeled
//                     and "best" each side's fastest point: does the model get the sweep's shape.
//   absolute MAPE     mean |m' - t| / t.
//   argmin            the modeled fastest point is measured within kTiePct of the measured best.
//   worst point       the largest normalised error.
// Per dataset, the MAPEs pool every evaluated point of its sweeps. A point the board refused
// (board_rejected) is never scored: the model rejecting it too is a match, running it a violation.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "model/hardware.hpp"
#include "tools/calibration/validation_dataset.hpp"

namespace tilesim {

inline constexpr double kTiePct = 3.0;
// A rank correlation over fewer points than this is marked: with 2 or 3 points rho takes only a
// handful of values (3 points: -1, -0.5, 0.5, 1), so it says little about the order.
inline constexpr size_t kMinRankPoints = 4;

struct PointOutcome {
  double modeled = 0;  // NaN unless evaluated
  std::string error;   // the model rejected the run (Error message)
  bool evaluated() const { return error.empty() && modeled == modeled; }
};

struct SweepScore {
  size_t evaluated = 0, not_expressible = 0, rejected = 0;
  size_t board_rejections = 0;           // board-rejected points the model rejects too
  std::vector<size_t> board_mismatches;  // board-rejected points the model ran
  double rank_corr = 0;                  // NaN when undefined
  double norm_mape_pct = 0;              // NaN with no evaluated point
  double abs_mape_pct = 0;
  bool argmin_match = false;
  size_t measured_argmin = 0, modeled_argmin = 0;  // point indices (when evaluated > 0)
  size_t worst = 0;                                // point index of the largest normalised error
  double worst_norm_err_pct = 0;                   // signed: modeled above measured is positive
  // Per point, signed (modeled above measured is positive); NaN unless evaluated.
  std::vector<double> norm_err_pct, abs_err_pct;
  // rank_corr is defined but rests on fewer than kMinRankPoints points.
  bool few_rank_points() const { return rank_corr == rank_corr && evaluated < kMinRankPoints; }
};

struct DatasetScore {
  std::string hardware;                           // the hardware's name
  std::vector<std::vector<PointOutcome>> points;  // [sweep][point]
  std::vector<SweepScore> sweeps;
  size_t evaluated = 0, not_expressible = 0, rejected = 0;
  double norm_mape_pct = 0, abs_mape_pct = 0;    // pooled; NaN with no evaluated point
  double min_rank_corr = 0;                      // over sweeps where defined; NaN if none
  size_t argmin_matches = 0, argmin_sweeps = 0;  // sweeps with an evaluated point
  std::vector<std::string> violations;           // tolerances missed, one line each
  bool known_outside = false;                    // the dataset says why it misses
  bool has_tolerances = false;                   // the dataset states some tolerance
  bool within() const { return violations.empty(); }
  // "within", "OUTSIDE", or "OUTSIDE (known)" for a miss its dataset explains; "no tolerances"
  // when the dataset states none and nothing else failed (a board-rejected point the model ran).
  const char* status() const {
    if (!within()) return known_outside ? "OUTSIDE (known)" : "OUTSIDE";
    return has_tolerances ? "within" : "no tolerances";
  }
};

struct ValidationResult {
  std::vector<ValidationDataset> datasets;
  std::vector<DatasetScore> scores;
  std::vector<Hardware> hardware;  // what each dataset ran on
  // Every dataset within its tolerances, or outside them for the reason it states.
  bool within() const;
};

// The rank correlation of one sweep's measured and modeled times (see above).
double rank_agreement(const std::vector<double>& measured, const std::vector<double>& modeled);

// Scores one sweep's outcomes.
SweepScore score_sweep(const ValidationSweep& sweep, const std::vector<PointOutcome>& outcomes);

// How far a validation is: the points to run (set before the first runs) and those done, for a
// progress line (tilesim validate on a terminal); written from the workers.
struct ValidateProgress {
  std::atomic<int64_t> total{0}, done{0};
};

// Runs every expressible point (in parallel: threads 0 = every core) on the dataset's hardware,
// or on `hardware_override` when not empty, with the what-ifs `settings` ("key=value", --set)
// over either, and scores it.
ValidationResult validate(std::vector<ValidationDataset> datasets,
                          const std::filesystem::path& hardware_override = {}, int threads = 0,
                          const std::vector<std::string>& settings = {},
                          ValidateProgress* progress = nullptr);

// The same on hardware already loaded: hws[d] runs dataset d.
ValidationResult validate_on(std::vector<ValidationDataset> datasets, std::vector<Hardware> hws,
                             int threads = 0, ValidateProgress* progress = nullptr);

// `tilesim validate FILES` (tilesim.validate()): the datasets of `files` (none: every file in the
// shipped configs/validation/), on their own hardware or on `hardware` (a --hardware argument).
ValidationResult validate_files(const std::vector<std::string>& files, const std::string& hardware,
                                int threads, const std::vector<std::string>& settings = {},
                                ValidateProgress* progress = nullptr);

}  // namespace tilesim
