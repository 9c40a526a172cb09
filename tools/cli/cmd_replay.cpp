// tilesim replay <graph.json> [--hardware f] [--trace f] [--json [f]]
// Simulates a PyPTO fixed-latency task graph on tilesim's runtime model.
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "model/error.hpp"
#include "model/printable.hpp"
#include "sim/chrome_trace.hpp"
#include "sim/metrics.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/options.hpp"
#include "tools/formats/output_file.hpp"
#include "tools/formats/pypto_graph.hpp"
#include "tools/formats/run_config.hpp"
#include "tools/reports/report.hpp"
#include "tools/reports/timeline_report.hpp"

namespace tilesim {

namespace {

struct ReplayArgs {
  std::string graph;
  std::string hardware;
  std::string trace;
  std::string json;
  bool quiet = false;
  std::vector<std::string> set;
};

int replay(const ReplayArgs& a) {
  const auto hw_path =
      a.hardware.empty() ? default_hardware_path() : resolve_hardware_arg(a.hardware);
  check_outputs_not_inputs({{"--trace", a.trace}, {"--json", a.json}}, {a.graph, hw_path});
  const Hardware hw = load_hardware(hw_path, a.set);
  const PyptoGraph pg = load_pypto_graph(a.graph);
  for (const auto& w : pg.warnings) std::cerr << "tilesim: warning: " << w << "\n";
  SimOptions opt;
  opt.record_aicpu = !a.trace.empty();
  const SimResult sim = simulate_costed(pg.graph, pg.kind_costs, hw, opt);
  const Metrics m = compute_metrics(pg.graph, sim, hw);
  if (!a.trace.empty()) {
    write_file_atomically(
        a.trace, [&](std::ostream& out) { write_chrome_trace(out, pg.graph, sim, hw); },
        "the trace");
  }
  const auto names = simulated_core_names(sim);
  if (!a.json.empty()) {
    write_json(a.json, replay_json(pg, m, names, a.graph, hw.name));
  }
  if (a.json == "-" || a.quiet) return 0;
  std::string s = fmt::format("tilesim replay: {} on {}\n", a.graph, printable(hw.name));
  s += fmt::format("  {} tasks, {} edges, {} PSGs (funcName), {} task kinds, {} root function(s)\n",
                   m.tasks, m.edges, pg.graph.psg_names.size(), pg.graph.kinds.size(),
                   m.root_functions);
  if (pg.mixaicore_tasks || pg.hub_tasks)
    s += fmt::format("  MIXAICORE tasks on AIC cores: {}; HUB tasks (zero cycles, on AIV): {}\n",
                     pg.mixaicore_tasks, pg.hub_tasks);
  s += fmt::format("\n  gen_time_us     {:>12.3f}   (span of all tasks)\n", m.gen_time_us);
  s += kernel_time_line(m);
  s += timeline_tables(m, names, true);
  if (!a.trace.empty()) s += fmt::format("\n  trace written to {}\n", a.trace);
  if (!a.json.empty()) s += fmt::format("\n  JSON written to {}\n", a.json);
  std::cout << s;
  return 0;
}

}  // namespace

CommandAction add_replay_command(CLI::App& app) {
  auto args = std::make_shared<ReplayArgs>();
  auto* cmd = app.add_subcommand(
      "replay", "simulate a PyPTO fixed-latency task graph (tasks take their execTime)");
  cmd->add_option("graph", args->graph, "fixed-latency task graph (JSON array)")->required();
  add_hardware_option(cmd, args->hardware, "hardware file or shipped name (ascend910b4)");
  add_set_option(cmd, args->set);
  cmd->add_option("--trace", args->trace, "write a Chrome trace (chrome://tracing, Perfetto)")
      ->check(not_empty("file name"));
  add_json_option(cmd, args->json);
  add_quiet_option(cmd, args->quiet);
  add_max_tasks_option(cmd);
  return [cmd, args]() { return *cmd ? replay(*args) : -1; };
}

}  // namespace tilesim
