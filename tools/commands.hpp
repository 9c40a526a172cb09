#pragma once
// Each tilesim subcommand registers itself on the CLI app and returns the action to run when it
// was chosen. Errors are thrown as tilesim::Error; main turns them into one line and exit code 2.

#include <CLI/CLI.hpp>
#include <functional>

namespace tilesim {

using CommandAction = std::function<int()>;

// Registers `run`; the returned action is valid only if the subcommand was parsed.
CommandAction add_run_command(CLI::App& app);

}  // namespace tilesim
