#include "tools/calibration/calibrate.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "model/error.hpp"
#include "model/missing.hpp"
#include "tools/formats/csv_field.hpp"
#include "tools/formats/record_json.hpp"

namespace tilesim {

namespace {

// A path as cited in reports and in the written hardware file: relative to the source tree
// when it lies inside it.
std::string cite_path(const std::filesystem::path& p) {
  std::error_code ec;
  const auto abs = std::filesystem::weakly_canonical(p, ec);
  if (ec) return p.generic_string();
  const auto root = std::filesystem::weakly_canonical(default_config_dir().parent_path(), ec);
  if (ec) return p.generic_string();
  const auto rel = abs.lexically_relative(root);
  if (!rel.empty() && *rel.begin() != "..") return rel.generic_string();
  return p.generic_string();
}

std::string fmt_g(double x) {
  if (std::isnan(x)) return "-";
  if (std::isinf(x)) return "inf";
  return fmt::format("{:.5g}", x);
}

double round_digits(double x, int digits) {
  if (digits <= 0 || x == 0 || !std::isfinite(x)) return x;
  return std::stod(fmt::format("{:.{}g}", x, digits));
}

size_t worst_row(const std::vector<CalibrationRow>& rows, bool after) {
  size_t w = 0;
  for (size_t i = 1; i < rows.size(); ++i) {
    const double e = std::abs(after ? rows[i].error_after_pct() : rows[i].error_before_pct());
    const double ew = std::abs(after ? rows[w].error_after_pct() : rows[w].error_before_pct());
    if (e > ew) w = i;
  }
  return w;
}

// Evaluates hardware points, caching the figures of points seen before.
class Evaluator {
 public:
  Evaluator(const MeasurementSet& set, const Hardware& base,
            std::vector<const HardwareParam*> params, int threads, bool reuse_lowering)
      : set_(set),
        base_(base),
        params_(std::move(params)),
        threads_(threads),
        runs_list_(set.runs) {
    if (reuse_lowering) lower_runs(runs_list_, base_, threads_);
  }

  Hardware hardware_at(const Eigen::VectorXd& p) const {
    Hardware h = base_;
    for (size_t j = 0; j < params_.size(); ++j)
      set_param(h, *params_[j], p[static_cast<Eigen::Index>(j)]);
    return h;
  }

  std::vector<std::vector<RunFigures>> figures(const std::vector<Eigen::VectorXd>& pts) {
    std::vector<Hardware> todo;
    std::vector<std::vector<double>> keys;
    for (const auto& p : pts) {
      std::vector<double> key(p.data(), p.data() + p.size());
      if (cache_.count(key) || std::find(keys.begin(), keys.end(), key) != keys.end()) continue;
      keys.push_back(key);
      todo.push_back(hardware_at(p));
    }
    if (!todo.empty()) {
      auto figs = evaluate_runs(todo, runs_list_, threads_);
      runs_ += todo.size() * set_.runs.size();
      for (size_t k = 0; k < keys.size(); ++k) cache_[keys[k]] = std::move(figs[k]);
    }
    std::vector<std::vector<RunFigures>> out;
    for (const auto& p : pts)
      out.push_back(cache_.at(std::vector<double>(p.data(), p.data() + p.size())));
    return out;
  }

  std::vector<double> modeled(const std::vector<RunFigures>& figs) const {
    std::vector<double> v;
    for (const auto& m : set_.measurements) v.push_back(metric_value(figs[m.run], m.metric));
    return v;
  }

  // One residual per measurement with a positive weight (weight 0: reported, not fitted).
  Eigen::VectorXd residuals(const std::vector<RunFigures>& figs) const {
    const auto v = modeled(figs);
    std::vector<double> r;
    for (size_t i = 0; i < v.size(); ++i) {
      const Measurement& m = set_.measurements[i];
      if (m.weight == 0) continue;
      r.push_back(std::isfinite(v[i]) && v[i] > 0
                      ? m.weight * (std::log(v[i]) - std::log(m.measured))
                      : kNaN);
    }
    return Eigen::Map<const Eigen::VectorXd>(r.data(), static_cast<Eigen::Index>(r.size()));
  }

