// tilesim: the command-line entry point. Each subcommand is a thin layer over the libraries.
#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>

#include "model/error.hpp"
#include "sim/chrome_trace.hpp"
#include "tools/report.hpp"
#include "tools/run_config.hpp"
#include "tools/run_kernel.hpp"

namespace {

using namespace tilesim;

struct RunArgs {
  std::string config;
  std::string tile;
  int64_t loop = 0;
  std::string hardware;
  std::string trace;
  bool json = false;
};

int cmd_run(const RunArgs& a) {
  RunConfig rc = load_run_config(a.config);
  if (!a.tile.empty()) rc.spec.tile = parse_dims(a.tile, "--tile");
  if (a.loop > 0) rc.spec.loop_count = a.loop;
  if (!a.hardware.empty())
    rc.hardware = resolve_config_path(std::filesystem::current_path() / "x", a.hardware);
  const Hardware hw = load_hardware(rc.hardware);
  SimOptions opt;
  opt.record_aicpu = !a.trace.empty();
  const RunOutcome r = run_kernel(rc.spec, hw, opt);
  if (!a.trace.empty()) {
    std::ofstream out(a.trace);
    if (!out) throw Error(a.trace + ": cannot write trace file");
    write_chrome_trace(out, r.kernel.graph, r.sim, hw);
  }
  if (a.json) {
    nlohmann::json j = metrics_to_json(r.metrics);
    j["candidate"] = spec_to_json(rc.spec);
    j["hardware"] = hw.name;
    j["diagnostics"] = diagnostics_to_json(r.kernel.diag);
    if (!rc.measured.is_null()) j["measured"] = rc.measured;
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << metrics_table(rc.spec, hw, r.kernel.diag, r.metrics);
    if (!rc.measured.is_null())
      std::cout << "\n  measured (from the config): " << rc.measured.dump() << "\n";
    if (!a.trace.empty()) std::cout << "\n  trace written to " << a.trace << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tilesim: tile-shape and loop-count performance model for Ascend-style NPUs"};
  app.require_subcommand(1);
  RunArgs run;
  auto* run_cmd = app.add_subcommand("run", "simulate one kernel candidate from a run config");
  run_cmd->add_option("config", run.config, "run config (JSON)")->required();
  run_cmd->add_option("--tile", run.tile, "override the tile, e.g. 1,8192");
  run_cmd->add_option("--loop", run.loop, "override loop_count")->check(CLI::PositiveNumber);
  run_cmd->add_option("--hardware", run.hardware, "hardware file or shipped name (ascend910b4)");
  run_cmd->add_option("--trace", run.trace, "write a Chrome trace (chrome://tracing, Perfetto)");
  run_cmd->add_flag("--json", run.json, "print one JSON object instead of the table");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    if (*run_cmd) return cmd_run(run);
  } catch (const tilesim::Error& e) {
    std::cerr << "tilesim: error: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "tilesim: internal error: " << e.what() << "\n";
    return 3;
  }
  return 0;
}
