// Replay throughput: PyPTO fixed-latency task graphs parsed and simulated, in tasks per second.
// Graphs are layered: layers of 1000 tasks, every task after the first layer depends on 3 tasks
// of the previous layer (fan-in 3); every fourth layer runs on AIC cores. Task i's taskId is i, or
// PyPTO's (device task << 32 | index in it) with device tasks of kDeviceTask tasks (the reader's
// general path: ids with gaps, looked up in a table, several root functions).
//
//   replay_bench                              the benchmarks (BM_ReplayFile: 10^6 tasks end to end)
//   replay_bench --write-graph FILE N [pypto] writes the N-task graph, for `tilesim replay FILE`
#include <benchmark/benchmark.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "model/hardware.hpp"
#include "sim/metrics.hpp"
#include "sim/simulator.hpp"
#include "tools/formats/pypto_graph.hpp"

namespace tilesim {
namespace {

constexpr int64_t kWidth = 1000;
constexpr int64_t kDeviceTask = 100'000;

// The fixed-latency JSON text of a layered graph of `n` tasks, one task per line.
std::string layered_graph_json(int64_t n, bool pypto_ids = false) {
  const auto id = [&](int64_t i) {
    return pypto_ids ? (i / kDeviceTask) << 32 | i % kDeviceTask : i;
  };
  std::vector<std::vector<int64_t>> succ(static_cast<size_t>(n));
  std::vector<int64_t> preds(static_cast<size_t>(n), 0);
  for (int64_t i = kWidth; i < n; ++i) {
    const int64_t prev_layer = (i / kWidth - 1) * kWidth;
    for (int64_t j = 0; j < 3; ++j) {
      succ[static_cast<size_t>(prev_layer + (i * 7 + j * 13) % kWidth)].push_back(id(i));
      ++preds[static_cast<size_t>(i)];
    }
  }
  std::string text = "[\n";
  for (int64_t i = 0; i < n; ++i) {
    const int64_t layer = i / kWidth;
    const bool cube = layer % 4 == 3;
    text += fmt::format(
        R"({{"taskId":{},"funcName":"{}","coreType":"{}","execTime":{},)"
        R"("remainingPredecessors":{},"successors":[{}]}})",
        id(i), cube ? "matmul" : "vec" + std::to_string(layer % 4), cube ? "AIC" : "AIV",
        2000 + 500 * (i % 3),  // three durations per function
        preds[static_cast<size_t>(i)], fmt::join(succ[static_cast<size_t>(i)], ","));
    text += i + 1 < n ? ",\n" : "\n";
  }
  return text + "]\n";
}

std::filesystem::path graph_file(int64_t n, bool pypto_ids = false) {
  const auto file = std::filesystem::temp_directory_path() /
                    fmt::format("tilesim_replay_bench_{}{}.json", n, pypto_ids ? "_pypto" : "");
  if (!std::filesystem::exists(file)) std::ofstream(file) << layered_graph_json(n, pypto_ids);
  return file;
}

void count(benchmark::State& state, int64_t tasks) {
  state.counters["tasks_per_s"] =
      benchmark::Counter(static_cast<double>(tasks) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}

// End to end, as `tilesim replay` does it: read the file, build the graph, simulate, metrics.
// range(1): PyPTO's taskIds (1) or the task indices (0).
void BM_ReplayFile(benchmark::State& state) {
  const auto file = graph_file(state.range(0), state.range(1) != 0);
  const Hardware hw = load_hardware(default_hardware_path());
  for (auto _ : state) {
    const PyptoGraph pg = load_pypto_graph(file);
    const SimResult sim = simulate_costed(pg.graph, pg.kind_costs, hw);
    benchmark::DoNotOptimize(compute_metrics(pg.graph, sim, hw).gen_time_us);
  }
  count(state, state.range(0));
}

// Reading only: JSON text -> validated TaskGraph and kind costs, on range(1) threads (0: every
// core).
void BM_ReplayParse(benchmark::State& state) {
  const std::string text = layered_graph_json(state.range(0));
  const auto threads = static_cast<int>(state.range(1));
  for (auto _ : state)
    benchmark::DoNotOptimize(pypto_graph_from_text(text, "bench", threads).graph.tasks.size());
  count(state, state.range(0));
}

// Simulation only, of the parsed graph.
void BM_ReplaySimulate(benchmark::State& state) {
  const PyptoGraph pg = pypto_graph_from_text(layered_graph_json(state.range(0)), "bench");
  const Hardware hw = load_hardware(default_hardware_path());
  for (auto _ : state)
    benchmark::DoNotOptimize(simulate_costed(pg.graph, pg.kind_costs, hw).last_end);
  count(state, state.range(0));
}

// Metrics only, of the simulated graph.
void BM_ReplayMetrics(benchmark::State& state) {
  const PyptoGraph pg = pypto_graph_from_text(layered_graph_json(state.range(0)), "bench");
  const Hardware hw = load_hardware(default_hardware_path());
  const SimResult sim = simulate_costed(pg.graph, pg.kind_costs, hw);
  for (auto _ : state) benchmark::DoNotOptimize(compute_metrics(pg.graph, sim, hw).gen_time_us);
  count(state, state.range(0));
}

// Parsing runs on several threads: rates are per second of wall time.
BENCHMARK(BM_ReplayFile)
    ->Args({100'000, 0})
    ->Args({1'000'000, 0})
    ->Args({1'000'000, 1})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReplayParse)
    ->Args({100'000, 1})
    ->Args({100'000, 0})
    ->Args({1'000'000, 1})
    ->Args({1'000'000, 0})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReplaySimulate)->Arg(100'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReplayMetrics)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tilesim

int main(int argc, char** argv) {
  if ((argc == 4 || (argc == 5 && std::strcmp(argv[4], "pypto") == 0)) &&
      std::strcmp(argv[1], "--write-graph") == 0) {
    std::ofstream(argv[2]) << tilesim::layered_graph_json(std::stoll(argv[3]), argc == 5);
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
