#pragma once
// What `tilesim sweep` and `tilesim merge` print and write for a ranked sweep: the table (on
// stderr when an output took stdout), --csv, --json, --svg, then a closing note. One writer, so
// merged shards give the unsharded sweep's outputs byte for byte.

#include <CLI/CLI.hpp>
#include <string>

#include "model/hardware.hpp"
#include "tools/analyses/sweep.hpp"
#include "tools/formats/sweep_config.hpp"

namespace tilesim {

struct SweepOutputArgs {
  std::string csv, json, svg, svg_map;
  size_t top = 25;
  bool wide = false;
  bool quiet = false;
};

// --csv, --json, --svg, --top, --wide, --quiet.
void add_sweep_output_options(CLI::App* cmd, SweepOutputArgs& a);
// Refuses an output path that names `input` (the config or a shard).
void check_sweep_outputs(const SweepOutputArgs& a, const std::string& input);
// Refuses, before any work, --svg-map over candidates that vary along fewer than two axes.
void check_sweep_outputs_fit(const SweepOutputArgs& a, const std::vector<Candidate>& candidates);
// The table and the files; `note` (one line, e.g. the candidates per second) closes the text.
void write_sweep_outputs(const SweepOutputArgs& a, const SweepConfig& cfg, const Hardware& hw,
                         const SweepResult& res, const std::string& note);
// The exit code of a ranked sweep: 0 when a candidate is recommended, else 1, with one line on
// stderr (quiet or not) naming `origin` and the refusals by class.
int sweep_exit_code(const SweepResult& res, const std::string& origin);

}  // namespace tilesim
