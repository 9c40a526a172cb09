// tilesim sweep <config.json> [-j N] [--csv [f]] [--json [f]] [--svg f] [--hardware f] [--top N]
//                             [--wide] [--quiet]
// An output file may be "-" (stdout, also --csv or --json without a file); the table then goes to
// stderr. Exit code 0 when some candidate was evaluated, 1 when every candidate was rejected, 2 on
// bad input.
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <iostream>
#include <memory>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "model/error.hpp"
#include "tools/analyses/sweep.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/options.hpp"
#include "tools/formats/output_file.hpp"
#include "tools/formats/run_config.hpp"
#include "tools/reports/sweep_report.hpp"

namespace tilesim {

namespace {

struct SweepArgs {
  std::string config;
  int threads = 0;
  std::string csv, json, svg;
  std::string hardware;
  size_t top = 25;
  bool wide = false;
  bool quiet = false;
};

// Draws a progress bar on stderr when it is a terminal and the sweep has run for a second.
class Progress {
 public:
  explicit Progress(int64_t total) : total_(total) {
    if (!isatty(STDERR_FILENO) || total <= 1) return;
    thread_ = std::thread([this] { loop(); });
  }
  ~Progress() { stop(); }
  void stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }
  std::atomic<int64_t> done{0};

 private:
  void loop() {
    const auto start = std::chrono::steady_clock::now();
    bool drawn = false;
    std::unique_lock<std::mutex> lock(mu_);
    while (!cv_.wait_for(lock, std::chrono::milliseconds(100), [this] { return done_; })) {
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (s < 1.0) continue;
      draw(s);
      drawn = true;
    }
    if (drawn) {
      draw(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
      std::cerr << "\n";
    }
  }
  void draw(double seconds) const {
    const int64_t n = done.load(std::memory_order_relaxed);
    const int width = 40;
    const int filled = static_cast<int>(width * n / total_);
    std::cerr << fmt::format("\r  [{}{}] {}/{} candidates  {:.1f} s", std::string(filled, '#'),
                             std::string(width - filled, ' '), n, total_, seconds)
              << std::flush;
  }
  int64_t total_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
};

int sweep(const SweepArgs& a) {
  for (const auto& [option, path] : {std::pair<const char*, const std::string*>{"--csv", &a.csv},
                                     {"--json", &a.json},
                                     {"--svg", &a.svg}})
    if (!path->empty()) check_not_an_input(*path, option, a.config);
  SweepConfig cfg = load_sweep_config(a.config);
  if (!a.hardware.empty()) cfg.hardware = resolve_hardware_arg(a.hardware);
  const Hardware hw = load_hardware(cfg.hardware);
  const auto candidates = expand_candidates(cfg, hw);
  SweepResult res;
  const auto start = std::chrono::steady_clock::now();
  {
    Progress progress(static_cast<int64_t>(candidates.size()));
    SweepOptions opt;
    opt.threads = a.threads;
    opt.progress = &progress.done;
    res = run_sweep(cfg, hw, opt, candidates);
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const bool stdout_taken = a.csv == "-" || a.json == "-" || a.svg == "-";
  if (!a.quiet) {
    const std::string table = sweep_table(cfg, hw, res, a.top, a.wide);
    (stdout_taken ? std::cerr : std::cout) << table;
  }
  if (!a.csv.empty()) write_output(a.csv, sweep_csv(cfg, hw, res), "CSV");
  if (!a.json.empty()) write_json(a.json, sweep_json(cfg, hw, res));
  if (!a.svg.empty()) write_output(a.svg, sweep_svg(cfg, hw, res), "SVG");
  if (!a.quiet) {
    std::ostream& note = stdout_taken ? std::cerr : std::cout;
    note << fmt::format("\n  {} candidates in {:.2f} s ({:.0f}/s)\n", candidates.size(), seconds,
                        static_cast<double>(candidates.size()) / std::max(seconds, 1e-9));
    for (const auto& [path, what] : {std::pair{a.csv, "CSV"}, {a.json, "JSON"}, {a.svg, "SVG"}})
      if (!path.empty() && path != "-") note << "  " << what << " written to " << path << "\n";
  }
  return res.recommended ? 0 : 1;
}

}  // namespace

CommandAction add_sweep_command(CLI::App& app) {
  auto args = std::make_shared<SweepArgs>();
  auto* cmd = app.add_subcommand(
      "sweep",
      "evaluate a candidate space of tiles and loop counts from a sweep config; rank, "
      "zone and recommend");
  cmd->add_option("config", args->config, "sweep config (JSON)")->required();
  add_jobs_option(cmd, args->threads);
  add_csv_option(cmd, args->csv, "every candidate");
  add_json_option(cmd, args->json);
  cmd->add_option("--svg", args->svg, "write a plot of modeled time along the swept axis");
  add_hardware_option(cmd, args->hardware, "hardware file or shipped name (ascend910b4)");
  cmd->add_option("--top", args->top, "evaluated candidates in the table (0: all)")
      ->check(integer_at_least(0));
  cmd->add_flag("--wide", args->wide,
                "every column in the table (the default fits 120 columns; CSV and JSON keep all)");
  cmd->add_flag("-q,--quiet", args->quiet, "no table on the terminal");
  return [cmd, args]() { return *cmd ? sweep(*args) : -1; };
}

}  // namespace tilesim
