// Replay throughput: PyPTO fixed-latency task graphs (JSON) parsed and simulated, in tasks per
// second. Graphs are layered: layers of 1000 tasks, every task after the first layer depends on
// 3 tasks of the previous layer (fan-in 3); every fourth layer runs on AIC cores.
#include <benchmark/benchmark.h>

#include <string>

#include <nlohmann/json.hpp>

#include "model/hardware.hpp"
#include "sim/simulator.hpp"
#include "tools/formats/pypto_graph.hpp"

namespace tilesim {
namespace {

constexpr int64_t kWidth = 1000;

// The fixed-latency JSON text of a layered graph of `n` tasks.
std::string layered_graph_json(int64_t n) {
  nlohmann::json doc = nlohmann::json::array();
  std::vector<std::vector<int64_t>> succ(static_cast<size_t>(n));
  std::vector<int64_t> preds(static_cast<size_t>(n), 0);
  for (int64_t i = kWidth; i < n; ++i) {
    const int64_t prev_layer = (i / kWidth - 1) * kWidth;
    for (int64_t j = 0; j < 3; ++j) {
      succ[static_cast<size_t>(prev_layer + (i * 7 + j * 13) % kWidth)].push_back(i);
      ++preds[static_cast<size_t>(i)];
    }
  }
  for (int64_t i = 0; i < n; ++i) {
    const int64_t layer = i / kWidth;
    const bool cube = layer % 4 == 3;
    doc.push_back({{"taskId", i},
                   {"funcName", cube ? "matmul" : "vec" + std::to_string(layer % 4)},
                   {"coreType", cube ? "AIC" : "AIV"},
                   {"execTime", 2000 + 500 * (i % 3)},  // three durations per function
                   {"remainingPredecessors", preds[static_cast<size_t>(i)]},
                   {"successors", succ[static_cast<size_t>(i)]}});
  }
  return doc.dump();
}

void count(benchmark::State& state, int64_t tasks) {
  state.counters["tasks_per_s"] =
      benchmark::Counter(static_cast<double>(tasks) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}

// End to end, as `tilesim replay` does it: parse the JSON text, build the graph, simulate.
void BM_Replay(benchmark::State& state) {
  const std::string text = layered_graph_json(state.range(0));
  const Hardware hw = load_hardware(default_hardware_path());
  for (auto _ : state) {
    const PyptoGraph pg = pypto_graph_from_json(nlohmann::json::parse(text), "bench");
    benchmark::DoNotOptimize(simulate_costed(pg.graph, pg.kind_costs, hw).last_end);
  }
  count(state, state.range(0));
}

// Reading only: JSON text -> validated TaskGraph and kind costs.
void BM_ReplayParse(benchmark::State& state) {
  const std::string text = layered_graph_json(state.range(0));
  for (auto _ : state)
    benchmark::DoNotOptimize(
        pypto_graph_from_json(nlohmann::json::parse(text), "bench").graph.tasks.size());
  count(state, state.range(0));
}

// Simulation only, of the parsed graph.
void BM_ReplaySimulate(benchmark::State& state) {
  const PyptoGraph pg =
      pypto_graph_from_json(nlohmann::json::parse(layered_graph_json(state.range(0))), "bench");
  const Hardware hw = load_hardware(default_hardware_path());
  for (auto _ : state)
    benchmark::DoNotOptimize(simulate_costed(pg.graph, pg.kind_costs, hw).last_end);
  count(state, state.range(0));
}

BENCHMARK(BM_Replay)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReplayParse)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ReplaySimulate)->Arg(10'000)->Arg(100'000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tilesim

BENCHMARK_MAIN();
