// Simulator throughput: simulated tasks per second on independent and dependent graphs, under the
// default ready order (oldest root first) and, for the dependent graph, FIFO.
#include <benchmark/benchmark.h>

#include "model/hardware.hpp"
#include "sim/simulator.hpp"

namespace tilesim {
namespace {

TaskGraph independent_graph(int64_t n) {
  TaskGraph g;
  g.add_psg("tile");
  TaskKind k;
  k.label = "tile";
  g.add_kind(k);
  // Loop chunks of 1024 tasks: root functions, as PyPTO lowers a loop.
  for (int64_t i = 0; i < n; ++i) g.add_task(0, static_cast<int32_t>(i / 1024));
  g.finalize();
  return g;
}

// Layers of 1000 tasks; each task depends on 3 tasks of the previous layer.
TaskGraph layered_graph(int64_t n) {
  TaskGraph g = independent_graph(0);
  const int64_t width = 1000;
  for (int64_t i = 0; i < n; ++i) g.add_task(0, static_cast<int32_t>(i / width));
  for (int64_t i = width; i < n; ++i) {
    const int64_t prev_layer = (i / width - 1) * width;
    for (int64_t j = 0; j < 3; ++j)
      g.add_edge(static_cast<int32_t>(prev_layer + (i * 7 + j * 13) % width),
                 static_cast<int32_t>(i));
  }
  g.finalize();
  return g;
}

std::vector<TaskCost> costs(const Hardware& hw) {
  TaskCost c;
  c.cycles = hw.ns_to_cycles(2000);
  c.gm_read_bytes = 64 * 1024;
  return {c};
}

void run(benchmark::State& state, const TaskGraph& g,
         ReadyOrder order = ReadyOrder::kOldestRootFirst) {
  const Hardware hw = load_hardware(default_hardware_path());
  const auto kc = costs(hw);
  SimOptions opt;
  opt.ready_order = order;
  for (auto _ : state) benchmark::DoNotOptimize(simulate_costed(g, kc, hw, opt).last_end);
  state.counters["tasks_per_s"] = benchmark::Counter(
      static_cast<double>(g.tasks.size()) * static_cast<double>(state.iterations()),
      benchmark::Counter::kIsRate);
  state.SetComplexityN(static_cast<int64_t>(g.tasks.size()));
}

void BM_IndependentTasks(benchmark::State& state) {
  run(state, independent_graph(state.range(0)));
}
void BM_LayeredTasks(benchmark::State& state) {
  run(state, layered_graph(state.range(0)));
}
void BM_LayeredTasksFifo(benchmark::State& state) {
  run(state, layered_graph(state.range(0)), ReadyOrder::kFifo);
}

BENCHMARK(BM_IndependentTasks)
    ->Arg(10'000)
    ->Arg(100'000)
    ->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond)
    ->Complexity(benchmark::oNLogN);
BENCHMARK(BM_LayeredTasks)
    ->Arg(10'000)
    ->Arg(100'000)
    ->Unit(benchmark::kMillisecond)
    ->Complexity(benchmark::oNLogN);
BENCHMARK(BM_LayeredTasksFifo)->Arg(100'000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tilesim

BENCHMARK_MAIN();
