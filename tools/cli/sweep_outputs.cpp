#include "tools/cli/sweep_outputs.hpp"

#include <fmt/format.h>

#include <iostream>

#include "tools/cli/options.hpp"
#include "tools/formats/output_file.hpp"
#include "tools/reports/sweep_report.hpp"

namespace tilesim {

void add_sweep_output_options(CLI::App* cmd, SweepOutputArgs& a) {
  add_csv_option(cmd, a.csv, "every candidate");
  add_json_option(cmd, a.json);
  cmd->add_option("--svg", a.svg, "write a plot of modeled time along the swept axis")
      ->check(not_empty("file name"));
  cmd->add_option("--svg-map", a.svg_map,
                  "write a heat map of modeled time over two swept axes (tile x loop count, grid "
                  "x sub-tile or block, or two tile dims)")
      ->check(not_empty("file name"));
  cmd->add_option("--top", a.top, "evaluated candidates in the table (0: all)")
      ->check(integer_at_least(0));
  cmd->add_flag("--wide", a.wide,
                "every column in the table (the default fits 120 columns; CSV and JSON keep all)");
  add_quiet_option(cmd, a.quiet);
}

void check_sweep_outputs(const SweepOutputArgs& a, const std::string& input) {
  for (const auto& [option, path] : {std::pair<const char*, const std::string*>{"--csv", &a.csv},
                                     {"--json", &a.json},
                                     {"--svg", &a.svg},
                                     {"--svg-map", &a.svg_map}})
    if (!path->empty()) check_not_an_input(*path, option, input);
}

void check_sweep_outputs_fit(const SweepOutputArgs& a, const std::vector<Candidate>& candidates) {
  if (!a.svg_map.empty()) heat_map_axes(candidates);
}

void write_sweep_outputs(const SweepOutputArgs& a, const SweepConfig& cfg, const Hardware& hw,
                         const SweepResult& res, const std::string& note) {
  const bool stdout_taken = a.csv == "-" || a.json == "-" || a.svg == "-" || a.svg_map == "-";
  if (!a.quiet) {
    const std::string table = sweep_table(cfg, hw, res, a.top, a.wide);
    (stdout_taken ? std::cerr : std::cout) << table;
  }
  if (!a.csv.empty()) write_output(a.csv, sweep_csv(cfg, hw, res), "CSV");
  if (!a.json.empty()) write_json(a.json, sweep_json(cfg, hw, res));
  if (!a.svg.empty()) write_output(a.svg, sweep_svg(cfg, hw, res), "SVG");
  if (!a.svg_map.empty()) write_output(a.svg_map, sweep_heat_map_svg(cfg, hw, res), "SVG map");
  if (!a.quiet) {
    std::ostream& out = stdout_taken ? std::cerr : std::cout;
    out << "\n  " << note << "\n";
    for (const auto& [path, what] :
         {std::pair{a.csv, "CSV"}, {a.json, "JSON"}, {a.svg, "SVG"}, {a.svg_map, "SVG map"}})
      if (!path.empty() && path != "-") out << "  " << what << " written to " << path << "\n";
  }
}

int sweep_exit_code(const SweepResult& res, const std::string& origin) {
  if (res.recommended) return 0;
  std::string classes;
  for (const auto& [kind, count] : res.rejected_by_class)
    classes += fmt::format("{}{} {}", classes.empty() ? "" : ", ", kind, count);
  std::cerr << fmt::format(
      "tilesim: {}: every candidate was refused ({} of them: {}); --csv lists each reason\n",
      origin, res.candidates.size(), classes);
  return 1;
}

}  // namespace tilesim
