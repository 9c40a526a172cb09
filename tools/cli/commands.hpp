#pragma once
// Each tilesim subcommand registers itself on the CLI app and returns the action to run when it
// was chosen. Errors are thrown as tilesim::Error; main turns them into one line and exit code 2.

#include <CLI/CLI.hpp>
#include <functional>
#include <vector>

namespace tilesim {

using CommandAction = std::function<int()>;

// Registers `run`; the returned action is valid only if the subcommand was parsed.
CommandAction add_run_command(CLI::App& app);
// `replay`: simulate a PyPTO fixed-latency task graph (tools/cli/cmd_replay.cpp).
CommandAction add_replay_command(CLI::App& app);
// `analyze`: PyPTO swimlane metrics of a Chrome trace (tools/cli/cmd_analyze.cpp).
CommandAction add_analyze_command(CLI::App& app);
// `sweep`: evaluate, rank and zone a candidate space from a sweep config (tools/cli/cmd_sweep.cpp).
CommandAction add_sweep_command(CLI::App& app);
// `merge`: the shard files of one sweep into its ranked result (tools/cli/cmd_merge.cpp).
CommandAction add_merge_command(CLI::App& app);
// `calibrate`: fit hardware parameters to measurements (tools/cli/cmd_calibrate.cpp).
CommandAction add_calibrate_command(CLI::App& app);
// `rules`: the rulebook's claims checked against the model, thresholds measured
// (tools/cli/cmd_rules.cpp).
CommandAction add_rules_command(CLI::App& app);
// `validate`: measured datasets run and scored per sweep (tools/cli/cmd_validate.cpp).
CommandAction add_validate_command(CLI::App& app);
// `measurements from-msprof | from-swimlane`: board profiles to measurements
// (tools/cli/cmd_measurements.cpp).
CommandAction add_measurements_command(CLI::App& app);
// `trace-pypto`: a PyPTO kernel file traced into a tile program (tools/cli/cmd_trace_pypto.cpp).
CommandAction add_trace_pypto_command(CLI::App& app);
// `trace-triton`: a Triton(-Ascend) kernel's launch traced into an spmd run config (same file).
CommandAction add_trace_triton_command(CLI::App& app);

// Every command, in the order `tilesim --help` lists them, with the app's description: what the
// tilesim executable parses and docs/reference/cli.md lists (tools/cli/commands.cpp).
std::vector<CommandAction> register_commands(CLI::App& app);

}  // namespace tilesim
