// reference_doc cli | configs | configs-json | schema-kinds | schema:KIND: prints
// docs/reference/cli.md, docs/reference/configs.md, the config objects' key lists as JSON
// (scripts/reference_docs.py checks them against the readers), the schema kinds, or one kind's
// JSON Schema (docs/reference/schemas/KIND.schema.json).
#include <algorithm>
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
  } else if (page.rfind("schema:", 0) == 0) {
    const std::string kind = page.substr(7);
    const auto kinds = tilesim::schema_kinds();
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) {
      std::cerr << "reference_doc: no schema kind '" << kind << "'\n";
      return 2;
    }
    std::cout << tilesim::config_schema(kind).dump(2) << "\n";
  } else if (page == "schema-kinds") {
    for (const auto& k : tilesim::schema_kinds()) std::cout << k << "\n";
  } else {
    std::cerr << "usage: reference_doc cli | configs | configs-json | schema-kinds | schema:KIND\n";
    return 2;
  }
  return 0;
}
