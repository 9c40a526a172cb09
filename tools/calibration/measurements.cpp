#include "tools/calibration/measurements.hpp"

#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "model/error.hpp"
#include "tools/analyses/parallel_indices.hpp"
#include "tools/reports/report.hpp"
#include "tools/formats/run_config.hpp"
#include "tools/analyses/run_kernel.hpp"

namespace tilesim {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

std::string allowed_metrics() {
  std::string s;
  for (const auto& m : calibration_metrics()) s += (s.empty() ? "" : ", ") + std::string(m.name);
  return s;
}

std::string num(double x) {
  return nlohmann::json(x).dump();
}

// Everything that makes two kernel specs different runs.
std::string run_key(const KernelSpec& spec) {
  nlohmann::json j = spec_to_json(spec);
  j["params"] = spec.params;
  j["loop_axis"] = spec.loop_axis;
  j["max_tasks_per_psg"] = spec.max_tasks_per_psg;
  return j.dump();
}

}  // namespace

const std::vector<CalibrationMetric>& calibration_metrics() {
  static const std::vector<CalibrationMetric> metrics = {
      {"task_duration_us", "kernel_time_us (launch + root-function builds + tasks)"},
      {"kernel_time_us", "kernel_time_us"},
      {"time_ms", "kernel_time_us / 1000"},
      {"gen_time_us", "gen_time_us (span of all tasks)"},
      {"mte2_time_us", "pipes MTE2 mean_us (mean busy per core)"},
      {"vec_time_us", "pipes V mean_us"},
      {"cube_time_us", "pipes CUBE mean_us"},
      {"mte3_time_us", "pipes MTE3 mean_us"},
  };
  return metrics;
}

bool is_calibration_metric(const std::string& name) {
  for (const auto& m : calibration_metrics())
    if (name == m.name) return true;
  return false;
}

FreeParam make_free_param(const std::string& key, double min, double max,
                          const std::string& where) {
  const HardwareParam* p = find_hardware_param(key);
  if (!p) throw Error(where + ": unknown hardware parameter '" + key + "'");
  if (p->is_integer())
    throw Error(where + ": " + key +
                " is an integer parameter; calibrate fits real-valued parameters only");
  FreeParam f{key, std::isnan(min) ? p->min : min, std::isnan(max) ? p->max : max};
  if (!std::isfinite(f.min) || f.min < p->min)
    throw Error(where + ": " + key + " min " + num(f.min) + " is below the registry bound " +
                num(p->min) + " " + p->unit + " (bounds may only narrow)");
  if (!std::isfinite(f.max) || f.max > p->max)
    throw Error(where + ": " + key + " max " + num(f.max) + " is above the registry bound " +
                num(p->max) + " " + p->unit + " (bounds may only narrow)");
  if (!(f.min < f.max))
    throw Error(where + ": " + key + " needs min < max (got " + num(f.min) + ", " + num(f.max) +
                ")");
  return f;
}

FreeParam parse_free_arg(const std::string& text) {
  const std::string where = "--free " + text;
  const auto c1 = text.find(':');
  if (c1 == std::string::npos) return make_free_param(text, kNaN, kNaN, where);
  const auto c2 = text.find(':', c1 + 1);
  if (c2 == std::string::npos || text.find(':', c2 + 1) != std::string::npos)
    throw Error(where + ": expected key or key:min:max");
  auto parse = [&](const std::string& s, const char* what) {
    if (s.empty()) return kNaN;  // "key::100" keeps the registry's min
    try {
      size_t used = 0;
      const double v = std::stod(s, &used);
      if (used != s.size()) throw std::invalid_argument(s);
      return v;
    } catch (const std::exception&) {
      throw Error(where + ": " + what + " '" + s + "' is not a number");
    }
  };
  return make_free_param(text.substr(0, c1), parse(text.substr(c1 + 1, c2 - c1 - 1), "min"),
                         parse(text.substr(c2 + 1), "max"), where);
}

std::vector<FreeParam> default_free_params(const nlohmann::json& hardware_doc) {
  std::vector<FreeParam> out;
  if (!hardware_doc.contains("parameters")) return out;
  // Registry order, so the default list is stable.
  for (const auto& p : hardware_params()) {
    const auto& params = hardware_doc["parameters"];
    if (!params.contains(p.key)) continue;
    const auto& e = params[p.key];
    if (!e.is_object() || !e.contains("fitted") || e["fitted"] != true) continue;
    if (p.is_integer()) continue;
    out.push_back({p.key, p.min, p.max});
  }
  return out;
}

