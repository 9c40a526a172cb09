// tilesim: the command-line entry point. Each subcommand lives in its own cmd_*.cpp.
#include <iostream>
#include <vector>

#include "model/error.hpp"
#include "tools/cli/commands.hpp"

int main(int argc, char** argv) {
  CLI::App app{"tilesim: tile-shape and loop-count performance model for Ascend-style NPUs"};
  app.require_subcommand(1);
  const std::vector<tilesim::CommandAction> commands = {
      tilesim::add_run_command(app),       tilesim::add_replay_command(app),
      tilesim::add_analyze_command(app),   tilesim::add_sweep_command(app),
      tilesim::add_calibrate_command(app), tilesim::add_rules_command(app),
  };
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    for (const auto& action : commands)
      if (const int rc = action(); rc >= 0) return rc;
  } catch (const tilesim::Error& e) {  // the user's input: exit 2
    std::cerr << "tilesim: error: " << e.what() << "\n";
    return 2;
  } catch (const tilesim::InternalError& e) {  // a broken invariant, a bug in tilesim: exit 3
    std::cerr << "tilesim: internal error: " << e.what() << "\n";
    return 3;
  } catch (const std::exception& e) {
    std::cerr << "tilesim: internal error: " << e.what() << "\n";
    return 3;
  }
  return 0;
}
