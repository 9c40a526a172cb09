// tilesim: the command-line entry point. Each subcommand lives in its own cmd_*.cpp.
// Exit codes: 0 done (--help and --version too), 2 bad input (usage errors included: the error
// and the command's usage line), 3 internal error.
#include <iostream>
#include <vector>

#include "model/error.hpp"
#include "tools/cli/commands.hpp"
#include "tools/reports/version.hpp"

namespace {

// The usage line of the subcommand being parsed when the error struck (the app's otherwise).
std::string usage_line(const CLI::App& app) {
  const CLI::App* cmd = &app;
  std::string name = app.get_name();
  // Down to the innermost subcommand parsed ("measurements from-msprof").
  while (!cmd->get_subcommands().empty()) {
    cmd = cmd->get_subcommands().back();
    name += " " + cmd->get_name();
  }
  std::string usage = CLI::Formatter().make_usage(cmd, name);
  while (!usage.empty() && usage.back() == '\n') usage.pop_back();
  return usage;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"tilesim: tile-shape and loop-count performance model for Ascend-style NPUs",
               "tilesim"};
  app.set_version_flag("--version", std::string("tilesim ") + tilesim::tilesim_version());
  app.require_subcommand(1);
  const std::vector<tilesim::CommandAction> commands = {
      tilesim::add_run_command(app),       tilesim::add_replay_command(app),
      tilesim::add_analyze_command(app),   tilesim::add_sweep_command(app),
      tilesim::add_calibrate_command(app), tilesim::add_rules_command(app),
      tilesim::add_validate_command(app),  tilesim::add_measurements_command(app),
      tilesim::add_merge_command(app),     tilesim::add_trace_pypto_command(app),
  };
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
    sub->set_version_flag("--version", std::string("tilesim ") + tilesim::tilesim_version());
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "tilesim: error: " << e.what() << "\n" << usage_line(app) << "\n";
    return 2;
  }
  try {
    for (const auto& action : commands)
      if (const int rc = action(); rc >= 0) {
        // The report on standard output is output too: a full disk or a closed pipe is an error.
        std::cout.flush();
        if (!std::cout) throw tilesim::Error("standard output: cannot write the report");
        return rc;
      }
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
