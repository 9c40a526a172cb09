// tilesim rules [--hardware f] [--compare f]... [--only id]... [--json [f]] [--csv [f]]
//               [--chapters f] [--lang en|zh] [-j N]
// Checks every rulebook claim against the model and measures the rulebook's thresholds; with
// --compare, the same on other hardware descriptions, side by side. Exit code 0 when the checks
// ran (a claim that fails is a finding, not an error), 2 on bad input.
#include <iostream>
#include <memory>

#include "model/error.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/options.hpp"
#include "tools/formats/run_config.hpp"
#include "tools/reports/rule_chapters.hpp"
#include "tools/reports/rules_lang.hpp"
#include "tools/reports/rules_report.hpp"

namespace tilesim {

namespace {

struct RulesArgs {
  std::string hardware = "ascend910b1";
  std::vector<std::string> compare;
  std::string json, csv, chapters;
  std::string lang = "en";
  int threads = 0;
  std::vector<std::string> only;
  bool quiet = false;
  std::vector<std::string> set;
};

int rules_command(const RulesArgs& a) {
  check_outputs_not_inputs({{"--json", a.json}, {"--csv", a.csv}, {"--chapters", a.chapters}}, {});
  std::vector<std::string> names = {a.hardware};
  names.insert(names.end(), a.compare.begin(), a.compare.end());
  check_rules_lang(a.lang);
  std::vector<RulesResult> results = check_rules_on(names, RulesOptions{a.threads, a.only}, a.set);
  localize_rules(results, a.lang);
  if (!a.json.empty()) write_json(a.json, rules_json(results));
  if (!a.csv.empty()) write_output(a.csv, rules_csv(results), "CSV");
  if (!a.chapters.empty())
    write_output(a.chapters, rule_chapters(results.front(), a.lang), "Markdown chapters");
  if (a.json == "-" || a.csv == "-" || a.chapters == "-" || a.quiet) return 0;
  std::cout << format_rules(results);
  for (const auto& [path, what] :
       {std::pair{a.json, "JSON"}, {a.csv, "CSV"}, {a.chapters, "rules 4 and 5 chapters"}})
    if (!path.empty()) std::cout << "\n  " << what << " written to " << path << "\n";
  return 0;
}

}  // namespace

CommandAction add_rules_command(CLI::App& app) {
  auto args = std::make_shared<RulesArgs>();
  CLI::App* cmd = app.add_subcommand(
      "rules", "check the rulebook's claims against the model and measure its thresholds");
  add_hardware_option(cmd, args->hardware, "hardware file or shipped name")->capture_default_str();
  add_set_option(cmd, args->set);
  cmd->add_option("--compare", args->compare,
                  "another hardware file or shipped name to compare with (repeatable)");
  cmd->add_option("--only", args->only,
                  "check only these claims: an id or a prefix such as rule2 (repeatable)");
  add_json_option(cmd, args->json);
  add_csv_option(cmd, args->csv, "the verdict table (one row per hardware and claim)");
  cmd->add_option("--chapters", args->chapters,
                  "write rules 4 and 5 as the rulebook's chapters (Markdown: each claim with its "
                  "verdict, threshold, reason and evidence; '-': standard output)");
  cmd->add_option("--lang", args->lang,
                  "the claims' language: en, or zh (the rulebook's own; the figures are the run's)")
      ->capture_default_str();
  add_jobs_option(cmd, args->threads);
  add_quiet_option(cmd, args->quiet);
  return [cmd, args]() { return *cmd ? rules_command(*args) : -1; };
}

}  // namespace tilesim
