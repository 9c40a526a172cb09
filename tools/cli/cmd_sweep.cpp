// tilesim sweep <config.json> [-j N] [--csv [f]] [--json [f]] [--svg f] [--hardware f] [--top N]
//                             [--wide] [--quiet]
// An output file may be "-" (stdout, also --csv or --json without a file); the table then goes to
// stderr. Exit code 0 when some candidate was evaluated, 1 when every candidate was rejected, 2 on
// bad input.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
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

// SIGINT / SIGTERM during a sweep: the signal's number, for the sweep to stop between candidates
// (nothing is written yet, so every old output stays as it was).
std::atomic<bool> g_stop{false};
volatile std::sig_atomic_t g_signal = 0;

extern "C" void on_stop_signal(int sig) {
  g_signal = sig;
  g_stop.store(true, std::memory_order_relaxed);
}

// Installs the handlers for the sweep's lifetime and restores the previous ones.
class StopOnSignals {
 public:
  StopOnSignals() {
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int_);
    sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopOnSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopOnSignals(const StopOnSignals&) = delete;
  StopOnSignals& operator=(const StopOnSignals&) = delete;

  // 128 + the signal, with one line on stderr, when a signal came; else 0.
  static int stopped() {
    if (!g_stop.load(std::memory_order_relaxed)) return 0;
    const int sig = g_signal;
    std::cerr << fmt::format("tilesim: sweep stopped by {}; nothing written (old outputs kept)\n",
                             sig == SIGTERM ? "SIGTERM" : "SIGINT");
    return 128 + sig;
  }

 private:
  struct sigaction old_int_ {
  }, old_term_{};
};

static_assert(std::atomic<bool>::is_always_lock_free, "the signal handler sets it");

struct SweepArgs {
  std::string config;
  int threads = 0;
  std::string csv, json, svg;
  std::string hardware;
  size_t top = 25;
  bool wide = false;
  bool quiet = false;
  int64_t max_candidates = 0;  // 0: the config's constraints.max_candidates
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
  const std::vector<std::pair<std::string, std::string>> outputs = {
      {"--csv", a.csv}, {"--json", a.json}, {"--svg", a.svg}};
  check_outputs_not_inputs(outputs, {a.config});
  SweepConfig cfg = load_sweep_config(a.config);
  if (!a.hardware.empty()) cfg.hardware = resolve_hardware_arg(a.hardware);
  check_outputs_not_inputs(outputs, {cfg.hardware});
  if (a.max_candidates > 0) cfg.constraints.max_candidates = a.max_candidates;
  const Hardware hw = load_hardware(cfg.hardware);
  const StopOnSignals signals;
  const auto candidates = expand_candidates(cfg, hw);
  SweepResult res;
  const auto start = std::chrono::steady_clock::now();
  {
    Progress progress(static_cast<int64_t>(candidates.size()));
    SweepOptions opt;
    opt.threads = a.threads;
    opt.progress = &progress.done;
    opt.cancel = &g_stop;
    try {
      res = run_sweep(cfg, hw, opt, candidates);
    } catch (const SweepCancelled&) {
    }
  }
  if (const int code = StopOnSignals::stopped()) return code;
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
  add_max_tasks_option(cmd);
  cmd->add_option("--max-candidates", args->max_candidates,
                  "the largest candidate space accepted (default: the config's "
                  "constraints.max_candidates, else 100000)")
      ->check(integer_at_least(1));
  return [cmd, args]() { return *cmd ? sweep(*args) : -1; };
}

}  // namespace tilesim
