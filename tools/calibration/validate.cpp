#include "tools/calibration/validate.hpp"

#include "model/missing.hpp"
#include "tools/formats/run_config.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "model/error.hpp"
#include "tools/analyses/parallel_indices.hpp"
#include "tools/calibration/fit.hpp"
#include "tools/calibration/measurements.hpp"

namespace tilesim {

namespace {

double mean_of(const std::vector<double>& v) {
  double sum = 0;
  size_t n = 0;
  for (double x : v)
    if (!std::isnan(x)) {
      sum += x;
      ++n;
    }
  return n ? sum / static_cast<double>(n) : kNaN;
}

double mean_abs(const std::vector<double>& v) {
  std::vector<double> a;
  for (double x : v) a.push_back(std::abs(x));
  return mean_of(a);
}

size_t argmin(const std::vector<double>& v) {
  return static_cast<size_t>(std::min_element(v.begin(), v.end()) - v.begin());
}

std::string pct_text(double x) {
  return fmt::format("{:.1f}%", x);
}

bool one_tie_group(const std::vector<double>& v) {
  const auto r = average_ranks(v, kTiePct);
  return std::all_of(r.begin(), r.end(), [&](double x) { return x == r.front(); });
}

}  // namespace

double rank_agreement(const std::vector<double>& measured, const std::vector<double>& modeled) {
  if (measured.size() != modeled.size()) throw InternalError("rank_agreement: sizes differ");
  if (measured.size() < 2) return kNaN;
  const bool flat_measured = one_tie_group(measured), flat_modeled = one_tie_group(modeled);
  if (flat_measured || flat_modeled) return flat_measured && flat_modeled ? 1.0 : 0.0;
  return spearman(measured, modeled, kTiePct);
}

SweepScore score_sweep(const ValidationSweep& sweep, const std::vector<PointOutcome>& outcomes) {
  SweepScore s;
  const size_t n = sweep.points.size();
  s.norm_err_pct.assign(n, kNaN);
  s.abs_err_pct.assign(n, kNaN);
  std::vector<size_t> idx;  // evaluated points
  for (size_t i = 0; i < n; ++i) {
    if (!sweep.points[i].not_expressible.empty())
      ++s.not_expressible;
    else if (!sweep.points[i].board_rejected.empty())
      outcomes[i].evaluated() ? s.board_mismatches.push_back(i) : void(++s.board_rejections);
    else if (!outcomes[i].evaluated())
      ++s.rejected;
    else
      idx.push_back(i);
  }
  s.evaluated = idx.size();
  s.rank_corr = s.norm_mape_pct = s.abs_mape_pct = kNaN;
  if (idx.empty()) return s;
  std::vector<double> measured, modeled;
  for (size_t i : idx) {
    measured.push_back(sweep.points[i].measured);
    modeled.push_back(outcomes[i].modeled);
  }
  const size_t mi = argmin(measured), pi = argmin(modeled);
  s.measured_argmin = idx[mi];
  s.modeled_argmin = idx[pi];
  s.argmin_match = measured[pi] <= measured[mi] * (1 + kTiePct / 100);
  s.rank_corr = rank_agreement(measured, modeled);
  double worst = -1;
  for (size_t k = 0; k < idx.size(); ++k) {
    const double t = measured[k] / measured[mi], m = modeled[k] / modeled[pi];
    s.norm_err_pct[idx[k]] = (m - t) / t * 100;
    s.abs_err_pct[idx[k]] = (modeled[k] - measured[k]) / measured[k] * 100;
    if (std::abs(s.norm_err_pct[idx[k]]) > worst) {
      worst = std::abs(s.norm_err_pct[idx[k]]);
      s.worst = idx[k];
      s.worst_norm_err_pct = s.norm_err_pct[idx[k]];
    }
  }
  s.norm_mape_pct = mean_abs(s.norm_err_pct);
  s.abs_mape_pct = mean_abs(s.abs_err_pct);
  return s;
}

namespace {

DatasetScore score_dataset(const ValidationDataset& ds,
                           std::vector<std::vector<PointOutcome>> points) {
  DatasetScore d;
  d.points = std::move(points);
  std::vector<double> norm, abs;
  d.min_rank_corr = kNaN;
  const ValidationTolerances& tol = ds.tolerances;
  d.has_tolerances = tol.any();
  for (size_t s = 0; s < ds.sweeps.size(); ++s) {
    const ValidationSweep& sw = ds.sweeps[s];
    SweepScore sc = score_sweep(sw, d.points[s]);
    d.evaluated += sc.evaluated;
    d.not_expressible += sc.not_expressible;
    d.rejected += sc.rejected;
    norm.insert(norm.end(), sc.norm_err_pct.begin(), sc.norm_err_pct.end());
    abs.insert(abs.end(), sc.abs_err_pct.begin(), sc.abs_err_pct.end());
    if (!std::isnan(sc.rank_corr))
      d.min_rank_corr =
          std::isnan(d.min_rank_corr) ? sc.rank_corr : std::min(d.min_rank_corr, sc.rank_corr);
    if (sc.evaluated > 0) {
      ++d.argmin_sweeps;
      if (sc.argmin_match) ++d.argmin_matches;
    }
    for (size_t i : sc.board_mismatches)
      d.violations.push_back(
          fmt::format("sweep '{}': {}={}: the board rejected it ({}), the model ran it ({:.4g} {})",
                      sw.name, sw.axis, sw.points[i].label, sw.points[i].board_rejected,
                      d.points[s][i].modeled, sw.metric));
    // A known miss is held to its own floor, every other sweep to the dataset's.
    const std::optional<double> floor =
        sw.known_miss ? std::optional<double>(sw.known_miss->min_rank_corr) : tol.min_rank_corr;
    if (floor && !std::isnan(sc.rank_corr) && sc.rank_corr < *floor)
      d.violations.push_back(fmt::format("sweep '{}': rank correlation {:.2f} < {}min_rank_corr {}",
                                         sw.name, sc.rank_corr, sw.known_miss ? "known_miss." : "",
                                         *floor));
    if (tol.argmin && sc.evaluated > 0 && !sc.argmin_match)
      d.violations.push_back(fmt::format(
          "sweep '{}': argmin: modeled fastest {}={} is measured {} above the best {}={}", sw.name,
          sw.axis, sw.points[sc.modeled_argmin].label,
          pct_text(
              (sw.points[sc.modeled_argmin].measured / sw.points[sc.measured_argmin].measured - 1) *
              100),
          sw.axis, sw.points[sc.measured_argmin].label));
    d.sweeps.push_back(std::move(sc));
  }
  d.norm_mape_pct = mean_abs(norm);
  d.abs_mape_pct = mean_abs(abs);
  auto check_max = [&](const std::optional<double>& limit, double value, const char* what,
                       const char* key) {
    if (!limit) return;
    if (std::isnan(value))
      d.violations.push_back(
          fmt::format("{}: no evaluated point to hold to {} {}", what, key, *limit));
    else if (value > *limit)
      d.violations.push_back(fmt::format("{} {} > {} {}", what, pct_text(value), key, *limit));
  };
  check_max(tol.max_mape_pct, d.norm_mape_pct, "normalised MAPE", "max_mape_pct");
  check_max(tol.max_abs_mape_pct, d.abs_mape_pct, "absolute MAPE", "max_abs_mape_pct");
  double worst = kNaN;  // NaN until a point is evaluated
  for (const double e : abs)
    if (!std::isnan(e)) worst = std::isnan(worst) ? std::abs(e) : std::max(worst, std::abs(e));
  check_max(tol.max_abs_err_pct, worst, "worst point's absolute error", "max_abs_err_pct");
  return d;
}

}  // namespace

bool ValidationResult::within() const {
  for (const auto& s : scores)
    if (!s.within() && !s.known_outside) return false;
  return true;
}

ValidationResult validate(std::vector<ValidationDataset> datasets,
                          const std::filesystem::path& hardware_override, int threads,
                          const std::vector<std::string>& settings, ValidateProgress* progress) {
  std::vector<Hardware> hws;
  for (const auto& ds : datasets)
    hws.push_back(
        load_hardware(hardware_override.empty() ? ds.hardware : hardware_override, settings));
  return validate_on(std::move(datasets), std::move(hws), threads, progress);
}

ValidationResult validate_on(std::vector<ValidationDataset> datasets, std::vector<Hardware> hws,
                             int threads, ValidateProgress* progress) {
  if (hws.size() != datasets.size()) throw InternalError("validate_on: one hardware per dataset");
  ValidationResult res;
  res.datasets = std::move(datasets);
  // Every expressible point as (dataset, sweep, point), run in parallel into its own slot.
  struct Slot {
    size_t d, s, p;
  };
  std::vector<Slot> slots;
  std::vector<std::vector<std::vector<PointOutcome>>> outcomes(res.datasets.size());
  for (size_t d = 0; d < res.datasets.size(); ++d) {
    const auto& sweeps = res.datasets[d].sweeps;
    outcomes[d].resize(sweeps.size());
    for (size_t s = 0; s < sweeps.size(); ++s) {
      outcomes[d][s].assign(sweeps[s].points.size(), PointOutcome{kNaN, ""});
      for (size_t p = 0; p < sweeps[s].points.size(); ++p)
        if (sweeps[s].points[p].run) slots.push_back({d, s, p});
    }
  }
  if (progress) progress->total.store(static_cast<int64_t>(slots.size()));
  parallel_indices(slots.size(), threads, [&](size_t k) {
    const Slot& sl = slots[k];
    const ValidationSweep& sw = res.datasets[sl.d].sweeps[sl.s];
    const RunFigures f = run_figures(*sw.points[sl.p].run, hws[sl.d]);
    PointOutcome& out = outcomes[sl.d][sl.s][sl.p];
    out.error = f.error;
    out.modeled = f.error.empty() ? metric_value(f, sw.metric) : kNaN;
    if (progress) progress->done.fetch_add(1, std::memory_order_relaxed);
  });
  for (size_t d = 0; d < res.datasets.size(); ++d) {
    res.scores.push_back(score_dataset(res.datasets[d], std::move(outcomes[d])));
    res.scores.back().known_outside = !res.datasets[d].known_outside.empty();
    res.scores.back().hardware = hws[d].name;
  }
  res.hardware = std::move(hws);
  return res;
}

ValidationResult validate_files(const std::vector<std::string>& files, const std::string& hardware,
                                int threads, const std::vector<std::string>& settings,
                                ValidateProgress* progress) {
  std::vector<std::filesystem::path> paths(files.begin(), files.end());
  if (paths.empty()) paths = validation_files(default_config_dir() / "validation");
  std::vector<ValidationDataset> datasets;
  for (const auto& f : paths) datasets.push_back(load_validation_dataset(f));
  return validate(std::move(datasets),
                  hardware.empty() ? std::filesystem::path{} : resolve_hardware_arg(hardware),
                  threads, settings, progress);
}

}  // namespace tilesim
