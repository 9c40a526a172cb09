#pragma once
// docs/reference/cli.md: every command's usage and options, read from the CLI11 declarations the
// commands make (tools/cli/cmd_*.cpp), so the page cannot disagree with `tilesim CMD --help`.
// tests/reference_docs_test.cpp checks the checked-in page is current.

#include <CLI/CLI.hpp>
#include <string>

namespace tilesim {

// The page for an app whose commands are registered (register_commands).
std::string cli_reference_markdown(const CLI::App& app);

}  // namespace tilesim
