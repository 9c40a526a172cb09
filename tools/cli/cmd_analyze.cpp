// tilesim analyze <trace.json> [--graph graph.json] [--time-unit us|ns|cycles] [--hardware f]
//                 [--json [f]]
// tilesim analyze <trace.json | op_summary.csv> --compare RUN_CONFIG [--op-name N] [--skip-first K]
// PyPTO's swimlane metrics of a trace: tilesim's own or a board swimlane; with --compare, the
// board profile (a swimlane, or an msprof op_summary CSV) side by side with the model's run of
// the config.
#include <iostream>
#include <memory>
#include <optional>

#include <fmt/format.h>

#include "model/error.hpp"
#include "model/hardware.hpp"
#include "tools/analyses/run_kernel.hpp"
#include "tools/calibration/board_compare.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/options.hpp"
#include "tools/formats/msprof_op_summary.hpp"
#include "tools/formats/pypto_graph.hpp"
#include "tools/formats/run_config.hpp"
#include "tools/formats/swimlane.hpp"
#include "tools/reports/board_compare_report.hpp"
#include "tools/reports/timeline_report.hpp"

namespace tilesim {

namespace {

struct AnalyzeArgs {
  std::string trace;
  std::string graph;
  std::string time_unit = "us";
  std::string hardware;
  std::string json;
  std::string compare;
  std::string op_name;
  std::vector<std::string> match;
  int64_t skip_first = 0;
  bool quiet = false;
  std::vector<std::string> set;
};

bool is_csv(const std::string& file) {
  return std::filesystem::path(file).extension() == ".csv";
}

// The board profile next to the model's run of the config.
int compare(const AnalyzeArgs& a, double units_per_us) {
  const CompareOutcome out = compare_profile({a.trace, a.compare, a.hardware, a.set, units_per_us,
                                              a.graph, a.op_name, a.match, a.skip_first});
  for (const auto& w : out.warnings) std::cerr << "tilesim: warning: " << w << "\n";
  const BoardComparison& c = out.comparison;
  if (!a.json.empty()) write_json(a.json, board_comparison_json(out, a.compare));
  if (a.json == "-" || a.quiet) return 0;
  std::string s = fmt::format("tilesim analyze --compare: {} on {} (simulated) vs {}\n", a.compare,
                              out.hardware_name, c.board_source);
  s += board_comparison_table(c);
  if (!a.json.empty()) s += fmt::format("\n  JSON written to {}\n", a.json);
  std::cout << s;
  return 0;
}

int analyze(const AnalyzeArgs& a) {
  check_outputs_not_inputs({{"--json", a.json}}, {a.trace, a.graph, a.compare});
  if (!a.compare.empty()) return compare(a, trace_units_per_us(a.time_unit, a.hardware));
  if (is_csv(a.trace))
    throw Error(a.trace +
                ": an msprof op_summary CSV has no per-core lanes to analyze; compare it with a "
                "run config: --compare CONFIG");
  if (!a.set.empty())
    throw Error("--set " + a.set.front() +
                ": --set applies to analyze --compare only (a what-if changes the model's run; a "
                "trace's clock for --time-unit cycles is --hardware's)");
  if (!a.op_name.empty() || !a.match.empty() || a.skip_first)
    throw Error("--op-name, --match and --skip-first select msprof rows: they go with --compare");
  std::optional<PyptoGraph> graph;
  if (!a.graph.empty()) graph = load_pypto_graph(a.graph);
  const SwimlaneTrace trace = load_swimlane(a.trace, trace_units_per_us(a.time_unit, a.hardware));
  SwimlaneAnalysis an = analyze_swimlane(trace, graph ? &*graph : nullptr);
  if (graph)
    an.warnings.insert(an.warnings.begin(), graph->warnings.begin(), graph->warnings.end());
  for (const auto& w : an.warnings) std::cerr << "tilesim: warning: " << w << "\n";
  if (!a.json.empty()) {
    write_json(a.json, analyze_json(an, trace, a.trace, graph ? a.graph : ""));
  }
  if (a.json == "-" || a.quiet) return 0;
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
  add_hardware_option(cmd, args->hardware,
                      "clock for --time-unit cycles (default ascend910b1); with --compare, the "
                      "hardware to simulate on (default the config's)");
  cmd->add_option("--compare", args->compare,
                  "a run config: the trace (a board swimlane, or an msprof op_summary .csv) side "
                  "by side with the model's run of it, per metric: simulated, board, diff %");
  add_set_option(cmd, args->set)
      ->description(
          "with --compare: a hardware what-if, this parameter at this value (repeatable)");
  cmd->add_option("--op-name", args->op_name,
                  "with an op_summary CSV: the kernel (Op Name) to compare (needed when it has "
                  "several)");
  cmd->add_option("--match", args->match,
                  "with an op_summary CSV: only rows whose COLUMN has TEXT (COLUMN=TEXT, "
                  "repeatable)");
  cmd->add_option("--skip-first", args->skip_first,
                  "with an op_summary CSV: warm-up launches to drop (default 0)")
      ->check(integer_at_least(0));
  add_json_option(cmd, args->json);
  add_quiet_option(cmd, args->quiet);
  return [cmd, args]() { return *cmd ? analyze(*args) : -1; };
}

}  // namespace tilesim
