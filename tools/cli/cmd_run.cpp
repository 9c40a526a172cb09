// tilesim run <config.json> [--tile a,b,..] [--loop N] [--hardware f] [--trace f] [--json [f]]
//             [--export-graph f]
#include <fstream>
#include <iostream>
#include <memory>

#include "model/error.hpp"
#include "sim/chrome_trace.hpp"
#include "sim/span_path.hpp"
#include "tools/analyses/run_kernel.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/options.hpp"
#include "tools/formats/output_file.hpp"
#include "tools/formats/pypto_graph.hpp"
#include "tools/formats/run_config.hpp"
#include "tools/reports/report.hpp"

namespace tilesim {

namespace {

struct RunArgs {
  std::string config;
  std::string tile;
  int64_t loop = 0;
  std::string hardware;
  std::string trace;
  std::string export_graph;
  std::string json;
  bool quiet = false;
  std::vector<std::string> set;
};

int run(const RunArgs& a) {
  RunConfig rc = load_run_config(a.config);
  KernelSpec spec = run_spec(rc, a.tile.empty() ? Dims{} : parse_dims(a.tile, "--tile"));
  if (a.loop > 0) override_loop_count(spec, a.loop, "--loop");
  if (!a.hardware.empty()) rc.hardware = resolve_hardware_arg(a.hardware);
  check_outputs_not_inputs(
      {{"--json", a.json}, {"--trace", a.trace}, {"--export-graph", a.export_graph}},
      {a.config, rc.hardware});
  const Hardware hw = load_hardware(rc.hardware, a.set);
  SimOptions opt = rc.options;
  opt.record_aicpu = !a.trace.empty();
  const RunOutcome r = run_config_kernel(a.config, spec, hw, opt);
  if (!a.trace.empty()) {
    write_file_atomically(
        a.trace, [&](std::ostream& out) { write_chrome_trace(out, r.kernel.graph, r.sim, hw); },
        "the trace");
  }
  if (!a.export_graph.empty()) write_pypto_graph(a.export_graph, r.kernel.graph, r.sim);
  if (!a.json.empty())
    write_json(a.json, run_json(spec, hw, r.kernel.diag, r.metrics, rc.measured));
  if (a.json != "-" && !a.quiet) {
    // A PyPTO run's span along its critical path: its tasks and the runtime's hand-offs.
    const SpanPath path = r.kernel.graph.runtime == RuntimeStyle::kMpmd
                              ? span_path(r.kernel.graph, r.sim)
                              : SpanPath{};
    std::cout << metrics_table(spec, hw, r.kernel.diag, r.metrics, &path);
    if (!rc.measured.is_null())
      std::cout << "\n  measured (from the config): " << rc.measured.dump() << "\n";
    if (!a.trace.empty()) std::cout << "\n  trace written to " << a.trace << "\n";
    if (!a.json.empty()) std::cout << "\n  JSON written to " << a.json << "\n";
    if (!a.export_graph.empty())
      std::cout << "\n  task graph (fixed-latency format) written to " << a.export_graph
                << (spec.partition == PartitionStyle::kAscendC
                        ? " (an ascendc run: its pinned per-core tasks replay through the MPMD "
                          "scheduler)\n"
                    : spec.partition == PartitionStyle::kSpmd
                        ? " (an spmd run: its blocks replay through the MPMD scheduler)\n"
                        : "\n");
  }
  return 0;
}

}  // namespace

CommandAction add_run_command(CLI::App& app) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand("run", "simulate one kernel candidate from a run config");
  cmd->add_option("config", args->config, "run config (JSON)")->required();
  cmd->add_option("--tile", args->tile, "override the tile, e.g. 1,8192")->check(not_empty("tile"));
  cmd->add_option("--loop", args->loop, "override loop_count")->check(integer_at_least(1));
  add_hardware_option(cmd, args->hardware, "hardware file or shipped name (ascend910b4)");
  add_set_option(cmd, args->set);
  cmd->add_option("--trace", args->trace, "write a Chrome trace (chrome://tracing, Perfetto)")
      ->check(not_empty("file name"));
  cmd->add_option("--export-graph", args->export_graph,
                  "write the task graph with modeled task times (PyPTO fixed-latency JSON)")
      ->check(not_empty("file name"));
  add_json_option(cmd, args->json);
  add_quiet_option(cmd, args->quiet);
  add_max_tasks_option(cmd);
  return [cmd, args]() { return *cmd ? run(*args) : -1; };
}

}  // namespace tilesim
