#include "tools/calibration/measurements.hpp"

#include <cmath>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "model/error.hpp"
#include "model/json_reader.hpp"
#include "model/missing.hpp"
#include "tools/analyses/parallel_indices.hpp"
#include "tools/analyses/run_kernel.hpp"
#include "tools/formats/record_json.hpp"
#include "tools/formats/run_config.hpp"

namespace tilesim {

std::string json_number(double x) {
  return nlohmann::json(x).dump();
}

namespace {

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
  using M = const Metrics&;
  static const std::vector<CalibrationMetric> metrics = {
      {"task_duration_us", "kernel_time_us (launch + root-function builds + tasks)",
       [](M m) { return m.kernel_time_us; }},
      {"kernel_time_us", "kernel_time_us", [](M m) { return m.kernel_time_us; }},
      {"time_ms", "kernel_time_us / 1000", [](M m) { return m.kernel_time_us / 1000; }},
      {"gen_time_us", "gen_time_us (span of all tasks)", [](M m) { return m.gen_time_us; }},
      {"mte2_time_us", "pipes MTE2 mean_us (mean busy per core)",
       [](M m) { return pipe_mean_us(m, "MTE2"); }},
      {"vec_time_us", "pipes V mean_us", [](M m) { return pipe_mean_us(m, "V"); }},
      {"cube_time_us", "pipes CUBE mean_us", [](M m) { return pipe_mean_us(m, "CUBE"); }},
      {"mte3_time_us", "pipes MTE3 mean_us", [](M m) { return pipe_mean_us(m, "MTE3"); }},
      {"core_busy_us", "per_core busy_us, mean over the cores that ran a task",
       [](M m) { return mean_per_core(m, &CoreMetrics::busy_us); }},
      {"core_work_time_us", "per_core Core Total Work Time, mean",
       [](M m) { return mean_per_core(m, &CoreMetrics::core_total_work_time_us); }},
      {"wait_time_us", "per_core Total Wait Time, mean",
       [](M m) { return mean_per_core(m, &CoreMetrics::total_wait_time_us); }},
      {"wait_schedule_time_us", "per_core Wait Schedule Time, mean",
       [](M m) { return mean_per_core(m, &CoreMetrics::wait_schedule_time_us); }},
      {"tasks_per_core", "per_core Execute task num, mean",
       [](M m) { return mean_tasks_per_core(m); }},
  };
  return metrics;
}

std::string allowed_metrics() {
  std::string s;
  for (const auto& m : calibration_metrics()) s += (s.empty() ? "" : ", ") + std::string(m.name);
  return s;
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
    throw Error(
        where + ": " + key + " is an integer parameter; calibrate fits real-valued parameters only",
        ErrorKind::kLimits);
  FreeParam f{key, std::isnan(min) ? p->min : min, std::isnan(max) ? p->max : max};
  if (!std::isfinite(f.min) || f.min < p->min)
    throw Error(where + ": " + key + " min " + json_number(f.min) +
                " is below the registry bound " + json_number(p->min) + " " + p->unit +
                " (bounds may only narrow)");
  if (!std::isfinite(f.max) || f.max > p->max)
    throw Error(where + ": " + key + " max " + json_number(f.max) +
                " is above the registry bound " + json_number(p->max) + " " + p->unit +
                " (bounds may only narrow)");
  if (!(f.min < f.max))
    throw Error(where + ": " + key + " needs min < max (got " + json_number(f.min) + ", " +
                json_number(f.max) + ")");
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
      if (!std::isfinite(v))
        throw Error(where + ": " + what + " '" + s + "' is not a finite number");
      return v;
    } catch (const Error&) {
      throw;
    } catch (const std::exception&) {
      throw Error(where + ": " + what + " '" + s + "' is not a number");
    }
  };
  // min before max, whatever order the compiler evaluates arguments in.
  const double min = parse(text.substr(c1 + 1, c2 - c1 - 1), "min");
  const double max = parse(text.substr(c2 + 1), "max");
  return make_free_param(text.substr(0, c1), min, max, where);
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

namespace {

// One entry of "free": a key, or {"key", "min", "max"} with bounds that may only narrow.
FreeParam parse_free_entry(const JsonReader& e) {
  const std::string where = e.origin() + ": " + e.path();
  if (e.json().is_string()) return make_free_param(e.string(), kNaN, kNaN, where);
  if (!e.json().is_object())
    e.fail("expected a parameter key or {\"key\", \"min\", \"max\"}, got " + e.json().dump());
  e.check_keys({"key", "min", "max"});
  return make_free_param(e.at("key").string(), e.number_or("min", kNaN), e.number_or("max", kNaN),
                         where);
}

std::vector<FreeParam> parse_free(const JsonReader& fr) {
  if (!fr.json().is_array()) fr.fail("expected an array of keys or {key, min, max} objects");
  std::vector<FreeParam> out;
  std::set<std::string> seen;
  for (const auto& e : fr.items()) {
    out.push_back(parse_free_entry(e));
    if (!seen.insert(out.back().key).second) e.fail(out.back().key + " is listed twice");
  }
  return out;
}

}  // namespace

