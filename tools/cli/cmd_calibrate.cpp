// tilesim calibrate <measurements.json> [--hardware f] [--free key[:min:max]]... [--output f]
//                   [--json [f]] [--csv [f]] [-j N] [--max-iter N] [--fd-step h] [--digits N]
//                   [--fresh-lowering]
// Fits the free hardware parameters to the measurements (least squares in log space), prints the
// fit table and writes the calibrated hardware file with --output. Exit code 0 when the fit ran
// (unidentifiable parameters are reported and held), 1 when it is degenerate (the report is
// printed, the hardware file is not written, unless --allow-degenerate), 2 on bad input.
#include <unistd.h>

#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "model/error.hpp"
#include "tools/calibration/calibration_job.hpp"
#include "tools/calibration/measurements.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/options.hpp"
#include "tools/formats/run_config.hpp"

namespace tilesim {

namespace {

struct CalibrateArgs {
  std::string measurements;
  std::string hardware;
  std::vector<std::string> free;
  std::string output;
  std::string json, csv;
  int threads = 0;
  int max_iter = CalibrationOptions::default_fit_options().max_iterations;
  double fd_step = CalibrationOptions::default_fit_options().fd_step;
  int digits = 4;
  bool fresh_lowering = false;
  bool allow_degenerate = false;
  bool quiet = false;
};

int calibrate_command(const CalibrateArgs& a) {
  {
    const std::filesystem::path hw_path = a.hardware.empty()
                                              ? load_measurements(a.measurements).hardware
                                              : resolve_hardware_arg(a.hardware);
    check_outputs_not_inputs({{"--output", a.output}, {"--json", a.json}, {"--csv", a.csv}},
                             {a.measurements, hw_path});
  }
  CalibrationJob job;
  job.measurements = a.measurements;
  job.hardware = a.hardware;
  job.free = a.free;
  CalibrationOptions& opt = job.options;
  opt.threads = a.threads;
  opt.digits = a.digits;
  opt.reuse_lowering = !a.fresh_lowering;
  opt.fit.max_iterations = a.max_iter;
  opt.fit.fd_step = a.fd_step;
  if (!a.quiet && isatty(STDERR_FILENO))  // the fit's progress: on a terminal, unless -q
    opt.fit.on_iteration = [](int it, double cost) {
      std::cerr << fmt::format("\r  calibrate: iteration {}, cost {:.6g}   ", it, cost)
                << std::flush;
    };
  const CalibrationOutcome out = run_calibration(job);
  const CalibrationResult& r = out.result;
  if (opt.fit.on_iteration) std::cerr << "\r" << std::string(60, ' ') << "\r" << std::flush;

  const std::string refusal = a.allow_degenerate ? "" : degenerate_fit_refusal(r);
  const bool write_hardware = !a.output.empty() && refusal.empty();
  if (write_hardware)
    write_output(a.output, out.calibrated_hardware.dump(2) + "\n", "the calibrated hardware file");
  if (!a.json.empty()) {
    nlohmann::json j = calibration_to_json(r);
    if (write_hardware) j["output"] = a.output;
    write_json(a.json, j);
  }
  if (!a.csv.empty()) write_output(a.csv, calibration_csv(r), "CSV");
  if (a.json != "-" && a.csv != "-" && !a.quiet) {
    std::cout << calibration_report(r);
    if (write_hardware) std::cout << "\n  calibrated hardware written to " << a.output << "\n";
    for (const auto& [path, what] : {std::pair{a.json, "JSON"}, {a.csv, "CSV"}})
      if (!path.empty()) std::cout << "  " << what << " written to " << path << "\n";
  }
  if (const std::string barely = fit_barely_helps(r); !barely.empty() && refusal.empty())
    std::cerr << "tilesim calibrate: warning: " << a.measurements << ": " << barely << "\n";
  if (refusal.empty()) return 0;
  std::cerr << "tilesim calibrate: " << a.measurements << ": " << refusal
            << (a.output.empty() ? "" : "; " + a.output + " not written")
            << " (--allow-degenerate keeps the fit)\n";
  return 1;
}

}  // namespace

CommandAction add_calibrate_command(CLI::App& app) {
  auto args = std::make_shared<CalibrateArgs>();
  auto* cmd = app.add_subcommand(
      "calibrate", "fit hardware parameters to measurements (least squares in log space)");
  cmd->add_option("measurements", args->measurements, "measurements file (JSON)")->required();
  add_hardware_option(cmd, args->hardware,
                      "hardware file or shipped name to start from (default: the file's)");
  cmd->add_option("--free", args->free,
                  "a parameter that may move, key or key:min:max (repeatable; replaces the "
                  "file's list)")
      ->allow_extra_args(false);
  cmd->add_option("-o,--output", args->output,
                  "write the calibrated hardware file, for --hardware of any tilesim command")
      ->check(not_empty("file name"));
  add_max_tasks_option(cmd);
  add_json_option(cmd, args->json);
  add_csv_option(cmd, args->csv, "one row per measurement");
  add_jobs_option(cmd, args->threads);
  cmd->add_option("--max-iter", args->max_iter, "Levenberg-Marquardt iteration limit")
      ->check(integer_in(1, 100000));
  cmd->add_option("--fd-step", args->fd_step,
                  "finite-difference step (relative for log-scaled parameters)")
      ->check(positive_finite(0.5));
  cmd->add_option("--digits", args->digits,
                  "significant digits of the fitted values (0: full precision)")
      ->check(integer_at_least(0));
  cmd->add_flag("--allow-degenerate", args->allow_degenerate,
                "keep a degenerate fit (exit 0, --output written) instead of refusing it (exit 1)");
  add_quiet_option(cmd, args->quiet);
  cmd->add_flag("--fresh-lowering", args->fresh_lowering,
                "lower every run at every fit point (slow; the default lowers each run once)");
  return [cmd, args]() { return *cmd ? calibrate_command(*args) : -1; };
}

}  // namespace tilesim
