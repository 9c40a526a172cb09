// tilesim validate [FILES...] [-j N] [--csv [f]] [--json [f]] [--svg DIR] [--hardware f] [--quiet]
//                  [--sensitivity] [--sensitivity-keys K,K] [--sensitivity-step F]
// Runs measured datasets (default: every file in configs/validation/) and scores the model per
// sweep (tools/calibration/validate.hpp). Exit code 0 when every dataset is within its own
// tolerances, 1 when some dataset falls outside them, 2 on bad input.
#include <filesystem>
#include <iostream>
#include <memory>

#include "model/error.hpp"
#include "model/hardware.hpp"
#include "tools/calibration/validate.hpp"
#include "tools/calibration/validate_sensitivity.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/options.hpp"
#include "tools/cli/progress.hpp"
#include "tools/formats/run_config.hpp"
#include "tools/reports/validate_report.hpp"

namespace tilesim {

namespace {

struct ValidateArgs {
  std::vector<std::string> files;
  int threads = 0;
  std::string csv, json, svg_dir, svg_file;
  std::string hardware;
  bool quiet = false;
  bool sensitivity = false;
  std::string sensitivity_keys;
  double sensitivity_step = 0.5;
  std::vector<std::string> set;
};

int validate_command(const ValidateArgs& a) {
  if (!a.svg_file.empty())
    throw Error("--svg " + a.svg_file +
                ": --svg is one file in every command, and validate draws one plot per sweep: "
                "give the folder with --svg-dir DIR");
  std::vector<std::filesystem::path> inputs(a.files.begin(), a.files.end());
  if (inputs.empty()) inputs = validation_files(default_config_dir() / "validation");
  if (!a.hardware.empty()) inputs.push_back(resolve_hardware_arg(a.hardware));
  check_outputs_not_inputs({{"--json", a.json}, {"--csv", a.csv}}, inputs);
  const bool sensitivity = a.sensitivity || !a.sensitivity_keys.empty();
  const std::vector<std::string> keys =
      sensitivity ? sensitivity_keys(a.sensitivity_keys) : std::vector<std::string>{};
  ValidateProgress counted;
  ValidationResult res;
  {
    const ProgressBar progress("points", counted.done, counted.total, a.quiet);
    res = validate_files(a.files, a.hardware, a.threads, a.set, &counted);
  }
  const bool stdout_taken = a.csv == "-" || a.json == "-";
  std::ostream& text = stdout_taken ? std::cerr : std::cout;
  if (!a.quiet) text << validate_table(res);
  std::vector<DatasetSensitivity> sens;
  if (sensitivity) {
    sens = validation_sensitivity(res, keys, a.sensitivity_step, a.threads);
    if (!a.quiet) text << sensitivity_table(res, sens, a.sensitivity_step, 5);
  }
  if (!a.csv.empty()) write_output(a.csv, validate_csv(res), "CSV");
  if (!a.json.empty()) {
    nlohmann::json doc = validate_json(res);
    if (sensitivity) doc["sensitivity"] = sensitivity_json(res, sens, a.sensitivity_step);
    write_json(a.json, doc);
  }
  if (!a.svg_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(a.svg_dir, ec);
    if (ec) throw Error(a.svg_dir + ": cannot create the SVG folder (" + ec.message() + ")");
    const auto svgs = validate_svgs(res);
    for (const auto& [name, svg] : svgs)
      check_outputs_not_inputs({{"--svg-dir", (std::filesystem::path(a.svg_dir) / name).string()}},
                               inputs);
    for (const auto& [name, svg] : svgs)
      write_output((std::filesystem::path(a.svg_dir) / name).string(), svg, "SVG");
    if (!a.quiet) text << "\n  " << svgs.size() << " SVG plots written to " << a.svg_dir << "\n";
  }
  if (!a.quiet)
    for (const auto& [path, what] : {std::pair{a.csv, "CSV"}, {a.json, "JSON"}})
      if (!path.empty() && path != "-") text << "  " << what << " written to " << path << "\n";
  return res.within() ? 0 : 1;
}

}  // namespace

CommandAction add_validate_command(CLI::App& app) {
  auto args = std::make_shared<ValidateArgs>();
  auto* cmd = app.add_subcommand(
      "validate",
      "run measured datasets and score the model per sweep (rank correlation, MAPE, argmin); "
      "exit 1 when a dataset falls outside its own tolerances");
  cmd->add_option("files", args->files,
                  "validation datasets (JSON; default: every file in configs/validation/)");
  add_jobs_option(cmd, args->threads);
  add_csv_option(cmd, args->csv, "one row per point");
  add_json_option(cmd, args->json);
  cmd->add_option("--svg-dir", args->svg_dir,
                  "write one measured-versus-modeled plot per sweep into folder DIR")
      ->check(not_empty("folder name"))
      ->type_name("DIR");
  cmd->add_option("--svg", args->svg_file, "(one file elsewhere: validate takes --svg-dir DIR)")
      ->group("");
  add_hardware_option(cmd, args->hardware,
                      "run every dataset on this hardware file or shipped name instead of its own");
  add_set_option(cmd, args->set);
  add_quiet_option(cmd, args->quiet);
  cmd->add_flag("--sensitivity", args->sensitivity,
                "also move each real-valued hardware parameter -50% and +50%, one at a time, and "
                "show per dataset the ones that move its error most (2 runs per parameter)");
  cmd->add_option("--sensitivity-keys", args->sensitivity_keys,
                  "--sensitivity over these parameters only (comma-separated keys)")
      ->type_name("KEYS");
  cmd->add_option("--sensitivity-step", args->sensitivity_step,
                  "the fraction --sensitivity moves each parameter by (default 0.5)")
      ->type_name("F")
      ->check(CLI::Range(0.0, 1.0).description(""));
  add_max_tasks_option(cmd);
  cmd->footer(
      "Rank correlation: Spearman's rho with times within 3% of each other tied. A side whose "
      "points are all one tie group scores 1 when the other side is too (both call every point "
      "equal) and 0 otherwise (one side orders what the other calls equal); fewer than 2 points: "
      "n/a. A sweep's known_miss holds it to its own lower floor, printed with its reason.");
  return [cmd, args]() { return *cmd ? validate_command(*args) : -1; };
}

}  // namespace tilesim