CalibrationRun parse_measured_run(const JsonReader& e, const std::string& id,
                                  const std::filesystem::path& file) {
  const auto inline_config = e.find("config"), file_config = e.find("config_file");
  if (inline_config.has_value() == file_config.has_value())
    e.fail("needs exactly one of config (an inline run config) or config_file");
  CalibrationRun run;
  if (inline_config) {
    if (!inline_config->json().is_object()) inline_config->fail("expected a run config object");
    // A kernel, or a tile program ("program": a program file beside this one, or inline).
    run.spec = inline_config->has("program")
                   ? kernel_spec_tile_optional(*inline_config,
                                               {"hardware", "description", "measured", "runtime"})
                   : kernel_spec_from_json(inline_config->json(),
                                           e.origin() + ": " + inline_config->path(),
                                           {"hardware", "description", "measured", "runtime"});
    if (run.spec.tile.empty()) inline_config->fail_at("tile", "missing (a measured run needs one)");
    run.options =
        runtime_options_from_json(inline_config->json(), e.origin() + ": " + inline_config->path());
    run.label = id + " (inline)";
    return run;
  }
  if (!file_config->json().is_string())
    file_config->fail("expected a path relative to the measurements file");
  const std::string named = file_config->string();
  const std::filesystem::path p = file.parent_path() / named;
  if (!std::filesystem::exists(p)) file_config->fail("no such file: " + p.string());
  const RunConfig rc = load_run_config(p);
  run.spec = run_spec(rc, {}, "a measured run needs one");
  run.options = rc.options;
  run.label = named;
  return run;
}

namespace {

Measurement parse_measurement(const JsonReader& e) {
  Measurement m;
  const auto metric = e.at("metric");
  if (!metric.json().is_string())
    metric.fail("expected a string (allowed: " + allowed_metrics() + ")");
  m.metric = metric.string();
  if (!is_calibration_metric(m.metric))
    metric.fail("unknown metric '" + m.metric + "' (allowed: " + allowed_metrics() + ")");
  m.source = e.string_or("source", "");
  m.note = e.string_or("note", "");
  const auto measured = e.at("measured");
  // Bounded so every ratio and log the fit takes stays finite (the model's own times are at most
  // 2^52 cycles).
  m.measured = measured.number(-std::numeric_limits<double>::infinity(), kMaxMeasured);
  if (!(m.measured > 0))
    measured.fail("must be a positive number (the fit compares logarithms), got " +
                  measured.json().dump());
  if (m.measured < kMinMeasured)
    measured.fail(fmt::format("{} is below {:g}, no time in any unit the metrics use",
                              measured.json().dump(), kMinMeasured));
  if (const auto w = e.find("weight")) {
    m.weight = w->number(-std::numeric_limits<double>::infinity(), kMaxWeight);
    if (m.weight < 0)
      w->fail("must be a number >= 0 (0: reported, not fitted), got " + w->json().dump());
  }
  return m;
}

}  // namespace

IdentifiedEntry identified_entry(const JsonReader& item, const std::vector<std::string>& allowed,
                                 std::set<std::string>& ids) {
  item.expect_object();
  const auto id = item.find("id");
  IdentifiedEntry out{
      id && id->json().is_string()
          ? JsonReader(item.json(), item.origin(), item.path() + " (" + id->string() + ")")
          : item,
      ""};
  out.entry.check_keys(allowed);
  const auto id_r = out.entry.at("id");
  if (!id_r.json().is_string() || id_r.json().get<std::string>().empty())
    id_r.fail("expected a non-empty string");
  out.id = id_r.string();
  if (!ids.insert(out.id).second) id_r.fail("duplicate id '" + out.id + "'");
  return out;
}

MeasurementSet measurements_from_json(const nlohmann::json& json,
                                      const std::filesystem::path& file) {
  const JsonReader doc(json, file.string());
  doc.check_keys({"description", "hardware", "free", "measurements"});
  MeasurementSet set;
  set.path = file;
  set.description = config_description(doc);
  set.hardware = config_hardware(doc);
  if (const auto fr = doc.find("free")) {
    set.has_free = true;
    set.free = parse_free(*fr);
  }
  const JsonReader ms = doc.at("measurements");
  if (!ms.json().is_array() || ms.json().empty()) ms.fail("expected a non-empty array");
  std::set<std::string> ids;
  std::map<std::string, size_t> run_index;
  for (const auto& item : ms.items()) {
    const auto [e, id] = identified_entry(
        item, {"id", "source", "config", "config_file", "metric", "measured", "weight", "note"},
        ids);
    Measurement m = parse_measurement(e);
    m.id = id;
    const CalibrationRun run = parse_measured_run(e, m.id, file);
    const std::string key = run_key(run.spec) + " " + ready_order_name(run.options.ready_order) +
                            (std::string(" ") + l2_start_name(run.options.l2_start));
    auto [it, fresh] = run_index.emplace(key, set.runs.size());
    if (fresh) set.runs.push_back(run);
    m.run = it->second;
    set.measurements.push_back(m);
  }
  bool any_weight = false;
  for (const auto& m : set.measurements) any_weight = any_weight || m.weight > 0;
  if (!any_weight) ms.fail("every weight is 0: nothing to fit");
  return set;
}

MeasurementSet load_measurements(const std::filesystem::path& file) {
  return measurements_from_json(read_json_file(file, "measurements file"), file);
}

namespace {

RunFigures failed(const std::string& error) {
  RunFigures f;
  f.error = error;
  return f;
}

}  // namespace

RunFigures run_figures(const CalibrationRun& run, const Hardware& hw) {
  if (!run.lower_error.empty()) return failed(run.lower_error);
  if (!run.lowered) return run_figures(run.spec, hw, run.options);
  try {
    const SimResult sim = simulate(run.lowered->graph, hw, run.options);
    return {compute_metrics(run.lowered->graph, sim, hw), ""};
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
    return {r.metrics, ""};
  } catch (const Error& e) {
    return failed(e.what());
  }
}

double metric_value(const RunFigures& f, const std::string& metric) {
  for (const auto& m : calibration_metrics())
    if (metric == m.name) return f.error.empty() ? m.get(f.metrics) : kNaN;
  // Metrics are checked when the file is read: an unknown one here is a bug.
  throw InternalError("unknown metric '" + metric + "' (allowed: " + allowed_metrics() + ")");
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
