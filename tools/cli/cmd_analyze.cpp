// tilesim analyze <trace.json> [--graph graph.json] [--time-unit us|ns|cycles] [--hardware f]
//                 [--json [f]]
// PyPTO's swimlane metrics of a trace: tilesim's own or a board swimlane.
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "model/error.hpp"
#include "model/hardware.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/options.hpp"
#include "tools/formats/pypto_graph.hpp"
#include "tools/formats/run_config.hpp"
#include "tools/formats/swimlane.hpp"
#include "tools/reports/timeline_report.hpp"

namespace tilesim {

namespace {

struct AnalyzeArgs {
  std::string trace;
  std::string graph;
  std::string time_unit = "us";
  std::string hardware;
  std::string json;
};

int analyze(const AnalyzeArgs& a) {
  check_outputs_not_inputs({{"--json", a.json}}, {a.trace, a.graph});
  double units_per_us = 1;
  if (a.time_unit == "ns") {
    units_per_us = 1000;
  } else if (a.time_unit == "cycles") {
    const auto hw_path =
        a.hardware.empty() ? default_hardware_path() : resolve_hardware_arg(a.hardware);
    units_per_us = load_hardware(hw_path).clock_mhz;
  }
  std::optional<PyptoGraph> graph;
  if (!a.graph.empty()) graph = load_pypto_graph(a.graph);
  const SwimlaneTrace trace = load_swimlane(a.trace, units_per_us);
  SwimlaneAnalysis an = analyze_swimlane(trace, graph ? &*graph : nullptr);
  if (graph)
    an.warnings.insert(an.warnings.begin(), graph->warnings.begin(), graph->warnings.end());
  for (const auto& w : an.warnings) std::cerr << "tilesim: warning: " << w << "\n";
  if (!a.json.empty()) {
    nlohmann::json j = swimlane_analysis_to_json(an);
    j["trace"] = a.trace;
    if (graph) j["graph"] = a.graph;
    j["events"] = trace.events;
    write_json(a.json, j);
    if (a.json == "-") return 0;
  }
  std::vector<std::string> names;
  for (const auto& l : an.lanes) names.push_back(l.name);
  std::string s = fmt::format("tilesim analyze: {}\n", a.trace);
  s += fmt::format("  {} events, {} tasks on {} cores; ", trace.events, an.metrics.tasks,
                   an.metrics.per_core.size());
  s += graph ? fmt::format("dependencies from {}\n", a.graph)
             : std::string("no graph: Wait Schedule / Wait Predecessor need --graph\n");
  for (const auto& [reason, count] : an.skipped)
    s += fmt::format("  skipped {} {}\n", count, reason);
  s += fmt::format("\n  gen_time_us     {:>12.3f}   (span of all tasks)\n", an.metrics.gen_time_us);
  s += timeline_tables(an.metrics, names, an.dependencies);
  if (!a.json.empty()) s += fmt::format("\n  JSON written to {}\n", a.json);
  std::cout << s;
  return 0;
}

}  // namespace

CommandAction add_analyze_command(CLI::App& app) {
  auto args = std::make_shared<AnalyzeArgs>();
  auto* cmd = app.add_subcommand(
      "analyze", "PyPTO swimlane metrics of a trace (tilesim's own or a board swimlane)");
  cmd->add_option("trace", args->trace, "Chrome trace JSON with one lane per core")->required();
  cmd->add_option("--graph", args->graph,
                  "fixed-latency task graph giving the dependencies (Wait Schedule / Predecessor)");
  cmd->add_option("--time-unit", args->time_unit, "unit of ts and dur in the trace (default us)")
      ->check(CLI::IsMember({"us", "ns", "cycles"}));
  add_hardware_option(cmd, args->hardware, "clock for --time-unit cycles (default ascend910b1)");
  add_json_option(cmd, args->json);
  return [cmd, args]() { return *cmd ? analyze(*args) : -1; };
}

}  // namespace tilesim