MeasurementSet measurements_from_json(const nlohmann::json& doc,
                                      const std::filesystem::path& file) {
  const std::string origin = file.string();
  auto fail = [&](const std::string& where, const std::string& what) -> void {
    throw Error(origin + ": " + where + ": " + what);
  };
  if (!doc.is_object()) fail("top level", "expected a JSON object");
  static const std::set<std::string> top = {"description", "hardware", "free", "measurements"};
  for (auto it = doc.begin(); it != doc.end(); ++it)
    if (!top.count(it.key()))
      fail(it.key(), "unknown key (allowed: description, hardware, free, measurements)");
  MeasurementSet set;
  set.path = file;
  if (doc.contains("description")) {
    if (!doc["description"].is_string()) fail("description", "expected a string");
    set.description = doc["description"].get<std::string>();
  }
  set.hardware = default_hardware_path();
  if (doc.contains("hardware")) {
    if (!doc["hardware"].is_string())
      fail("hardware", "expected a file path or a shipped name (ascend910b1)");
    set.hardware = resolve_config_path(file, doc["hardware"].get<std::string>());
  }
  if (doc.contains("free")) {
    set.has_free = true;
    const auto& fr = doc["free"];
    if (!fr.is_array()) fail("free", "expected an array of keys or {key, min, max} objects");
    std::set<std::string> seen;
    for (size_t i = 0; i < fr.size(); ++i) {
      const std::string where = origin + ": free[" + std::to_string(i) + "]";
      const auto& e = fr[i];
      FreeParam f;
      if (e.is_string()) {
        f = make_free_param(e.get<std::string>(), kNaN, kNaN, where);
      } else if (e.is_object()) {
        for (auto it = e.begin(); it != e.end(); ++it)
          if (it.key() != "key" && it.key() != "min" && it.key() != "max")
            throw Error(where + "." + it.key() + ": unknown key (allowed: key, min, max)");
        if (!e.contains("key") || !e["key"].is_string())
          throw Error(where + ".key: missing or not a string");
        double bounds[2] = {kNaN, kNaN};
        const char* names[2] = {"min", "max"};
        for (int b = 0; b < 2; ++b)
          if (e.contains(names[b])) {
            if (!e[names[b]].is_number())
              throw Error(where + "." + names[b] + ": expected a number, got " +
                          e[names[b]].dump());
            bounds[b] = e[names[b]].get<double>();
          }
        f = make_free_param(e["key"].get<std::string>(), bounds[0], bounds[1], where);
      } else {
        throw Error(where + ": expected a parameter key or {\"key\", \"min\", \"max\"}");
      }
      if (!seen.insert(f.key).second) throw Error(where + ": " + f.key + " is listed twice");
      set.free.push_back(f);
    }
  }
  if (!doc.contains("measurements") || !doc["measurements"].is_array() ||
      doc["measurements"].empty())
    fail("measurements", "missing or not a non-empty array");
  static const std::set<std::string> mkeys = {"id",     "source",   "config", "config_file",
                                              "metric", "measured", "weight", "note"};
  std::set<std::string> ids;
  std::map<std::string, size_t> run_index;
  const auto& ms = doc["measurements"];
  for (size_t i = 0; i < ms.size(); ++i) {
    const auto& e = ms[i];
    std::string where = "measurements[" + std::to_string(i) + "]";
    if (!e.is_object()) fail(where, "expected an object");
    if (e.contains("id") && e["id"].is_string()) where += " (" + e["id"].get<std::string>() + ")";
    for (auto it = e.begin(); it != e.end(); ++it)
      if (!mkeys.count(it.key()))
        fail(where + "." + it.key(),
             "unknown key (allowed: id, source, config, config_file, metric, measured, weight, "
             "note)");
    Measurement m;
    if (!e.contains("id") || !e["id"].is_string() || e["id"].get<std::string>().empty())
      fail(where + ".id", "missing or not a non-empty string");
    m.id = e["id"].get<std::string>();
    if (!ids.insert(m.id).second) fail(where + ".id", "duplicate id '" + m.id + "'");
    for (const char* k : {"source", "note"})
      if (e.contains(k) && !e[k].is_string()) fail(where + "." + k, "expected a string");
    if (e.contains("source")) m.source = e["source"].get<std::string>();
    if (e.contains("note")) m.note = e["note"].get<std::string>();
    if (!e.contains("metric") || !e["metric"].is_string())
      fail(where + ".metric", "missing or not a string (allowed: " + allowed_metrics() + ")");
    m.metric = e["metric"].get<std::string>();
    if (!is_calibration_metric(m.metric))
      fail(where + ".metric",
           "unknown metric '" + m.metric + "' (allowed: " + allowed_metrics() + ")");
    if (!e.contains("measured") || !e["measured"].is_number())
      fail(where + ".measured", "missing or not a number");
    m.measured = e["measured"].get<double>();
    if (!std::isfinite(m.measured) || m.measured <= 0)
      fail(where + ".measured",
           "must be a positive number (the fit compares logarithms), got " + e["measured"].dump());
    if (e.contains("weight")) {
      if (!e["weight"].is_number()) fail(where + ".weight", "expected a number");
      m.weight = e["weight"].get<double>();
      if (!std::isfinite(m.weight) || m.weight < 0)
        fail(where + ".weight",
             "must be a number >= 0 (0: reported, not fitted), got " + e["weight"].dump());
    }
    const bool inline_config = e.contains("config"), file_config = e.contains("config_file");
    if (inline_config == file_config)
      fail(where, "needs exactly one of config (an inline run config) or config_file");
    CalibrationRun run;
    if (inline_config) {
      if (!e["config"].is_object()) fail(where + ".config", "expected a run config object");
      run.spec = kernel_spec_from_json(e["config"], origin + ": " + where + ".config",
                                       {"hardware", "description", "measured", "runtime"});
      run.options = runtime_options_from_json(e["config"], origin + ": " + where + ".config");
      run.label = m.id + " (inline)";
    } else {
      if (!e["config_file"].is_string())
        fail(where + ".config_file", "expected a path relative to the measurements file");
      const std::string named = e["config_file"].get<std::string>();
      const std::filesystem::path p = file.parent_path() / named;
      if (!std::filesystem::exists(p)) fail(where + ".config_file", "no such file: " + p.string());
      const RunConfig rc = load_run_config(p);
      run.spec = rc.spec;
      run.options = rc.options;
      run.label = named;
    }
    const std::string key = run_key(run.spec) + " " + ready_order_name(run.options.ready_order);
    auto [it, fresh] = run_index.emplace(key, set.runs.size());
    if (fresh) set.runs.push_back(run);
    m.run = it->second;
    set.measurements.push_back(m);
  }
  bool any_weight = false;
  for (const auto& m : set.measurements) any_weight = any_weight || m.weight > 0;
  if (!any_weight) fail("measurements", "every weight is 0: nothing to fit");
  return set;
}

