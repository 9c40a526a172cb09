#include "tools/calibration/profile_import.hpp"

#include <filesystem>
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
