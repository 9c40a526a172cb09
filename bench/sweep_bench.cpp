// Sweep throughput: a 1000-candidate generated softmax (16, 16384) space (tile[0] in powers of
// two up to 16, tile[1] every multiple of 8 elements up to 1600), pre-check plus simulation, on
// 1 and 2 threads; and the shipped matmul sweep (configs/sweeps/matmul_spmd_6144_tiles_grid.json:
// 6144^3 fp16 catlass-style, L1 tile x L0 tile x swizzle x grid, 90 candidates of 1152 cube tasks
// each); and the shipped exhaustive softmax sweep (configs/sweeps/softmax_16x16384_exhaustive.json:
// 10,240 candidates, 3,942 simulated). Counter candidates_per_s is wall-clock candidates per
// second, s_per_candidate its inverse.
#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>

#include "model/hardware.hpp"
#include "tools/analyses/sweep.hpp"
#include "tools/formats/sweep_config.hpp"

namespace tilesim {
namespace {

// Runs the sweep once per iteration on state.range(0) threads; counts candidates per second.
void run_sweeps(benchmark::State& state, const SweepConfig& cfg, const Hardware& hw,
                const std::vector<Candidate>& candidates) {
  SweepOptions opt;
  opt.threads = static_cast<int>(state.range(0));
  size_t evaluated = 0;
  for (auto _ : state) {
    const SweepResult r = run_sweep(cfg, hw, opt, candidates);
    evaluated = r.ranking.size();
    benchmark::DoNotOptimize(evaluated);
  }
  state.counters["candidates_per_s"] = benchmark::Counter(
      static_cast<double>(candidates.size()) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
  state.counters["s_per_candidate"] = benchmark::Counter(
      static_cast<double>(candidates.size()) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
  state.counters["simulated"] = static_cast<double>(evaluated);
}

void BM_SoftmaxGeneratedSweep(benchmark::State& state) {
  const Hardware hw = load_hardware(default_hardware_path());
  const SweepConfig cfg = sweep_config_from_json(nlohmann::json::parse(R"({
    "op": "softmax", "shape": [16, 16384], "dtype": "fp32", "dim": 1,
    "candidates": {"generate_tiles": {"max": [16, 1600]}, "loop_counts": [1]}})"),
                                                 "sweep_bench");
  const auto candidates = expand_candidates(cfg, hw);
  if (candidates.size() != 1000) state.SkipWithError("the space is not 1000 candidates");
  run_sweeps(state, cfg, hw, candidates);
}

void BM_MatmulShippedSweep(benchmark::State& state) {
  const Hardware hw = load_hardware(default_hardware_path());
  const SweepConfig cfg =
      load_sweep_config(default_config_dir() / "sweeps" / "matmul_spmd_6144_tiles_grid.json");
  run_sweeps(state, cfg, hw, expand_candidates(cfg, hw));
}

void BM_SoftmaxExhaustiveSweep(benchmark::State& state) {
  const Hardware hw = load_hardware(default_hardware_path());
  const SweepConfig cfg =
      load_sweep_config(default_config_dir() / "sweeps" / "softmax_16x16384_exhaustive.json");
  run_sweeps(state, cfg, hw, expand_candidates(cfg, hw));
}

BENCHMARK(BM_MatmulShippedSweep)
    ->Arg(1)
    ->Arg(2)
    ->ArgName("threads")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK(BM_SoftmaxExhaustiveSweep)
    ->Arg(1)
    ->Arg(2)
    ->ArgName("threads")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK(BM_SoftmaxGeneratedSweep)
    ->Arg(1)
    ->Arg(2)
    ->ArgName("threads")
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace tilesim

BENCHMARK_MAIN();
