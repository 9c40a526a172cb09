#include "tools/calibration/profile_import.hpp"

#include <filesystem>
#include <mutex>
#include <optional>

#include <fmt/format.h>

#include "model/error.hpp"
#include "model/hardware.hpp"
#include "tools/calibration/msprof_map.hpp"
#include "tools/formats/msprof_op_summary.hpp"
#include "tools/formats/pypto_graph.hpp"
#include "tools/formats/run_config.hpp"
#include "tools/formats/swimlane.hpp"
#include "tools/formats/version.hpp"

namespace tilesim {

namespace {

std::string joined(const std::vector<std::string>& files) {
  std::string list;
  for (const auto& f : files) list += (list.empty() ? "" : ", ") + f;
  return list;
}

}  // namespace

const std::vector<std::string>& ProfileInputs::files(const std::string& name) const {
  static const std::vector<std::string> none;
  const auto it = values.find(name);
  return it == values.end() ? none : it->second;
}

const std::string& ProfileInputs::value(const std::string& name) const {
  static const std::string none;
  const auto& v = files(name);
  return v.empty() ? none : v.front();
}

// The built-in readers, each a function (below, or in a file of its own): a new one is its
// declaration here and its entry in the list of readers().
ProfileReader msprof_reader();
ProfileReader swimlane_reader();

namespace {

struct Readers {
  std::mutex mutex;
  std::vector<ProfileReader> list;
};

void check_reader(const ProfileReader& r, const std::vector<ProfileReader>& list) {
  if (!r.read) throw InternalError("profile reader " + r.name + " has no read function");
  for (const auto& other : list)
    if (other.name == r.name) throw InternalError("profile reader registered twice: " + r.name);
}

Readers& readers() {
  static Readers r;
  static const bool built = [] {
    for (ProfileReader reader : {msprof_reader(), swimlane_reader()}) {
      check_reader(reader, r.list);
      r.list.push_back(std::move(reader));
    }
    return true;
  }();
  (void)built;
  return r;
}

}  // namespace

std::vector<ProfileReader> profile_readers() {
  Readers& r = readers();
  const std::lock_guard lock(r.mutex);
  return r.list;
}

std::optional<ProfileReader> find_profile_reader(const std::string& name) {
  Readers& r = readers();
  const std::lock_guard lock(r.mutex);
  for (const auto& reader : r.list)
    if (reader.name == name) return reader;
  return std::nullopt;
}

bool register_profile_reader(ProfileReader reader) {
  Readers& r = readers();
  const std::lock_guard lock(r.mutex);
  check_reader(reader, r.list);
  r.list.push_back(std::move(reader));
  return true;
}

ProfileImport import_profile(const std::string& name, ProfileInputs inputs) {
  const std::optional<ProfileReader> reader = find_profile_reader(name);
  if (!reader) {
    std::vector<std::string> names;
    for (const auto& r : profile_readers()) names.push_back(r.name);
    throw Error("profile reader '" + name + "': allowed " + joined(names));
  }
  for (const auto& [key, values] : inputs.values) {
    const ProfileOption* o = nullptr;
    for (const auto& option : reader->options)
      if (option.name == key) o = &option;
    if (!o) {
      std::vector<std::string> names;
      for (const auto& option : reader->options) names.push_back(option.name);
      throw Error("profile reader " + name + ": unknown input '" + key +
                  "' (allowed: " + joined(names) + ")");
    }
    if (o->kind != ProfileOption::kFiles && values.size() != 1)
      throw Error(
          fmt::format("profile reader {}: {} takes one value, got {}", name, key, values.size()));
  }
  for (const auto& o : reader->options)
    if (!inputs.values.count(o.name)) {
      if (o.required) throw Error("profile reader " + name + ": " + o.name + " is required");
      inputs.values[o.name] =
          o.kind == ProfileOption::kFiles ? std::vector<std::string>{} : std::vector{o.fallback};
    }
  return reader->read(inputs);
}

ProfileImport import_msprof(const std::vector<std::string>& csvs, const std::string& map_file) {
  for (size_t i = 0; i < csvs.size(); ++i)
    for (size_t j = 0; j < i; ++j) {
      std::error_code ec;
      if (csvs[i] == csvs[j] || std::filesystem::equivalent(csvs[i], csvs[j], ec))
        throw Error(csvs[i] + ": given twice (as " + csvs[j] +
                    "): each op_summary file once, or its launches count twice");
    }
  const MsprofMap map = load_msprof_map(map_file);
  std::vector<MsprofFile> files;
  for (const auto& f : csvs) files.push_back(load_msprof_op_summary(f));
  ProfileImport out;
  BoardMeasurements& m = out.measurements = measurements_from_msprof(files, map);
  int64_t unmapped = 0;
  for (const auto& u : m.unmapped) unmapped += u.rows;
  m.description = fmt::format(
      "{}{}Converted by tilesim {} measurements from-msprof from {} with the mapping {}: {} of {} "
      "rows are launches of the {} kernels mapped (medians per kernel){}.",
      map.description, map.description.empty() ? "" : " ", tilesim_version(), joined(csvs),
      map_file, m.rows - unmapped, m.rows, m.kernels.size(),
      unmapped ? fmt::format("; {} row{} matched no kernel", unmapped, unmapped == 1 ? "" : "s")
               : "");
  out.inputs = csvs;
  out.inputs.push_back(map_file);
  return out;
}

ProfileImport import_swimlanes(const std::vector<std::string>& traces, const std::string& config,
                               const std::string& graph_file, const std::string& time_unit,
                               const std::string& hardware, const std::string& id) {
  const RunConfig rc = load_run_config(config);
  run_spec(rc);  // the config must be runnable: a tile, a known op
  double units_per_us = 1;
  if (time_unit == "ns")
    units_per_us = 1000;
  else if (time_unit == "cycles")
    units_per_us =
        load_hardware(hardware.empty() ? rc.hardware : resolve_hardware_arg(hardware)).clock_mhz;
  else if (time_unit != "us")
    throw Error("time unit '" + time_unit + "': allowed us, ns, cycles");
  std::optional<PyptoGraph> graph;
  if (!graph_file.empty()) graph = load_pypto_graph(graph_file);
  ProfileImport out;
  std::vector<SwimlaneAnalysis> analyses;
  for (const auto& t : traces) {
    analyses.push_back(analyze_swimlane(load_swimlane(t, units_per_us), graph ? &*graph : nullptr));
    for (const auto& w : analyses.back().warnings) out.warnings.push_back(t + ": " + w);
  }
  BoardMeasurements& m = out.measurements = measurements_from_swimlanes(
      traces, analyses, config, id.empty() ? std::filesystem::path(config).stem().string() : id);
  m.hardware = rc.hardware;
  m.hardware_named = rc.hardware.string();
  m.description = fmt::format(
      "Converted by tilesim {} measurements from-swimlane from {} (a run of {}{}): gen_time_us "
      "and per-core means over the cores that ran a task.",
      tilesim_version(), joined(traces), config, graph ? ", dependencies from " + graph_file : "");
  out.inputs = traces;
  out.inputs.push_back(config);
  if (!graph_file.empty()) out.inputs.push_back(graph_file);
  return out;
}

ProfileReader msprof_reader() {
  return {"msprof",
          "msprof op_summary CSVs, with a mapping file naming each kernel's run config, to a "
          "measurements file (calibrate) or a validation dataset (validate)",
          {{ProfileOption::kFiles, "csv", "op_summary_*.csv files", true},
           {ProfileOption::kValue, "map",
            "mapping file: which run config each kernel of the CSVs is "
            "(docs/board-profiles.md)",
            true}},
          [](const ProfileInputs& in) { return import_msprof(in.files("csv"), in.value("map")); }};
}

ProfileReader swimlane_reader() {
  return {"swimlane",
          "PyPTO swimlanes (Chrome traces, one lane per core) of one run config to measurements: "
          "gen_time_us and per-core means (medians over several files)",
          {{ProfileOption::kFiles, "trace", "swimlane JSON files (repeats of one run)", true},
           {ProfileOption::kValue, "config", "the run config the swimlanes are a run of", true},
           {ProfileOption::kValue, "graph",
            "fixed-latency task graph: splits the wait (adds wait_schedule_time_us)"},
           {ProfileOption::kValue,
            "time-unit",
            "unit of ts and dur in the traces (default us)",
            false,
            {"us", "ns", "cycles"},
            "us"},
           {ProfileOption::kHardware, "hardware",
            "clock for --time-unit cycles (default: the config's)"},
           {ProfileOption::kValue, "id", "the measurements' id (default: the config's file name)"}},
          [](const ProfileInputs& in) {
            return import_swimlanes(in.files("trace"), in.value("config"), in.value("graph"),
                                    in.value("time-unit"), in.value("hardware"), in.value("id"));
          }};
}

nlohmann::json imported_file_json(BoardMeasurements& m, const std::string& as_,
                                  const std::vector<std::string>& metrics,
                                  const std::string& output) {
  if (as_ != "calibrate" && as_ != "validate")
    throw Error("as '" + as_ +
                "': allowed calibrate (a measurements file) or validate (a "
                "validation dataset)");
  select_metrics(m, metrics);
  return as_ == "validate" ? validation_dataset_json(m, output) : measurements_file_json(m, output);
}

}  // namespace tilesim
