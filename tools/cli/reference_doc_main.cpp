// reference_doc cli | configs | configs-json: prints docs/reference/cli.md,
// docs/reference/configs.md, or the config objects' key lists as JSON (scripts/reference_docs.py
// checks them against the readers).
#include <iostream>
#include <string>

#include "tools/cli/cli_reference.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/config_reference.hpp"

int main(int argc, char** argv) {
  const std::string page = argc == 2 ? argv[1] : "";
  if (page == "cli") {
    CLI::App app{"", "tilesim"};
    tilesim::register_commands(app);
    std::cout << tilesim::cli_reference_markdown(app);
  } else if (page == "configs") {
    std::cout << tilesim::config_reference_markdown();
  } else if (page == "configs-json") {
    std::cout << tilesim::config_objects_json().dump(1) << "\n";
  } else {
    std::cerr << "usage: reference_doc cli | configs | configs-json\n";
    return 2;
  }
  return 0;
}
