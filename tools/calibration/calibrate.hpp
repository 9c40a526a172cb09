#pragma once
// `tilesim calibrate`: fit hardware parameters to a measurements file
// (tools/calibration/measurements.hpp) by least squares in log space (tools/calibration/fit.hpp),
// then report per measurement measured / modeled before / modeled after / error, MAPE, worst error
// and Spearman rank correlation, per parameter before / after / bound hit / identifiability, and
// write a calibrated hardware file.
//
// Residual of measurement i: weight_i * (log(modeled_i) - log(measured_i)). Model runs are
// evaluated in parallel (every finite-difference point and every distinct run at once) and are
// deterministic, so the fit does not depend on the thread count.

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/hardware.hpp"
#include "tools/calibration/fit.hpp"
#include "tools/calibration/measurements.hpp"

namespace tilesim {

struct CalibrationOptions {
  FitOptions fit = default_fit_options();
  int threads = 0;  // 0: every core
  // Fitted values are rounded to this many significant digits before the final evaluation, so
  // the "after" column is exactly what the written file gives (0: no rounding).
  int digits = 4;
  // Lower each run once and only simulate at fit points (lowering reads no real-valued
  // parameter). The final figures are recomputed from scratch and compared either way.
  bool reuse_lowering = true;

  static FitOptions default_fit_options() {
    FitOptions f;
    f.cost_tolerance = 1e-6;  // percent-level figures: a 1e-6 relative cost change is noise
    f.max_iterations = 50;
    return f;
  }
};

struct CalibrationRow {
  std::string id, metric, source;
  double measured = 0, weight = 1;
  double before = 0, after = 0;  // modeled
  double error_before_pct() const { return 100 * (before / measured - 1); }
  double error_after_pct() const { return 100 * (after / measured - 1); }
};

// One distinct run's Metrics record on the starting and on the fitted hardware.
struct CalibrationRunMetrics {
  std::string label;
  Metrics before, after;
};

struct CalibrationResult {
  std::string measurements_label;  // the measurements file as reported and cited
  std::string description;
  Hardware before, after;
  std::vector<FreeParam> free;
  std::vector<CalibrationRow> rows;
  size_t runs = 0;  // distinct kernel runs
  std::vector<CalibrationRunMetrics> run_metrics;
  FitResult fit;
  double mape_before = 0, mape_after = 0;  // every row, held-out (weight 0) rows included
  double mape_fitted_before = 0, mape_fitted_after = 0;  // rows with a positive weight
  double spearman_before = 0, spearman_after = 0;
  size_t worst_before = 0, worst_after = 0;  // row index of the largest |error|
  std::vector<std::string> notes;            // clamped starting values, rounding
  // When the fit is degenerate or barely helps: the parameters to free instead, each with the
  // share of the misfit (the fitted rows' squared log residuals) that moving it alone could
  // remove, from a step of kFreeProbeStep at the fitted point; largest first, at most
  // kFreeSuggestions, none under kFreeMinShare.
  std::vector<std::pair<std::string, double>> to_free;
  size_t model_runs = 0;  // kernel runs simulated (cache hits excluded)
  double seconds = 0;
};

CalibrationResult calibrate(const MeasurementSet& set, const Hardware& hw,
                            const std::vector<FreeParam>& free,
                            const CalibrationOptions& options = {});

// Modeled figures of every measurement on `hw` (no fit): the "before" side alone.
std::vector<double> model_measurements(const MeasurementSet& set, const Hardware& hw,
                                       int threads = 0);

std::string calibration_report(const CalibrationResult& r);
// Why a degenerate fit is not taken, naming the parameters to fix (hold) or the measurements to
// add; "" when the fit is not degenerate. calibrate refuses such a fit unless asked to keep it.
std::string degenerate_fit_refusal(const CalibrationResult& r);

// A fit that leaves the fitted rows' MAPE above kFitWorthPct and removes less than
// kFitBarelyHelps of it: one line saying so ("" otherwise). The misses then lie in what the free
// parameters do not move (validate --sensitivity ranks what a dataset responds to) or in a
// mechanism the model lacks; a calibrated file moving little is no such case (its MAPE is low).
inline constexpr double kFitWorthPct = 5.0;
inline constexpr double kFitBarelyHelps = 0.05;
std::string fit_barely_helps(const CalibrationResult& r);
inline constexpr double kFreeProbeStep = 0.1;
inline constexpr size_t kFreeSuggestions = 3;
inline constexpr double kFreeMinShare = 0.01;
nlohmann::json calibration_to_json(const CalibrationResult& r);
// One row per measurement: id, metric, source, weight, measured, before, after, errors.
std::string calibration_csv(const CalibrationResult& r);
// The hardware file `original` (same schema as configs/hardware/*.json) with the moved
// parameters' values replaced, their "source" saying which measurements fitted them and
// "fitted": true. Validated with hardware_from_json before it is returned.
nlohmann::ordered_json calibrated_hardware_json(const nlohmann::ordered_json& original,
                                                const CalibrationResult& r);

}  // namespace tilesim
