// tilesim sweep <config.json> [-j N] [--csv [f]] [--json [f]] [--svg f] [--hardware f] [--top N]
//                             [--wide] [--quiet] [--shard K/N -o f]
// An output file may be "-" (stdout, also --csv or --json without a file); the table then goes to
// stderr. Exit code 0 when some candidate was evaluated, 1 when every candidate was rejected, 2 on
// bad input. With --shard K/N the sweep evaluates shard K of N and writes a shard file (-o) for
// `tilesim merge` (exit 0). SIGINT / SIGTERM stop it between candidates: exit 128 + the signal,
// nothing written.
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
#include "tools/analyses/sweep_shard.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/options.hpp"
#include "tools/cli/progress.hpp"
#include "tools/cli/sweep_outputs.hpp"
#include "tools/formats/output_file.hpp"
#include "tools/formats/run_config.hpp"
#include "tools/formats/sweep_objective.hpp"

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
  std::string hardware;
  SweepOutputArgs out;
  std::string shard;             // K/N
  std::string output;            // the shard file
  int64_t max_candidates = 0;    // 0: the config's constraints.max_candidates
  std::string objective;         // empty: the config's (default kernel_time_us)
  std::vector<std::string> set;  // hardware what-ifs
};

// Shard K/N: its candidates only, written as a shard file.
int sweep_shard(const SweepArgs& a, const SweepJob& job) {
  const ShardSpec spec = parse_shard(a.shard, "--shard");
  check_shard_count(spec, job.candidates.size(), "--shard");
  const StopOnSignals signals;
  const auto start = std::chrono::steady_clock::now();
  SweepShard shard;
  {
    std::atomic<int64_t> done{0},
        total{static_cast<int64_t>(shard_indices(job.candidates.size(), spec).size())};
    const ProgressBar progress("candidates", done, total, a.out.quiet);
    SweepOptions opt;
    opt.threads = a.threads;
    opt.progress = &done;
    opt.cancel = &g_stop;
    try {
      shard = run_shard(job, spec, opt);
    } catch (const SweepCancelled&) {
    }
  }
  if (const int code = StopOnSignals::stopped()) return code;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  write_output(a.output, shard_to_json(shard).dump() + "\n", "the shard file");
  if (!a.out.quiet && a.output != "-")
    std::cout << fmt::format(
        "  shard {}/{} of {}: {} of {} candidates in {:.2f} s; written to {} (merge all {} with "
        "tilesim merge)\n",
        spec.k, spec.n, a.config, shard.results.size(), shard.total, seconds, a.output, spec.n);
  return 0;
}

int sweep(const SweepArgs& a) {
  check_sweep_outputs(a.out, a.config);
  if (a.shard.empty() != a.output.empty())
    throw Error(a.shard.empty() ? "-o " + a.output + ": a shard file needs --shard K/N"
                                : "--shard " + a.shard + ": give the shard file with -o FILE");
  if (!a.shard.empty()) {
    for (const auto& [option, path] :
         {std::pair<const char*, const std::string*>{"--csv", &a.out.csv},
          {"--json", &a.out.json},
          {"--svg", &a.out.svg},
          {"--svg-map", &a.out.svg_map}})
      if (!path->empty())
        throw Error(std::string(option) + ": a shard has no ranking; tilesim merge writes " +
                    option + " from all the shards");
    check_not_an_input(a.output, "-o", a.config);
  }
  // --max-candidates goes into the config document, so every shard of it agrees.
  nlohmann::json doc = read_json_file(a.config, "sweep config");
  if (a.max_candidates > 0 && doc.is_object() && doc.contains("candidates") &&
      doc["candidates"].is_object())
    doc["candidates"]["constraints"]["max_candidates"] = a.max_candidates;
  // So does --objective: the shards and their merge rank by it.
  if (!a.objective.empty() && doc.is_object()) doc["objective"] = a.objective;
  const SweepJob job = sweep_job(doc, a.config, a.hardware, a.set);
  check_outputs_not_inputs({{"--csv", a.out.csv},
                            {"--json", a.out.json},
                            {"--svg", a.out.svg},
                            {"--svg-map", a.out.svg_map}},
                           {a.config, job.cfg.hardware});
  check_sweep_outputs_fit(a.out, job.candidates);
  if (!a.shard.empty()) {
    check_not_an_input(a.output, "-o", job.cfg.hardware.string());
    return sweep_shard(a, job);
  }
  SweepResult res;
  const StopOnSignals signals;
  const auto start = std::chrono::steady_clock::now();
  {
    std::atomic<int64_t> done{0}, total{static_cast<int64_t>(job.candidates.size())};
    const ProgressBar progress("candidates", done, total, a.out.quiet);
    SweepOptions opt;
    opt.threads = a.threads;
    opt.progress = &done;
    opt.cancel = &g_stop;
    try {
      res = run_sweep(job.cfg, job.hw, opt, job.candidates);
    } catch (const SweepCancelled&) {
    }
  }
  if (const int code = StopOnSignals::stopped()) return code;
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  write_sweep_outputs(
      a.out, job.cfg, job.hw, res,
      fmt::format("{} candidates in {:.2f} s ({:.0f}/s)", job.candidates.size(), seconds,
                  static_cast<double>(job.candidates.size()) / std::max(seconds, 1e-9)));
  return sweep_exit_code(res, a.config);
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
  add_sweep_output_options(cmd, args->out);
  add_hardware_option(cmd, args->hardware, "hardware file or shipped name (ascend910b4)");
  add_set_option(cmd, args->set);
  cmd->add_option("--shard", args->shard,
                  "evaluate only shard K of N (candidates i with i % N == K - 1) and write a "
                  "shard file for tilesim merge (with -o)")
      ->type_name("K/N");
  cmd->add_option("-o,--output", args->output,
                  "write the shard file (with --shard), for tilesim merge")
      ->check(not_empty("file name"));
  add_max_tasks_option(cmd);
  cmd->add_option("--max-candidates", args->max_candidates,
                  "the largest candidate space accepted (default: the config's "
                  "constraints.max_candidates, else 100000)")
      ->check(integer_at_least(1));
  cmd->add_option("--objective", args->objective,
                  "what ranks the candidates (default: the config's \"objective\", else "
                  "kernel_time_us, launch to end)")
      ->check(CLI::IsMember(objective_names()));
  return [cmd, args]() { return *cmd ? sweep(*args) : -1; };
}

}  // namespace tilesim
