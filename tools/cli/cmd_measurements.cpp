// tilesim measurements from-msprof CSV... --map MAP [-o FILE] [--as calibrate|validate]
//                                         [--metric M]...
// tilesim measurements from-swimlane TRACE... --config RUN [--graph G] [--time-unit u]
//                                            [--hardware H] [--id ID] [-o FILE] [--as ...]
// Board profiles in: msprof op_summary CSVs (with a mapping file naming the run config of each
// kernel) or PyPTO swimlanes (of one run config) become a measurements file for `calibrate`, or
// a validation dataset for `validate` (--as validate).
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "model/error.hpp"
#include "model/hardware.hpp"
#include "tools/calibration/board_measurements.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/options.hpp"
#include "tools/formats/output_file.hpp"
#include "tools/formats/pypto_graph.hpp"
#include "tools/formats/run_config.hpp"
#include "tools/formats/swimlane.hpp"
#include "tools/reports/board_compare_report.hpp"
#include "tools/reports/version.hpp"

namespace tilesim {

namespace {

struct OutputArgs {
  std::string output = "-";
  std::string as = "calibrate";
  std::vector<std::string> metrics;
};

void add_output_options(CLI::App* cmd, OutputArgs& o) {
  cmd->add_option("-o,--output", o.output,
                  "the measurements file to write (default -: stdout, the summary on stderr)");
  cmd->add_option("--as", o.as,
                  "calibrate: a measurements file (tilesim calibrate); validate: a validation "
                  "dataset (tilesim validate), one sweep per (sweep, metric)")
      ->check(CLI::IsMember({"calibrate", "validate"}));
  cmd->add_option("--metric", o.metrics,
                  "keep only this metric (repeatable; default: every figure the profile has)");
}

// Writes the file and the summary; the inputs are never overwritten.
int write_measurements(BoardMeasurements& m, const OutputArgs& o,
                       const std::vector<std::string>& inputs, const std::string& command) {
  if (o.output != "-")
    for (const auto& in : inputs) check_not_an_input(o.output, "-o", in);
  select_metrics(m, o.metrics);
  const nlohmann::json j = o.as == "validate" ? validation_dataset_json(m, o.output)
                                              : measurements_file_json(m, o.output);
  std::ostream& text = o.output == "-" ? std::cerr : std::cout;
  std::string s = fmt::format("tilesim measurements {}:", command);
  for (const auto& in : inputs) s += " " + in;
  s += "\n" + board_measurements_summary(m);
  text << s;
  write_output(o.output, j.dump(2) + "\n", "measurements file");
  size_t n = 0;
  for (const auto& k : m.kernels) n += k.figures.size();
  if (o.output != "-")
    text << fmt::format("\n  {} measurements of {} kernels written to {} ({})\n", n,
                        m.kernels.size(), o.output,
                        o.as == "validate" ? "a validation dataset" : "a measurements file");
  if (!m.unmapped.empty())
    std::cerr << fmt::format(
        "tilesim: warning: {} row(s) match no kernel of the mapping and are not measurements "
        "(listed above)\n",
        [&] {
          int64_t r = 0;
          for (const auto& u : m.unmapped) r += u.rows;
          return r;
        }());
  return 0;
}

struct MsprofArgs {
  std::vector<std::string> csvs;
  std::string map;
  OutputArgs out;
};

int from_msprof(const MsprofArgs& a) {
  const MsprofMap map = load_msprof_map(a.map);
  std::vector<MsprofFile> files;
  for (const auto& f : a.csvs) files.push_back(load_msprof_op_summary(f));
  BoardMeasurements m = measurements_from_msprof(files, map);
  std::string list;
  for (const auto& f : a.csvs) list += (list.empty() ? "" : ", ") + f;
  int64_t unmapped = 0;
  for (const auto& u : m.unmapped) unmapped += u.rows;
  m.description = fmt::format(
      "{}{}Converted by tilesim {} measurements from-msprof from {} with the mapping {}: {} of {} "
      "rows are launches of the {} kernels mapped (medians per kernel){}.",
      map.description, map.description.empty() ? "" : " ", tilesim_version(), list, a.map,
      m.rows - unmapped, m.rows, m.kernels.size(),
      unmapped ? fmt::format("; {} row{} matched no kernel", unmapped, unmapped == 1 ? "" : "s")
               : "");
  std::vector<std::string> inputs = a.csvs;
  inputs.push_back(a.map);
  return write_measurements(m, a.out, inputs, "from-msprof");
}

struct SwimlaneArgs {
  std::vector<std::string> traces;
  std::string config, graph, time_unit = "us", hardware, id;
  OutputArgs out;
};

int from_swimlane(const SwimlaneArgs& a) {
  const RunConfig rc = load_run_config(a.config);
  run_spec(rc);  // the config must be runnable: a tile, a known op
  double units_per_us = 1;
  if (a.time_unit == "ns") units_per_us = 1000;
  if (a.time_unit == "cycles")
    units_per_us =
        load_hardware(a.hardware.empty() ? rc.hardware : resolve_hardware_arg(a.hardware))
            .clock_mhz;
  std::optional<PyptoGraph> graph;
  if (!a.graph.empty()) graph = load_pypto_graph(a.graph);
  std::vector<SwimlaneAnalysis> analyses;
  for (const auto& t : a.traces) {
    analyses.push_back(analyze_swimlane(load_swimlane(t, units_per_us), graph ? &*graph : nullptr));
    for (const auto& w : analyses.back().warnings)
      std::cerr << "tilesim: warning: " << t << ": " << w << "\n";
  }
  const std::string id = a.id.empty() ? std::filesystem::path(a.config).stem().string() : a.id;
  BoardMeasurements m = measurements_from_swimlanes(a.traces, analyses, a.config, id);
  m.hardware = rc.hardware;
  m.hardware_named = rc.hardware.string();
  std::string list;
  for (const auto& f : a.traces) list += (list.empty() ? "" : ", ") + f;
  m.description = fmt::format(
      "Converted by tilesim {} measurements from-swimlane from {} (a run of {}{}): gen_time_us "
      "and per-core means over the cores that ran a task.",
      tilesim_version(), list, a.config, graph ? ", dependencies from " + a.graph : "");
  std::vector<std::string> inputs = a.traces;
  inputs.push_back(a.config);
  if (!a.graph.empty()) inputs.push_back(a.graph);
  return write_measurements(m, a.out, inputs, "from-swimlane");
}

}  // namespace

CommandAction add_measurements_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "measurements",
      "board profiles in: msprof op_summary CSVs or PyPTO swimlanes to measurements");
  cmd->require_subcommand(1);
  auto ms = std::make_shared<MsprofArgs>();
  auto* m = cmd->add_subcommand(
      "from-msprof",
      "msprof op_summary CSVs, with a mapping file naming each kernel's run config, to a "
      "measurements file (calibrate) or a validation dataset (validate)");
  m->add_option("csv", ms->csvs, "op_summary_*.csv files")->required();
  m->add_option("--map", ms->map,
                "mapping file: which run config each kernel of the CSVs is (README, \"Board "
                "profiles in\")")
      ->required();
  add_output_options(m, ms->out);
  auto sw = std::make_shared<SwimlaneArgs>();
  auto* s = cmd->add_subcommand(
      "from-swimlane",
      "PyPTO swimlanes (Chrome traces, one lane per core) of one run config to measurements: "
      "gen_time_us and per-core means (medians over several files)");
  s->add_option("trace", sw->traces, "swimlane JSON files (repeats of one run)")->required();
  s->add_option("--config", sw->config, "the run config the swimlanes are a run of")->required();
  s->add_option("--graph", sw->graph,
                "fixed-latency task graph: splits the wait (adds wait_schedule_time_us)");
  s->add_option("--time-unit", sw->time_unit, "unit of ts and dur in the traces (default us)")
      ->check(CLI::IsMember({"us", "ns", "cycles"}));
  add_hardware_option(s, sw->hardware, "clock for --time-unit cycles (default: the config's)");
  s->add_option("--id", sw->id, "the measurements' id (default: the config's file name)");
  add_output_options(s, sw->out);
  for (CLI::App* sub : {m, s})
    sub->set_version_flag("--version", std::string("tilesim ") + tilesim_version());
  return [m, s, ms, sw]() {
    if (*m) return from_msprof(*ms);
    if (*s) return from_swimlane(*sw);
    return -1;
  };
}

}  // namespace tilesim
