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
#include "tools/calibration/profile_import.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/options.hpp"
#include "tools/formats/output_file.hpp"
#include "tools/formats/pypto_graph.hpp"
#include "tools/formats/run_config.hpp"
#include "tools/formats/swimlane.hpp"
#include "tools/reports/board_compare_report.hpp"
#include "tools/formats/version.hpp"

namespace tilesim {

namespace {

struct OutputArgs {
  std::string output = "-";
  std::string as = "calibrate";
  std::vector<std::string> metrics;
  bool quiet = false;
};

void add_output_options(CLI::App* cmd, OutputArgs& o) {
  cmd->add_option("-o,--output", o.output,
                  "write the measurements file, for tilesim calibrate or validate (default -: "
                  "stdout, the summary on stderr)")
      ->check(not_empty("file name"));
  add_quiet_option(cmd, o.quiet);
  cmd->add_option("--as", o.as,
                  "calibrate: a measurements file (tilesim calibrate); validate: a validation "
                  "dataset (tilesim validate), one sweep per (sweep, metric)")
      ->check(CLI::IsMember({"calibrate", "validate"}));
  cmd->add_option("--metric", o.metrics,
                  "keep only this metric (repeatable; default: every figure the profile has)");
}

// Writes the file and the summary; the inputs are never overwritten.
int write_measurements(ProfileImport& in, const OutputArgs& o, const std::string& command) {
  for (const auto& w : in.warnings) std::cerr << "tilesim: warning: " << w << "\n";
  if (o.output != "-")
    for (const auto& f : in.inputs) check_not_an_input(o.output, "-o", f);
  BoardMeasurements& m = in.measurements;
  const nlohmann::json j = imported_file_json(m, o.as, o.metrics, o.output);
  std::ostream& text = o.output == "-" ? std::cerr : std::cout;
  std::string s = fmt::format("tilesim measurements {}:", command);
  for (const auto& f : in.inputs) s += " " + f;
  s += "\n" + board_measurements_summary(m);
  if (!o.quiet) text << s;
  write_output(o.output, j.dump(2) + "\n", "measurements file");
  size_t n = 0;
  for (const auto& k : m.kernels) n += k.figures.size();
  if (o.output != "-" && !o.quiet)
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
  ProfileImport in = import_msprof(a.csvs, a.map);
  return write_measurements(in, a.out, "from-msprof");
}

struct SwimlaneArgs {
  std::vector<std::string> traces;
  std::string config, graph, time_unit = "us", hardware, id;
  OutputArgs out;
};

int from_swimlane(const SwimlaneArgs& a) {
  ProfileImport in = import_swimlanes(a.traces, a.config, a.graph, a.time_unit, a.hardware, a.id);
  return write_measurements(in, a.out, "from-swimlane");
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
