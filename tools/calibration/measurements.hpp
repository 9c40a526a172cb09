#pragma once
// A measurements file for `tilesim calibrate`: run configs paired with figures measured on
// hardware, plus the hardware parameters that may move to fit them. Schema (docs in
// docs/calibration.md; every key in docs/reference/configs.md):
//
//   {
//     "description": "...",                       optional
//     "hardware": "ascend910b1",                  file path (relative to this file) or shipped
//                                                 name; default ascend910b1
//     "free": ["key", {"key": "...", "min": .., "max": ..}, ...],
//                                                 optional; default: the hardware file's
//                                                 parameters marked "fitted": true. Bounds
//                                                 default to the registry's and may only narrow.
//     "measurements": [
//       {"id": "...", "source": "...",            id unique; source optional
//        "config": {run config} | "config_file": "path relative to this file",
//        "metric": "task_duration_us", "measured": 564.84,
//        "weight": 1.0, "note": "..."}            weight (default 1; 0 = reported in the
//                                                 table and statistics, not fitted), note
//                                                 optional
//     ]
//   }
//
// Metrics (what each compares with in a tilesim run):
//   task_duration_us, kernel_time_us  -> kernel_time_us (launch + root-function builds + tasks)
//   time_ms                           -> kernel_time_us / 1000
//   gen_time_us                       -> gen_time_us (span of all tasks)
//   mte2_time_us, vec_time_us, cube_time_us, mte3_time_us
//                                     -> pipes MTE2, V, CUBE, MTE3 mean_us (mean busy per core)
//   core_busy_us, core_work_time_us, wait_time_us, wait_schedule_time_us, tasks_per_core
//                                     -> per_core busy_us, Core Total Work Time, Total Wait Time,
//                                        Wait Schedule Time, Execute task num: means over the
//                                        cores that ran a task (a board swimlane's figures)
// A run config's own "hardware" key is ignored: every run uses the hardware being calibrated.

#include <cstdint>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/lowering.hpp"
#include "kernels/spec/kernel_spec.hpp"
#include "model/hardware.hpp"
#include "model/json_reader.hpp"
#include "sim/metrics.hpp"
#include "sim/simulator.hpp"
#include "tools/formats/measured_bounds.hpp"

namespace tilesim {

struct CalibrationMetric {
  const char* name;
  const char* maps_to;              // human-readable: what it is compared with
  double (*get)(const Metrics& m);  // the figure of a run
};
const std::vector<CalibrationMetric>& calibration_metrics();
bool is_calibration_metric(const std::string& name);
// The metric names, comma-separated (for "allowed: ..." in errors).
std::string allowed_metrics();

// One distinct kernel run the measurements need (measurements sharing a config share a run).
struct CalibrationRun {
  KernelSpec spec;
  std::string label;  // config_file as written, or "<id> (inline)"
  // Set by lower_runs: the task graph lowered once. Lowering reads only structural (integer)
  // hardware parameters, which calibrate never moves, so every fit point reuses it and only
  // simulates (tests/calibration_fit_test.cpp checks the equivalence on every kernel family).
  std::shared_ptr<const LoweredKernel> lowered;
  std::string lower_error;  // lowering rejected the run
  SimOptions options;       // the run config's "runtime" policies
};

// Bounds on the figures a file brings: a measured value (tools/formats/measured_bounds.hpp) and a
// weight.
inline constexpr double kMaxWeight = 1e6;

struct Measurement {
  std::string id;
  std::string source;
  std::string metric;
  double measured = 0;
  double weight = 1;
  std::string note;
  size_t run = 0;  // index into MeasurementSet::runs
};

// A parameter that may move, with its bounds (natural units).
struct FreeParam {
  std::string key;
  double min = 0;
  double max = 0;
};

struct MeasurementSet {
  std::filesystem::path path;
  std::string description;
  std::filesystem::path hardware;  // resolved path
  bool has_free = false;           // the file lists "free"
  std::vector<FreeParam> free;
  std::vector<Measurement> measurements;
  std::vector<CalibrationRun> runs;
};

// A number as JSON writes it (shortest round-trip text), for messages that quote figures.
std::string json_number(double x);

// The run a measured figure names in `e`: exactly one of "config" (an inline run config) or
// "config_file" (a run config file, relative to `file`, the file holding `e`). `id` labels an
// inline config. Also read by the validation datasets (tools/calibration/validation_dataset.hpp).
CalibrationRun parse_measured_run(const JsonReader& e, const std::string& id,
                                  const std::filesystem::path& file);

// An entry of an array of named things (measurements, mapped kernels): an object with the keys
// `allowed` and a non-empty "id" not in `ids` (which it joins). Every key of `entry` names the
// id in its messages, too ("measurements[3] (add_c1.task).metric: ...").
struct IdentifiedEntry {
  JsonReader entry;
  std::string id;
};
IdentifiedEntry identified_entry(const JsonReader& item, const std::vector<std::string>& allowed,
                                 std::set<std::string>& ids);

// Parses and checks a measurements file; every rejection is one line naming the file and key.
MeasurementSet load_measurements(const std::filesystem::path& file);
MeasurementSet measurements_from_json(const nlohmann::json& doc, const std::filesystem::path& file);

// Checks a free parameter against the registry: known, real-valued, bounds inside the registry's
// (NaN bounds take the registry's). `where` names it in errors.
FreeParam make_free_param(const std::string& key, double min, double max, const std::string& where);
// "--free key[:min:max]".
FreeParam parse_free_arg(const std::string& text);
// The parameters a hardware file marks "fitted": true, with registry bounds.
std::vector<FreeParam> default_free_params(const nlohmann::json& hardware_doc);

// One run as measurements see it: the Metrics record, or why the model rejected the run.
struct RunFigures {
  Metrics metrics;
  std::string error;  // non-empty when the model rejected the run (every metric_value is NaN)
};

// Lowers, simulates and measures (run_kernel).
RunFigures run_figures(const KernelSpec& spec, const Hardware& hw, const SimOptions& options = {});
// Simulates the run's pre-lowered graph when it has one, else as above.
RunFigures run_figures(const CalibrationRun& run, const Hardware& hw);
// Lowers every run once on `hw` (in parallel).
void lower_runs(std::vector<CalibrationRun>& runs, const Hardware& hw, int threads = 0);
double metric_value(const RunFigures& f, const std::string& metric);

// Runs every (hardware, run) pair in parallel (oneTBB; threads 0 = all cores). The result is
// indexed [hardware][run] and does not depend on the thread count.
std::vector<std::vector<RunFigures>> evaluate_runs(const std::vector<Hardware>& hws,
                                                   const std::vector<CalibrationRun>& runs,
                                                   int threads = 0);

}  // namespace tilesim
