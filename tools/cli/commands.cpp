#include "tools/cli/commands.hpp"

namespace tilesim {

std::vector<CommandAction> register_commands(CLI::App& app) {
  app.description("tilesim: tile-shape and loop-count performance model for Ascend-style NPUs");
  app.require_subcommand(1);
  return {
      add_run_command(app),         add_replay_command(app),       add_analyze_command(app),
      add_sweep_command(app),       add_calibrate_command(app),    add_rules_command(app),
      add_validate_command(app),    add_measurements_command(app), add_merge_command(app),
      add_trace_pypto_command(app), add_trace_triton_command(app),
  };
}

}  // namespace tilesim