  // Throws naming the first measurement the model cannot produce a positive figure for.
  void check(const std::vector<RunFigures>& figs, const std::string& what) const {
    const auto v = modeled(figs);
    for (size_t i = 0; i < v.size(); ++i) {
      const Measurement& m = set_.measurements[i];
      const RunFigures& f = figs[m.run];
      if (!f.error.empty())
        throw Error(set_.path.string() + ": measurement '" + m.id +
                    "': the model rejects the run " + what + ": " + f.error);
      if (!(std::isfinite(v[i]) && v[i] > 0))
        throw Error(set_.path.string() + ": measurement '" + m.id + "': the model gives " +
                    json_number(v[i]) + " for " + m.metric + " " + what +
                    " (the run has no such work?); a log-space fit needs a positive figure");
    }
  }

  size_t runs() const { return runs_; }

 private:
  const MeasurementSet& set_;
  Hardware base_;
  std::vector<const HardwareParam*> params_;
  int threads_;
  std::vector<CalibrationRun> runs_list_;
  std::map<std::vector<double>, std::vector<RunFigures>> cache_;
  size_t runs_ = 0;
};

// The real-valued parameters other than `free` that could take up the misfit left at `at` (whose
// fitted rows' residuals are `r0`): each moved alone by kFreeProbeStep (down at its upper bound),
// the share of |r0|^2 the best move along its residual direction removes, (g.r0)^2 / (|g|^2
// |r0|^2), g the residuals' change per unit of log(value).
std::vector<std::pair<std::string, double>> parameters_to_free(const MeasurementSet& set,
                                                               const Hardware& at,
                                                               const std::vector<FreeParam>& free,
                                                               const Eigen::VectorXd& r0,
                                                               const CalibrationOptions& opt) {
  std::vector<const HardwareParam*> params;
  for (const HardwareParam& p : hardware_params())
    if (!p.is_integer() && get_param(at, p) > 0 &&
        std::none_of(free.begin(), free.end(), [&](const FreeParam& f) { return f.key == p.key; }))
      params.push_back(&p);
  const double cost = r0.squaredNorm();
  if (params.empty() || !(cost > 0) || !r0.allFinite()) return {};
  Evaluator ev(set, at, params, opt.threads, opt.reuse_lowering);
  Eigen::VectorXd base(static_cast<Eigen::Index>(params.size()));
  for (size_t j = 0; j < params.size(); ++j)
    base[static_cast<Eigen::Index>(j)] = get_param(at, *params[j]);
  std::vector<Eigen::VectorXd> pts;
  for (size_t j = 0; j < params.size(); ++j) {
    const double v = base[static_cast<Eigen::Index>(j)];
    pts.push_back(base);
    pts.back()[static_cast<Eigen::Index>(j)] = v * (1 + kFreeProbeStep) <= params[j]->max
                                                   ? v * (1 + kFreeProbeStep)
                                                   : v * (1 - kFreeProbeStep);
  }
  const auto figs = ev.figures(pts);
  std::vector<std::pair<std::string, double>> out;
  for (size_t j = 0; j < params.size(); ++j) {
    const auto jj = static_cast<Eigen::Index>(j);
    const double moved = pts[j][jj];
    if (moved < params[j]->min) continue;
    const Eigen::VectorXd g = (ev.residuals(figs[j]) - r0) / std::log(moved / base[jj]);
    const double gg = g.squaredNorm();
    if (!g.allFinite() || !(gg > 0)) continue;
    const double share = g.dot(r0) * g.dot(r0) / (gg * cost);
    if (share >= kFreeMinShare) out.emplace_back(params[j]->key, share);
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  if (out.size() > kFreeSuggestions) out.resize(kFreeSuggestions);
  return out;
}

// "free instead, each alone removing a share of the misfit: A (40%), B (12%)"
std::string to_free_text(const CalibrationResult& r) {
  std::vector<std::string> parts;
  for (const auto& [key, share] : r.to_free)
    parts.push_back(fmt::format("{} ({:.0f}%)", key, 100 * share));
  return fmt::format("free instead, each alone removing a share of the misfit: {}",
                     fmt::join(parts, ", "));
}

}  // namespace

std::vector<double> model_measurements(const MeasurementSet& set, const Hardware& hw, int threads) {
  Evaluator ev(set, hw, {}, threads, false);
  const auto figs = ev.figures({Eigen::VectorXd()});
  ev.check(figs[0], "on " + hw.name);
  return ev.modeled(figs[0]);
}

CalibrationResult calibrate(const MeasurementSet& set, const Hardware& hw,
                            const std::vector<FreeParam>& free, const CalibrationOptions& opt) {
  const auto t0 = std::chrono::steady_clock::now();
  CalibrationResult res;
  res.measurements_label = cite_path(set.path);
  res.description = set.description;
  res.before = hw;
  res.free = free;
  res.runs = set.runs.size();
  if (free.empty())
    throw Error(set.path.string() +
                ": no free parameters (list them under \"free\", mark them \"fitted\": true in "
                "the hardware file, or pass --free key)");

  std::vector<const HardwareParam*> hp;
  std::vector<FitParameter> fp;
  Eigen::VectorXd original(static_cast<Eigen::Index>(free.size()));
  for (size_t j = 0; j < free.size(); ++j) {
    const HardwareParam* p = find_hardware_param(free[j].key);
    if (!p) throw InternalError("unknown hardware parameter '" + free[j].key + "'");
    hp.push_back(p);
    const double v = get_param(hw, *p);
    original[static_cast<Eigen::Index>(j)] = v;
    const double start = std::clamp(v, free[j].min, free[j].max);
    if (start != v)
      res.notes.push_back(fmt::format("{} starts at {} (its value {} lies outside [{}, {}])",
                                      free[j].key, fmt_g(start), fmt_g(v), fmt_g(free[j].min),
                                      fmt_g(free[j].max)));
    fp.push_back({free[j].key, start, free[j].min, free[j].max});
  }

  Evaluator ev(set, hw, hp, opt.threads, opt.reuse_lowering);
  const auto before_figs = ev.figures({original})[0];
  ev.check(before_figs, "on " + hw.name);
  const std::vector<double> before = ev.modeled(before_figs);
  {
    Eigen::VectorXd start(static_cast<Eigen::Index>(fp.size()));
    for (size_t j = 0; j < fp.size(); ++j) start[static_cast<Eigen::Index>(j)] = fp[j].initial;
    ev.check(ev.figures({start})[0], "at the clamped starting point");
  }

  BatchResidualFn f = [&](const std::vector<Eigen::VectorXd>& pts) {
    const auto figs = ev.figures(pts);
    std::vector<Eigen::VectorXd> out;
    for (const auto& fg : figs) out.push_back(ev.residuals(fg));
    return out;
  };
  try {
    res.fit = levenberg_marquardt(fp, f, opt.fit);
  } catch (const std::invalid_argument& e) {
    throw Error(set.path.string() + ": " + e.what());
  }

  // Round what moved; what did not move keeps its exact value.
  Eigen::VectorXd after_point = res.fit.values;
  bool rounded = false;
  for (size_t j = 0; j < fp.size(); ++j) {
    const Eigen::Index jj = static_cast<Eigen::Index>(j);
    double v = after_point[jj];
    if (v != fp[j].initial)  // held parameters keep their exact starting value
      v = std::clamp(round_digits(v, opt.digits), fp[j].min, fp[j].max);
    rounded = rounded || v != after_point[jj];
    after_point[jj] = v;
    res.fit.params[j].value = v;
  }
  res.fit.values = after_point;
  if (rounded && opt.digits > 0)
    res.notes.push_back(fmt::format(
        "fitted values are rounded to {} significant digits; the 'after' column and the written "
        "file use the rounded values",
        opt.digits));
  auto after_figs = ev.figures({after_point})[0];
  ev.check(after_figs, "with the fitted parameters");
  if (opt.reuse_lowering) {
    // The fit simulated graphs lowered on the starting hardware; recompute the final figures
    // from scratch (lowering included) and say so if they differ.
    const auto fresh = evaluate_runs({ev.hardware_at(after_point)}, set.runs, opt.threads)[0];
    for (size_t k = 0; k < fresh.size(); ++k)
      for (const auto& m : calibration_metrics()) {
        const double a = metric_value(fresh[k], m.name), b = metric_value(after_figs[k], m.name);
        if (std::abs(a - b) <= 1e-9 * std::abs(a) || (std::isnan(a) && std::isnan(b))) continue;
        res.notes.push_back(fmt::format(
            "run {}: a fresh lowering with the fitted parameters gives {} {} where the reused "
            "lowering gave {}; lowering depends on a fitted parameter, rerun with "
            "--fresh-lowering",
            set.runs[k].label, m.name, fmt_g(a), fmt_g(b)));
        break;
      }
    after_figs = fresh;
    ev.check(after_figs, "with the fitted parameters");
  }
  const std::vector<double> after = ev.modeled(after_figs);
  for (size_t k = 0; k < set.runs.size(); ++k)
    res.run_metrics.push_back({set.runs[k].label, before_figs[k].metrics, after_figs[k].metrics});
  res.fit.residuals = ev.residuals(after_figs);
  res.fit.cost = 0.5 * res.fit.residuals.squaredNorm();
  res.after = ev.hardware_at(after_point);

  std::vector<double> measured;
  for (size_t i = 0; i < set.measurements.size(); ++i) {
    const Measurement& m = set.measurements[i];
    res.rows.push_back({m.id, m.metric, m.source, m.measured, m.weight, before[i], after[i]});
    measured.push_back(m.measured);
  }
  res.mape_before = mape_percent(before, measured);
  res.mape_after = mape_percent(after, measured);
  {
    std::vector<double> b, a, m;
    for (const auto& row : res.rows)
      if (row.weight > 0) {
        b.push_back(row.before);
        a.push_back(row.after);
        m.push_back(row.measured);
      }
    res.mape_fitted_before = mape_percent(b, m);
    res.mape_fitted_after = mape_percent(a, m);
  }
  res.spearman_before = spearman(measured, before);
  res.spearman_after = spearman(measured, after);
  res.worst_before = worst_row(res.rows, false);
  res.worst_after = worst_row(res.rows, true);
  res.model_runs = ev.runs();
  if (res.fit.degenerate || !fit_barely_helps(res).empty())
    res.to_free = parameters_to_free(set, res.after, free, res.fit.residuals, opt);
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

std::string calibration_report(const CalibrationResult& r) {
  std::string s;
  s += fmt::format("tilesim calibrate: {} measurements ({} distinct runs) from {} on {}\n",
                   r.rows.size(), r.runs, r.measurements_label, r.before.name);
  s += fmt::format("  fit: {} free parameters, {} iterations, {} model runs, {:.1f} s; {}{}\n",
                   r.free.size(), r.fit.iterations, r.model_runs, r.seconds,
                   r.fit.converged ? "converged: " : "NOT converged: ", r.fit.stop_reason);
  size_t w = 2;
  for (const auto& row : r.rows) w = std::max(w, row.id.size());
  s += fmt::format("\n  {:<{}} {:<17} {:>11} {:>11} {:>11} {:>10} {:>10}\n", "id", w, "metric",
                   "measured", "before", "after", "err before", "err after");
  bool held_out = false;
  for (const auto& row : r.rows) {
    s += fmt::format("  {:<{}} {:<17} {:>11.3f} {:>11.3f} {:>11.3f} {:>+9.1f}% {:>+9.1f}%{}\n",
                     row.id, w, row.metric, row.measured, row.before, row.after,
                     row.error_before_pct(), row.error_after_pct(), row.weight == 0 ? "  *" : "");
    held_out = held_out || row.weight == 0;
  }
  if (held_out) s += "  * weight 0: reported and counted in the statistics, not fitted\n";
  auto worst = [&](size_t i, bool after) {
    const auto& row = r.rows[i];
    return fmt::format("{:+.1f}% ({} {})", after ? row.error_after_pct() : row.error_before_pct(),
                       row.id, row.metric);
  };
  s += fmt::format("\n  {:<14} {:>8.2f}%  ->  {:.2f}%\n", "MAPE", r.mape_before, r.mape_after);
  if (held_out)
    s += fmt::format("  {:<14} {:>8.2f}%  ->  {:.2f}%\n", "MAPE fitted", r.mape_fitted_before,
                     r.mape_fitted_after);
  s += fmt::format("  {:<14} {}  ->  {}\n", "worst error", worst(r.worst_before, false),
                   worst(r.worst_after, true));
  s += fmt::format("  {:<14} {:>9.4f}  ->  {:.4f}\n", "Spearman", r.spearman_before,
                   r.spearman_after);

  s += fmt::format("\n  {:<34} {:>10} {:>10} {:>10} {:>10} {:>6} {:<13} {:>9}\n", "parameter",
                   "before", "after", "min", "max", "bound", "identifiable", "rel.s.e.");
  for (size_t j = 0; j < r.free.size(); ++j) {
    const auto& p = r.fit.params[j];
    const HardwareParam* hp = find_hardware_param(p.name);
    const double b = get_param(r.before, *hp), a = get_param(r.after, *hp);
    std::string se = "-";
    if (p.identifiable && !std::isnan(p.rel_std_error))
      se = p.rel_std_error > 10 ? ">1000%" : fmt::format("{:.2g}%", 100 * p.rel_std_error);
    s += fmt::format("  {:<34} {:>10} {:>10} {:>10} {:>10} {:>6} {:<13} {:>9}\n", p.name, fmt_g(b),
                     fmt_g(a), fmt_g(p.min), fmt_g(p.max), p.bound.empty() ? "-" : p.bound,
                     p.identifiable ? "yes" : "NO", se);
  }
  s += fmt::format(
      "\n  condition number {} (column-normalised Jacobian of the identifiable parameters){}\n",
      fmt_g(r.fit.condition_number), r.fit.degenerate ? ": DEGENERATE FIT" : "");
  if (!r.fit.diagnostics.empty() || !r.notes.empty()) {
    s += "  diagnostics:\n";
    for (const auto& d : r.fit.diagnostics) s += "    - " + d + "\n";
    for (const auto& d : r.notes) s += "    - " + d + "\n";
  }
  return s;
}

std::string degenerate_fit_refusal(const CalibrationResult& r) {
  if (!r.fit.degenerate) return "";
  std::vector<std::string> traded;  // every parameter of a degenerate direction, first seen first
  for (const auto& names : r.fit.tradeoffs)
    for (const auto& n : names)
      if (std::find(traded.begin(), traded.end(), n) == traded.end()) traded.push_back(n);
  std::string s =
      fmt::format("degenerate fit (condition number {} > {}): ", fmt_g(r.fit.condition_number),
                  fmt_g(r.fit.condition_limit));
  if (traded.empty())
    s += "no free parameter moves any measurement";
  else
    s += fmt::format(
        "the measurements cannot separate {}; hold some of them (a --free list without them, or "
        "the measurements' \"free\" list) or add measurements that move them apart",
        fmt::join(traded, ", "));
  if (!r.fit.unidentifiable.empty())
    s += fmt::format("; {} move no measurement (hold them)", fmt::join(r.fit.unidentifiable, ", "));
  s += r.to_free.empty() ? "; free parameters these measurements respond to (no other "
                           "real-valued parameter alone moves their misfit)"
                         : "; " + to_free_text(r);
  return s;
}

std::string fit_barely_helps(const CalibrationResult& r) {
  const double before = r.mape_fitted_before, after = r.mape_fitted_after;
  if (!(after > kFitWorthPct) || !(before > 0) || before - after >= kFitBarelyHelps * before)
    return "";
  std::vector<std::string> keys;
  for (const auto& f : r.free) keys.push_back(f.key);
  return fmt::format(
      "the fit barely helps: MAPE over the fitted rows {:.2f}% -> {:.2f}% ({:.1f}% of it "
      "removed); what these measurements miss is not what the free parameters ({}) move: {}, or "
      "look for a mechanism the model lacks",
      before, after, 100 * (before - after) / before, fmt::join(keys, ", "),
      r.to_free.empty()
          ? "free others (tilesim validate --sensitivity ranks what a dataset responds to)"
          : to_free_text(r));
}

std::string calibration_csv(const CalibrationResult& r) {
  std::string s =
      "id,metric,source,weight,measured,before,after,error_before_pct,error_after_pct,"
      "hardware\n";
  for (const auto& row : r.rows)
    s += fmt::format("{},{},{},{},{:.6f},{:.6f},{:.6f},{:.4f},{:.4f},{}\n", csv_field(row.id),
                     csv_field(row.metric), csv_field(row.source), row.weight, row.measured,
                     row.before, row.after, row.error_before_pct(), row.error_after_pct(),
                     csv_field(r.before.name));
  return s;
}

nlohmann::json calibration_to_json(const CalibrationResult& r) {
  nlohmann::json j;
  j["measurements_file"] = r.measurements_label;
  j["hardware"] = {{"name", r.before.name}, {"path", r.before.path}};
  j["runs"] = r.runs;
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : r.rows)
    rows.push_back({{"id", row.id},
                    {"metric", row.metric},
                    {"source", row.source},
                    {"weight", row.weight},
                    {"measured", row.measured},
                    {"before", row.before},
                    {"after", row.after},
                    {"error_before_pct", row.error_before_pct()},
                    {"error_after_pct", row.error_after_pct()}});
  j["rows"] = rows;
  j["run_metrics"] = nlohmann::json::array();
  for (const auto& m : r.run_metrics)
    j["run_metrics"].push_back({{"run", m.label},
                                {"before", metrics_to_json(m.before, false)},
                                {"after", metrics_to_json(m.after, false)}});
  auto worst = [&](size_t i, bool after) {
    const auto& row = r.rows[i];
    return nlohmann::json{{"id", row.id},
                          {"metric", row.metric},
                          {"error_pct", after ? row.error_after_pct() : row.error_before_pct()}};
  };
  j["summary"] = {{"mape_before_pct", r.mape_before},
                  {"mape_after_pct", r.mape_after},
                  {"mape_fitted_before_pct", r.mape_fitted_before},
                  {"mape_fitted_after_pct", r.mape_fitted_after},
                  {"worst_before", worst(r.worst_before, false)},
                  {"worst_after", worst(r.worst_after, true)},
                  {"spearman_before", r.spearman_before},
                  {"spearman_after", r.spearman_after}};
  nlohmann::json params = nlohmann::json::array();
  for (size_t k = 0; k < r.free.size(); ++k) {
    const auto& p = r.fit.params[k];
    const HardwareParam* hp = find_hardware_param(p.name);
    params.push_back(
        {{"key", p.name},
         {"unit", hp->unit},
         {"scale", p.scale == FitScale::kLog ? "log" : "linear"},
         {"before", get_param(r.before, *hp)},
         {"after", get_param(r.after, *hp)},
         {"min", p.min},
         {"max", p.max},
         {"bound", p.bound.empty() ? nlohmann::json(nullptr) : nlohmann::json(p.bound)},
         {"identifiable", p.identifiable},
         {"influence", p.influence},
         {"rel_std_error", p.rel_std_error}});
  }
  j["parameters"] = params;
  j["fit"] = {{"iterations", r.fit.iterations},   {"evaluations", r.fit.evaluations},
              {"model_runs", r.model_runs},       {"converged", r.fit.converged},
              {"stop_reason", r.fit.stop_reason}, {"cost_before", r.fit.initial_cost},
              {"cost_after", r.fit.cost},         {"condition_number", r.fit.condition_number},
              {"degenerate", r.fit.degenerate},   {"unidentifiable", r.fit.unidentifiable}};
  j["diagnostics"] = r.fit.diagnostics;
  j["notes"] = r.notes;
  const std::string barely = fit_barely_helps(r);
  j["warnings"] = barely.empty() ? nlohmann::json::array() : nlohmann::json::array({barely});
  j["to_free"] = nlohmann::json::array();
  for (const auto& [key, share] : r.to_free)
    j["to_free"].push_back({{"key", key}, {"misfit_share", share}});
  return j;
}

nlohmann::ordered_json calibrated_hardware_json(const nlohmann::ordered_json& original,
                                                const CalibrationResult& r) {
  nlohmann::ordered_json out = original;
  size_t fitted_rows = 0;
  for (const auto& row : r.rows) fitted_rows += row.weight > 0 ? 1 : 0;
  for (const auto& f : r.free) {
    const HardwareParam* hp = find_hardware_param(f.key);
    const double b = get_param(r.before, *hp), a = get_param(r.after, *hp);
    if (a == b) continue;
    auto& e = out["parameters"][f.key];
    e["value"] = a;
    e["source"] = fmt::format(
        "fitted by tilesim calibrate on {} ({} fitted measurements; value before the "
        "fit: {})",
        r.measurements_label, fitted_rows, json_number(b));
    e["fitted"] = true;
  }
  hardware_from_json(nlohmann::json::parse(out.dump()), "calibrated hardware file");
  return out;
}

}  // namespace tilesim
