#include "tools/reports/validate_report.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "tools/formats/csv_field.hpp"
#include "tools/formats/text_append.hpp"

namespace tilesim {

namespace {

std::string num_or_na(double x, const char* fmt_spec) {
  return std::isnan(x) ? "n/a" : fmt::format(fmt::runtime(fmt_spec), x);
}

nlohmann::json json_num(double x) {
  return std::isnan(x) ? nlohmann::json(nullptr) : nlohmann::json(x);
}

std::string file_name(const ValidationDataset& ds) {
  return ds.path.filename().string();
}

std::string tolerance_text(const ValidationTolerances& t) {
  std::string s;
  auto add = [&](const std::string& part) { s += (s.empty() ? "" : ", ") + part; };
  if (t.max_mape_pct) add(fmt::format("max_mape_pct {}", *t.max_mape_pct));
  if (t.max_abs_mape_pct) add(fmt::format("max_abs_mape_pct {}", *t.max_abs_mape_pct));
  if (t.max_abs_err_pct) add(fmt::format("max_abs_err_pct {}", *t.max_abs_err_pct));
  if (t.min_rank_corr) add(fmt::format("min_rank_corr {}", *t.min_rank_corr));
  if (t.argmin) add("argmin");
  return s.empty() ? "none" : s;
}

// A sweep's rank correlation, marked "*" when it rests on fewer than kMinRankPoints points.
std::string rank_text(const SweepScore& s) {
  return num_or_na(s.rank_corr, "{:.2f}") + (s.few_rank_points() ? "*" : "");
}

// The dataset's lowest rank correlation, marked as the sweep it comes from is.
std::string min_rank_text(const DatasetScore& d) {
  for (const SweepScore& s : d.sweeps)
    if (s.rank_corr == d.min_rank_corr) return rank_text(s);
  return num_or_na(d.min_rank_corr, "{:.2f}");
}

bool any_few_rank_points(const DatasetScore& d) {
  for (const SweepScore& s : d.sweeps)
    if (s.few_rank_points()) return true;
  return false;
}

std::string few_points_note() {
  return fmt::format(
      "* rank correlation over fewer than {} points: 2 or 3 points allow only a few values of "
      "rho, so it says little about the order\n",
      kMinRankPoints);
}

std::string point_status(const ValidationPoint& p, const PointOutcome& o) {
  if (!p.not_expressible.empty()) return "not_expressible";
  if (!p.board_rejected.empty()) return o.evaluated() ? "run_but_board_rejected" : "board_rejected";
  return o.evaluated() ? "evaluated" : "rejected";
}

// Pooled over every dataset: the mean of |per-point error| of the chosen kind.
double pooled_mape(const ValidationResult& res, bool normalised) {
  double sum = 0;
  size_t n = 0;
  for (const auto& d : res.scores)
    for (const auto& s : d.sweeps)
      for (double e : normalised ? s.norm_err_pct : s.abs_err_pct)
        if (!std::isnan(e)) {
          sum += std::abs(e);
          ++n;
        }
  return n ? sum / static_cast<double>(n) : std::nan("");
}

// Points of one sweep the model did not score, grouped by reason in point order.
void append_unscored(std::string& out, const ValidationSweep& sw,
                     const std::vector<PointOutcome>& outcomes, bool expressible) {
  std::vector<std::pair<std::string, std::vector<std::string>>> groups;
  for (size_t i = 0; i < sw.points.size(); ++i) {
    const auto& p = sw.points[i];
    std::string reason;
    if (!expressible) {
      if (p.not_expressible.empty()) continue;
      reason = p.not_expressible;
    } else {
      if (!p.not_expressible.empty() || outcomes[i].evaluated()) continue;
      reason = outcomes[i].error.empty() ? "(the model returned no figure)" : outcomes[i].error;
      if (!p.board_rejected.empty())
        reason = fmt::format("as on the board ({}): {}", p.board_rejected, reason);
    }
    if (groups.empty() || groups.back().first != reason) groups.push_back({reason, {}});
    groups.back().second.push_back(p.label);
  }
  for (const auto& [reason, labels] : groups) {
    std::string which;
    for (const auto& l : labels) which += (which.empty() ? "" : ", ") + l;
    append(out, "  {} ({}): {} {}={}: {}\n", expressible ? "rejected" : "not expressible",
           labels.size(), printable(sw.name), printable(sw.axis), printable(which), reason);
  }
}

}  // namespace

std::string validate_summary(const ValidationResult& res) {
  std::string out;
  append(out, "summary ({} dataset{}; ties within {}%)\n", res.datasets.size(),
         res.datasets.size() == 1 ? "" : "s", kTiePct);
  append(out, "  {:<36} {:<12} {:>6} {:>5} {:>5} {:>4} {:>8} {:>7} {:>8} {:>7}  {}\n", "dataset",
         "hardware", "points", "eval", "n/e", "rej", "min rho", "nMAPE", "aMAPE", "argmin",
         "tolerances");
  size_t points = 0, eval = 0, ne = 0, rej = 0, am = 0, as = 0, within = 0, held = 0;
  double min_rho = std::nan("");
  std::string min_rho_text = "n/a";
  bool few = false;
  for (size_t d = 0; d < res.datasets.size(); ++d) {
    const auto& ds = res.datasets[d];
    const auto& sc = res.scores[d];
    size_t n = 0;
    for (const auto& sw : ds.sweeps) n += sw.points.size();
    append(out, "  {:<36} {:<12} {:>6} {:>5} {:>5} {:>4} {:>8} {:>7} {:>8} {:>7}  {}\n",
           file_name(ds), sc.hardware, n, sc.evaluated, sc.not_expressible, sc.rejected,
           min_rank_text(sc), num_or_na(sc.norm_mape_pct, "{:.1f}%"),
           num_or_na(sc.abs_mape_pct, "{:.1f}%"),
           fmt::format("{}/{}", sc.argmin_matches, sc.argmin_sweeps), sc.status());
    points += n;
    eval += sc.evaluated;
    ne += sc.not_expressible;
    rej += sc.rejected;
    am += sc.argmin_matches;
    as += sc.argmin_sweeps;
    // A dataset without tolerances is held to nothing: it counts neither way.
    held += sc.has_tolerances || !sc.within() ? 1 : 0;
    within += sc.has_tolerances && sc.within() ? 1 : 0;
    few = few || any_few_rank_points(sc);
    if (!std::isnan(sc.min_rank_corr) && (std::isnan(min_rho) || sc.min_rank_corr < min_rho)) {
      min_rho = sc.min_rank_corr;
      min_rho_text = min_rank_text(sc);
    }
  }
  const size_t unheld = res.datasets.size() - held;
  append(out, "  {:<36} {:<12} {:>6} {:>5} {:>5} {:>4} {:>8} {:>7} {:>8} {:>7}  {}\n", "all", "",
         points, eval, ne, rej, min_rho_text, num_or_na(pooled_mape(res, true), "{:.1f}%"),
         num_or_na(pooled_mape(res, false), "{:.1f}%"), fmt::format("{}/{}", am, as),
         fmt::format("{}/{} within{}", within, held,
                     unheld == 0 ? std::string() : fmt::format(", {} with no tolerances", unheld)));
  if (few) out += "  " + few_points_note();
  return out;
}

std::string sensitivity_table(const ValidationResult& res,
                              const std::vector<DatasetSensitivity>& sens, double step,
                              size_t top) {
  std::string out;
  append(out,
         "\nsensitivity: each parameter moved -{0:g}% and +{0:g}% on the dataset's hardware, one "
         "at a time; the {1} that move its absolute MAPE most\n",
         100 * step, top);
  for (size_t d = 0; d < sens.size(); ++d) {
    const DatasetSensitivity& ds = sens[d];
    append(out, "  {} (aMAPE {}, nMAPE {})\n", file_name(res.datasets[d]),
           num_or_na(ds.abs_mape_pct, "{:.1f}%"), num_or_na(ds.norm_mape_pct, "{:.1f}%"));
    append(out, "    {:<36} {:>10} {:>9} {:>9} {:>9} {:>9}\n", "parameter", "value",
           fmt::format("aMAPE -{:g}%", 100 * step), fmt::format("+{:g}%", 100 * step),
           fmt::format("nMAPE -{:g}%", 100 * step), fmt::format("+{:g}%", 100 * step));
    size_t shown = 0;
    for (const ParamSwing& p : ds.params) {
      if (shown == top || p.swing <= 0) break;
      append(out, "    {:<36} {:>10.4g} {:>9} {:>9} {:>9} {:>9}\n", p.key, p.value,
             num_or_na(p.abs_low, "{:.1f}%"), num_or_na(p.abs_high, "{:.1f}%"),
             num_or_na(p.norm_low, "{:.1f}%"), num_or_na(p.norm_high, "{:.1f}%"));
      ++shown;
    }
    if (shown == 0) append(out, "    (no parameter moves it)\n");
  }
  return out;
}

nlohmann::json sensitivity_json(const ValidationResult& res,
                                const std::vector<DatasetSensitivity>& sens, double step) {
  nlohmann::json out = {{"step", step}, {"datasets", nlohmann::json::array()}};
  for (size_t d = 0; d < sens.size(); ++d) {
    nlohmann::json params = nlohmann::json::array();
    for (const ParamSwing& p : sens[d].params)
      params.push_back({{"key", p.key},
                        {"value", p.value},
                        {"low", p.low},
                        {"high", p.high},
                        {"abs_mape_pct_low", json_num(p.abs_low)},
                        {"abs_mape_pct_high", json_num(p.abs_high)},
                        {"norm_mape_pct_low", json_num(p.norm_low)},
                        {"norm_mape_pct_high", json_num(p.norm_high)},
                        {"swing_pct", p.swing}});
    out["datasets"].push_back({{"file", file_name(res.datasets[d])},
                               {"abs_mape_pct", json_num(sens[d].abs_mape_pct)},
                               {"norm_mape_pct", json_num(sens[d].norm_mape_pct)},
                               {"params", std::move(params)}});
  }
  return out;
}

std::string validate_table(const ValidationResult& res) {
  std::string out;
  for (size_t d = 0; d < res.datasets.size(); ++d) {
    const auto& ds = res.datasets[d];
    const auto& sc = res.scores[d];
    append(out, "{} (on {})\n",
           ds.path.lexically_proximate(std::filesystem::current_path()).string(), sc.hardware);
    append(out, "  {:<24} {:<16} {:>4} {:>4} {:>4} {:>6} {:>7} {:>8} {:>6}  {}\n", "sweep",
           "metric", "eval", "n/e", "rej", "rho", "nMAPE", "aMAPE", "argmin", "worst point");
    for (size_t s = 0; s < ds.sweeps.size(); ++s) {
      const auto& sw = ds.sweeps[s];
      const auto& ss = sc.sweeps[s];
      std::string worst = "-";
      if (ss.evaluated > 0) {
        // The worst point by normalised error, with both errors: the times beside it are
        // absolute, so the absolute error is the one they show.
        const auto& p = sw.points[ss.worst];
        worst = fmt::format(
            "{}={} {:+.1f}% normalised, {:+.1f}% absolute ({:.4g} vs {:.4g} "
            "measured)",
            printable(sw.axis), printable(p.label), ss.worst_norm_err_pct, ss.abs_err_pct[ss.worst],
            sc.points[s][ss.worst].modeled, p.measured);
      }
      append(out, "  {:<24} {:<16} {:>4} {:>4} {:>4} {:>6} {:>7} {:>8} {:>6}  {}\n",
             printable(sw.name), sw.metric, ss.evaluated, ss.not_expressible, ss.rejected,
             rank_text(ss), num_or_na(ss.norm_mape_pct, "{:.1f}%"),
             num_or_na(ss.abs_mape_pct, "{:.1f}%"),
             ss.evaluated == 0 ? "n/a" : (ss.argmin_match ? "yes" : "NO"), worst);
    }
    if (any_few_rank_points(sc)) out += "  " + few_points_note();
    for (size_t s = 0; s < ds.sweeps.size(); ++s) {
      append_unscored(out, ds.sweeps[s], sc.points[s], false);
      append_unscored(out, ds.sweeps[s], sc.points[s], true);
    }
    for (size_t s = 0; s < ds.sweeps.size(); ++s)
      if (const auto& k = ds.sweeps[s].known_miss)
        append(out, "  known miss: {} rank correlation {} (held to >= {}): {}\n",
               printable(ds.sweeps[s].name), num_or_na(sc.sweeps[s].rank_corr, "{:.2f}"),
               k->min_rank_corr, k->why);
    if (!sc.has_tolerances && sc.within())
      out += "  tolerances: none stated: scored, held to nothing (no tolerances)\n";
    else
      append(out, "  tolerances: {}: {}\n", tolerance_text(ds.tolerances), sc.status());
    for (const auto& v : sc.violations) append(out, "    {}\n", v);
    if (!sc.within() && sc.known_outside) append(out, "    known: {}\n", ds.known_outside);
    out += "\n";
  }
  return out + validate_summary(res);
}

std::string validate_csv(const ValidationResult& res) {
  std::string out =
      "dataset,hardware,sweep,axis,x,metric,measured,modeled,norm_err_pct,abs_err_pct,status,"
      "note\n";
  auto cell = [](double x) { return std::isnan(x) ? std::string() : fmt::format("{}", x); };
  for (size_t d = 0; d < res.datasets.size(); ++d) {
    const auto& ds = res.datasets[d];
    const auto& sc = res.scores[d];
    for (size_t s = 0; s < ds.sweeps.size(); ++s) {
      const auto& sw = ds.sweeps[s];
      for (size_t i = 0; i < sw.points.size(); ++i) {
        const auto& p = sw.points[i];
        const auto& o = sc.points[s][i];
        const std::string note =
            !p.not_expressible.empty() ? p.not_expressible : (o.evaluated() ? p.mapping : o.error);
        append(out, "{},{},{},{},{},{},{},{},{},{},{},{}\n", csv_field(file_name(ds)),
               csv_field(sc.hardware), csv_field(sw.name), csv_field(sw.axis), csv_field(p.label),
               sw.metric, cell(p.measured), cell(o.modeled), cell(sc.sweeps[s].norm_err_pct[i]),
               cell(sc.sweeps[s].abs_err_pct[i]), point_status(p, o), csv_field(note));
      }
    }
  }
  return out;
}

nlohmann::json validate_json(const ValidationResult& res) {
  nlohmann::json datasets = nlohmann::json::array();
  for (size_t d = 0; d < res.datasets.size(); ++d) {
    const auto& ds = res.datasets[d];
    const auto& sc = res.scores[d];
    nlohmann::json sweeps = nlohmann::json::array();
    for (size_t s = 0; s < ds.sweeps.size(); ++s) {
      const auto& sw = ds.sweeps[s];
      const auto& ss = sc.sweeps[s];
      nlohmann::json points = nlohmann::json::array();
      for (size_t i = 0; i < sw.points.size(); ++i) {
        const auto& p = sw.points[i];
        const auto& o = sc.points[s][i];
        nlohmann::json j = {{"x", p.label},
                            {"measured", p.board_rejected.empty() ? nlohmann::json(p.measured)
                                                                  : nlohmann::json(nullptr)},
                            {"status", point_status(p, o)},
                            {"mapping", p.mapping}};
        if (!p.not_expressible.empty()) j["not_expressible"] = p.not_expressible;
        if (!p.board_rejected.empty()) j["board_rejected"] = p.board_rejected;
        if (o.evaluated()) {
          j["modeled"] = o.modeled;
          j["norm_err_pct"] = ss.norm_err_pct[i];
          j["abs_err_pct"] = ss.abs_err_pct[i];
        } else if (p.not_expressible.empty()) {
          j["error"] = o.error;
        }
        points.push_back(j);
      }
      nlohmann::json js = {{"name", sw.name},
                           {"axis", sw.axis},
                           {"metric", sw.metric},
                           {"evaluated", ss.evaluated},
                           {"not_expressible", ss.not_expressible},
                           {"rejected", ss.rejected},
                           {"rank_corr", json_num(ss.rank_corr)},
                           {"rank_few_points", ss.few_rank_points()},
                           {"norm_mape_pct", json_num(ss.norm_mape_pct)},
                           {"abs_mape_pct", json_num(ss.abs_mape_pct)},
                           {"points", points}};
      if (sw.known_miss)
        js["known_miss"] = {{"min_rank_corr", sw.known_miss->min_rank_corr},
                            {"why", sw.known_miss->why}};
      if (ss.evaluated > 0) {
        js["argmin_match"] = ss.argmin_match;
        js["measured_argmin"] = sw.points[ss.measured_argmin].label;
        js["modeled_argmin"] = sw.points[ss.modeled_argmin].label;
        js["worst"] = {{"x", sw.points[ss.worst].label},
                       {"norm_err_pct", ss.worst_norm_err_pct},
                       {"abs_err_pct", ss.abs_err_pct[ss.worst]}};
      }
      sweeps.push_back(js);
    }
    nlohmann::json tol = nlohmann::json::object();
    const auto& t = ds.tolerances;
    if (t.max_mape_pct) tol["max_mape_pct"] = *t.max_mape_pct;
    if (t.max_abs_mape_pct) tol["max_abs_mape_pct"] = *t.max_abs_mape_pct;
    if (t.max_abs_err_pct) tol["max_abs_err_pct"] = *t.max_abs_err_pct;
    if (t.min_rank_corr) tol["min_rank_corr"] = *t.min_rank_corr;
    if (t.argmin) tol["argmin"] = true;
    nlohmann::json entry = {{"file", ds.path.string()},
                            {"description", ds.description},
                            {"source", ds.source},
                            {"hardware", sc.hardware},
                            {"evaluated", sc.evaluated},
                            {"not_expressible", sc.not_expressible},
                            {"rejected", sc.rejected},
                            {"min_rank_corr", json_num(sc.min_rank_corr)},
                            {"norm_mape_pct", json_num(sc.norm_mape_pct)},
                            {"abs_mape_pct", json_num(sc.abs_mape_pct)},
                            {"argmin_matches", sc.argmin_matches},
                            {"argmin_sweeps", sc.argmin_sweeps},
                            {"tolerances", tol},
                            {"within", sc.within()},
                            {"status", sc.status()},
                            {"known_outside", ds.known_outside},
                            {"violations", sc.violations},
                            {"sweeps", sweeps}};
    datasets.push_back(entry);
  }
  return {{"tie_pct", kTiePct},
          {"norm_mape_pct", json_num(pooled_mape(res, true))},
          {"abs_mape_pct", json_num(pooled_mape(res, false))},
          {"within", res.within()},
          {"datasets", datasets}};
}

Plot validate_plot(const ValidationDataset& ds, const DatasetScore& score, size_t sweep) {
  const auto& sw = ds.sweeps[sweep];
  const auto& ss = score.sweeps[sweep];
  Plot p;
  p.title = fmt::format("{}: {} (on {})", file_name(ds), sw.name, score.hardware);
  p.subtitle = fmt::format(
      "rank corr {}{}, normalised MAPE {}, absolute MAPE {}; {} not expressible, "
      "{} rejected",
      num_or_na(ss.rank_corr, "{:.2f}"),
      ss.few_rank_points() ? fmt::format(" (over {} points)", ss.evaluated) : "",
      num_or_na(ss.norm_mape_pct, "{:.1f}%"), num_or_na(ss.abs_mape_pct, "{:.1f}%"),
      ss.not_expressible, ss.rejected);
  p.x_label = sw.numeric_x ? sw.axis : sw.axis + " (point order)";
  p.y_label = sw.metric;
  double lo = 0, hi = 0;
  bool positive = sw.numeric_x;
  for (size_t i = 0; i < sw.points.size(); ++i) {
    const double x = sw.points[i].x;
    positive = positive && x > 0;
    lo = i == 0 ? x : std::min(lo, x);
    hi = i == 0 ? x : std::max(hi, x);
  }
  p.log_x = positive && hi >= 8 * lo;
  PlotSeries measured{"measured", "#1f77b4", true, 4, 1, {}};
  PlotSeries modeled{"modeled", "#d62728", true, 4, 1, {}};
  for (size_t i = 0; i < sw.points.size(); ++i) {
    const auto& pt = sw.points[i];
    if (!pt.board_rejected.empty()) continue;  // no time to plot
    measured.points.push_back({pt.x, pt.measured, "", sw.numeric_x ? "" : pt.label});
    if (score.points[sweep][i].evaluated())
      modeled.points.push_back({pt.x, score.points[sweep][i].modeled, "", ""});
  }
  p.series.push_back(measured);
  if (!modeled.points.empty()) p.series.push_back(modeled);
  if (ss.evaluated > 0) {
    const auto& best = sw.points[ss.measured_argmin];
    p.mark = PlotMark{best.x, best.measured,
                      fmt::format("measured best: {}={}{}", sw.axis, best.label,
                                  ss.argmin_match ? " (modeled agrees)" : ""),
                      "measured best"};
  }
  return p;
}

namespace {
std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
}  // namespace

std::vector<std::pair<std::string, std::string>> validate_svgs(const ValidationResult& res) {
  std::vector<std::pair<std::string, std::string>> out;
  std::set<std::string> taken;  // lower case: one file on a case-insensitive file system too
  for (size_t d = 0; d < res.datasets.size(); ++d)
    for (size_t s = 0; s < res.datasets[d].sweeps.size(); ++s) {
      std::string name =
          res.datasets[d].path.stem().string() + "__" + res.datasets[d].sweeps[s].name;
      for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '-' && c != '.')
          c = '_';
      // Sweeps "x/y" and "x_y" (or two datasets of one stem) name one file: later ones are "-2"...
      std::string unique = name;
      for (int k = 2; !taken.insert(lower(unique)).second; ++k)
        unique = fmt::format("{}-{}", name, k);
      out.emplace_back(unique + ".svg",
                       render_svg(validate_plot(res.datasets[d], res.scores[d], s)));
    }
  return out;
}

}  // namespace tilesim