MeasurementSet load_measurements(const std::filesystem::path& file) {
  return measurements_from_json(read_json_file(file, "measurements file"), file);
}

namespace {

RunFigures figures_of(const Metrics& m) {
  RunFigures f;
  f.kernel_time_us = m.kernel_time_us;
  f.gen_time_us = m.gen_time_us;
  f.mte2_us = pipe_mean_us(m, "MTE2");
  f.vec_us = pipe_mean_us(m, "V");
  f.cube_us = pipe_mean_us(m, "CUBE");
  f.mte3_us = pipe_mean_us(m, "MTE3");
  return f;
}

RunFigures failed(const std::string& error) {
  RunFigures f;
  f.error = error;
  f.kernel_time_us = f.gen_time_us = f.mte2_us = f.vec_us = f.cube_us = f.mte3_us = kNaN;
  return f;
}

}  // namespace

RunFigures run_figures(const CalibrationRun& run, const Hardware& hw) {
  if (!run.lower_error.empty()) return failed(run.lower_error);
  if (!run.lowered) return run_figures(run.spec, hw, run.options);
  try {
    const SimResult sim = simulate(run.lowered->graph, hw, run.options);
    return figures_of(compute_metrics(run.lowered->graph, sim, hw));
  } catch (const Error& e) {
    return failed(e.what());
  }
}

void lower_runs(std::vector<CalibrationRun>& runs, const Hardware& hw, int threads) {
  parallel_indices(runs.size(), threads, [&](size_t k) {
    try {
      runs[k].lowered = std::make_shared<const LoweredKernel>(lower_kernel(runs[k].spec, hw));
    } catch (const Error& e) {
      runs[k].lower_error = e.what();
    }
  });
}

RunFigures run_figures(const KernelSpec& spec, const Hardware& hw, const SimOptions& options) {
  try {
    const RunOutcome r = run_kernel(spec, hw, options);
    return figures_of(r.metrics);
  } catch (const Error& e) {
    return failed(e.what());
  }
}

double metric_value(const RunFigures& f, const std::string& metric) {
  if (metric == "task_duration_us" || metric == "kernel_time_us") return f.kernel_time_us;
  if (metric == "time_ms") return f.kernel_time_us / 1000;
  if (metric == "gen_time_us") return f.gen_time_us;
  if (metric == "mte2_time_us") return f.mte2_us;
  if (metric == "vec_time_us") return f.vec_us;
  if (metric == "cube_time_us") return f.cube_us;
  if (metric == "mte3_time_us") return f.mte3_us;
  throw Error("unknown metric '" + metric + "' (allowed: " + allowed_metrics() + ")");
}

std::vector<std::vector<RunFigures>> evaluate_runs(const std::vector<Hardware>& hws,
                                                   const std::vector<CalibrationRun>& runs,
                                                   int threads) {
  std::vector<std::vector<RunFigures>> out(hws.size(), std::vector<RunFigures>(runs.size()));
  if (runs.empty()) return out;
  parallel_indices(hws.size() * runs.size(), threads, [&](size_t k) {
    const size_t h = k / runs.size(), r = k % runs.size();
    out[h][r] = run_figures(runs[r], hws[h]);
  });
  return out;
}

}  // namespace tilesim
