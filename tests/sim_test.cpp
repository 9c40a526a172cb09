// sim/: the event simulation against closed-form expectations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "model/dma_cost.hpp"
#include "model/error.hpp"
#include "sim/chrome_trace.hpp"
#include "sim/dma_attribution.hpp"
#include "sim/l2_residency.hpp"
#include "sim/launch_cost.hpp"
#include "sim/metrics.hpp"
#include "sim/pypto_runtime.hpp"
#include "sim/shared_bandwidth.hpp"
#include "sim/simulator.hpp"
#include "sim/span_path.hpp"
#include "test_support.hpp"
#include "tools/analyses/run_kernel.hpp"
#include "tools/formats/run_config.hpp"
#include "tools/formats/sweep_config.hpp"

namespace tilesim {
namespace {

using test::default_hw;
using test::ideal_runtime_hw;

// A kind that only loads (or only stores) `repeat` times one instruction of bursts x burst_bytes.
TaskKind dma_kind(DmaDir dir, int64_t bursts, int64_t burst_bytes, int64_t repeat) {
  const bool read = dir == DmaDir::kRead;
  TaskKind k;
  k.label = read ? "load" : "store";
  TileStep st;
  (read ? st.loads : st.stores).push_back(DmaOp{dir, bursts, burst_bytes, 0});
  st.repeat = repeat;
  k.steps.push_back(st);
  k.buffers.push_back({read ? "in" : "out", bursts * burst_bytes,
                       read ? BufferRole::kInput : BufferRole::kOutput, MemSpace::kUb});
  return k;
}

TaskKind load_kind(int64_t bursts, int64_t burst_bytes, int64_t repeat = 1) {
  return dma_kind(DmaDir::kRead, bursts, burst_bytes, repeat);
}

// z = x + y over `repeat` fp16 tiles of `tile` bytes at buffer depth `depth`: two loads, one vector
// add and one store per iteration.
TaskKind add_kind(int64_t tile, int64_t repeat, int depth) {
  TaskKind k;
  k.label = "add";
  k.buffer_count = depth;
  TileStep st;
  st.loads = {DmaOp{DmaDir::kRead, 1, tile, 0}, DmaOp{DmaDir::kRead, 1, tile, 0}};
  st.vec.push_back(VecOp{VecClass::kSimple, DType::kFp16, 1, 1, tile / 2});
  st.stores.push_back(DmaOp{DmaDir::kWrite, 1, tile, 0});
  st.repeat = repeat;
  k.steps.push_back(st);
  k.buffers = {{"x", tile, BufferRole::kInput, MemSpace::kUb},
               {"y", tile, BufferRole::kInput, MemSpace::kUb},
               {"z", tile, BufferRole::kOutput, MemSpace::kUb}};
  return k;
}

// A graph of `n` tasks of one fixed-latency kind (no GM traffic).
TaskGraph fixed_graph(int n, CoreType core = CoreType::kAiv) {
  TaskGraph g;
  g.add_psg("fixed");
  TaskKind k;
  k.label = "fixed";
  k.core = core;
  g.add_kind(k);
  for (int i = 0; i < n; ++i) g.add_task(0, 0);
  return g;
}

std::vector<TaskCost> fixed_cost(double cycles) {
  TaskCost c;
  c.cycles = cycles;
  return {c};
}

// A graph given its successor lists (as the PyPTO reader builds them) is the graph its edges
// build; lists that are not increasing, or point outside the graph, are refused.
TEST(TaskGraph, SuccessorListsGivenEqualEdgesAdded) {
  auto three = [] {
    TaskGraph g;
    g.add_kind(TaskKind{});
    for (int i = 0; i < 3; ++i) g.add_task(0, 0);
    return g;
  };
  TaskGraph by_edges = three();
  by_edges.add_edge(1, 2);
  by_edges.add_edge(0, 2);
  by_edges.add_edge(0, 1);
  by_edges.finalize();
  TaskGraph by_lists = three();
  by_lists.finalize({0, 2, 3, 3}, {1, 2, 2});
  for (int32_t t = 0; t < 3; ++t) {
    EXPECT_EQ(std::vector<int32_t>(by_lists.succ_begin(t), by_lists.succ_end(t)),
              std::vector<int32_t>(by_edges.succ_begin(t), by_edges.succ_end(t)));
    EXPECT_EQ(by_lists.indegree(t), by_edges.indegree(t));
  }
  EXPECT_EQ(by_lists.indegree(2), 2);
  EXPECT_THROW(three().finalize({0, 2, 3, 3}, {2, 1, 2}), InternalError);  // not increasing
  EXPECT_THROW(three().finalize({0, 1, 1, 1}, {0}), InternalError);        // self-edge
  EXPECT_THROW(three().finalize({0, 1, 1, 1}, {3}), InternalError);        // outside
  EXPECT_THROW(three().finalize({0, 1, 1}, {1}), InternalError);           // offsets short
  EXPECT_THROW(three().finalize({0, 2, 1, 2}, {1, 2}), InternalError);     // offsets decrease
}

TEST(Simulator, LoneDmaEqualsItsFormula) {
  Hardware hw = default_hw();
  hw.gm.hbm_queue_ns = 0;  // the pipeline's formula; its wait in HBM's queue: HbmQueue.*
  TaskGraph g;
  g.runtime = RuntimeStyle::kSpmd;
  g.add_psg("copy");
  g.add_kind(load_kind(64, 2048));
  g.add_task(0, 0, 0);
  g.finalize();
  const SimResult r = simulate(g, hw);
  const double expected = hw.dma.read.issue_cycles + 64 * hw.dma.read.burst_cycles +
                          64.0 * 2048 / hw.dma.read.peak_bytes_per_cycle +
                          hw.dma.read.latency_cycles;
  EXPECT_NEAR(r.last_end - r.first_start, expected, 1e-9 * expected);
}

TEST(Simulator, EqualTasksTakeCeilWavesWithoutOverheads) {
  const Hardware hw = ideal_runtime_hw();
  for (int n : {1, 47, 48, 49, 100, 480}) {
    TaskGraph g = fixed_graph(n);
    g.finalize();
    const SimResult r = simulate_costed(g, fixed_cost(1000), hw);
    const double waves = std::ceil(n / 48.0);
    EXPECT_NEAR(r.last_end - r.first_start, waves * 1000, 1e-9) << n << " tasks";
  }
}

TEST(Simulator, EqualTasksPayBoundedSchedulingCosts) {
  const Hardware hw = default_hw();
  const double d = hw.ns_to_cycles(10000);  // 10 us tasks
  const int n = 480;
  TaskGraph g = fixed_graph(n);
  g.finalize();
  const SimResult r = simulate_costed(g, fixed_cost(d), hw);
  const double waves = std::ceil(n / 48.0);
  const double span = r.last_end - r.first_start;
  // Each core holds a pending task, so back-to-back tasks are separated by the task gap only;
  // the first wave starts over one scheduler's serial dispatches.
  const double startup =
      12 * (hw.scheduler.dispatch_cycles) + hw.ns_to_cycles(hw.scheduler.notify_ns);
  EXPECT_GE(span, waves * d + (waves - 1) * hw.ns_to_cycles(hw.scheduler.task_gap_ns) - 1e-6);
  EXPECT_LE(span, waves * (d + hw.ns_to_cycles(hw.scheduler.task_gap_ns)) + startup);
}

TEST(Simulator, StreamingCoresSaturateHbmAndGoNoFaster) {
  Hardware hw = default_hw();
  hw.gm.hbm_queue_ns = 0;  // bandwidth sharing alone; with queueing: HbmQueue.*
  auto run = [&](int cores) {
    TaskGraph g;
    g.runtime = RuntimeStyle::kSpmd;
    g.add_psg("copy");
    g.add_kind(load_kind(64, 2048, 64));  // 8 MiB per core in 128 KiB instructions
    for (int c = 0; c < cores; ++c) g.add_task(0, 0, c);
    g.finalize();
    return simulate(g, hw);
  };
  const TaskCost alone = cost_task_kind(load_kind(64, 2048, 64), hw);
  // Two cores stay below HBM bandwidth: each runs at its engine rate (the second starts
  // kernel.core_start_ns after the first).
  const SimResult two = run(2);
  EXPECT_NEAR(two.last_end, alone.cycles + hw.ns_to_cycles(hw.kernel.core_start_ns),
              1e-6 * alone.cycles);
  // 48 cores demand more than HBM gives: time = bytes / bandwidth (within 1%), never less.
  const SimResult all = run(48);
  const double bytes = 48.0 * 64 * 64 * 2048;
  const double bound = bytes / hw.hbm_bytes_per_cycle();
  ASSERT_GT(bound, alone.cycles);
  EXPECT_GE(all.last_end, bound * (1 - 1e-9));
  EXPECT_NEAR(all.last_end, bound, 0.01 * bound);
}

TEST(Simulator, DependencyChainSerialises) {
  const int k = 20;
  const double d = 5000;
  for (bool ideal : {true, false}) {
    const Hardware hw = ideal ? ideal_runtime_hw() : default_hw();
    TaskGraph g = fixed_graph(k);
    for (int i = 0; i + 1 < k; ++i) g.add_edge(i, i + 1);
    g.finalize();
    const SimResult r = simulate_costed(g, fixed_cost(d), hw);
    const double span = r.last_end - r.first_start;
    // Each edge costs at least: completion notify, completion handling, one resolve (the last
    // predecessor's: no atomic), one dispatch and the notify to the core; polling adds at most
    // one read of each busy core (one here).
    const double edge =
        hw.ns_to_cycles(hw.scheduler.completion_notify_ns + hw.scheduler.notify_ns) +
        hw.scheduler.completion_cycles + hw.scheduler.resolve_last_cycles +
        hw.scheduler.dispatch_cycles;
    const double poll_loop = hw.ns_to_cycles(hw.scheduler.poll_ns);
    EXPECT_GE(span, k * d + (k - 1) * edge - 1e-6);
    EXPECT_LE(span, k * d + (k - 1) * (edge + poll_loop) + 1e-6);
    for (int i = 0; i + 1 < k; ++i) EXPECT_GE(r.tasks[i + 1].start, r.tasks[i].end);
  }
}

TaskGraph random_dag(int n, unsigned seed) {
  std::mt19937 rng(seed);
  TaskGraph g;
  g.add_psg("a");
  g.add_psg("b");
  for (int p = 0; p < 2; ++p) {
    TaskKind k = load_kind(16, 1024 * (p + 1), 4);
    k.psg = p;
    k.core = p == 0 ? CoreType::kAiv : CoreType::kAic;
    g.add_kind(k);
  }
  for (int i = 0; i < n; ++i) g.add_task(static_cast<int32_t>(rng() % 2), i / 50);
  for (int i = 1; i < n; ++i)
    for (int e = 0; e < 2; ++e) {
      const int from = static_cast<int>(rng() % static_cast<unsigned>(i));
      if (rng() % 3 == 0) g.add_edge(from, i);
    }
  g.finalize();
  return g;
}

TEST(Simulator, WaitsDecomposeOnEveryCore) {
  const Hardware hw = default_hw();
  const TaskGraph g = random_dag(600, 7);
  const SimResult r = simulate(g, hw);
  const Metrics m = compute_metrics(g, r, hw);
  int64_t executed = 0;
  for (const auto& c : m.per_core) {
    EXPECT_NEAR(c.total_wait_time_us, c.wait_schedule_time_us + c.wait_predecessor_time_us, 1e-9);
    EXPECT_GE(c.wait_schedule_time_us, -1e-9);
    EXPECT_GE(c.wait_predecessor_time_us, -1e-9);
    EXPECT_NEAR(c.core_total_work_time_us, c.busy_us + c.total_wait_time_us, 1e-6);
    executed += c.execute_task_num;
  }
  EXPECT_EQ(executed, 600);
  for (size_t i = 0; i < g.tasks.size(); ++i) {
    const bool aic = g.kinds[static_cast<size_t>(g.tasks[i].kind)].core == CoreType::kAic;
    EXPECT_EQ(r.core_types[static_cast<size_t>(r.tasks[i].core)] == CoreType::kAic, aic);
    for (const int32_t* s = g.succ_begin(static_cast<int32_t>(i));
         s != g.succ_end(static_cast<int32_t>(i)); ++s)
      EXPECT_GE(r.tasks[static_cast<size_t>(*s)].start, r.tasks[i].end);
  }
}

TEST(Simulator, Deterministic) {
  const Hardware hw = default_hw();
  const TaskGraph g = random_dag(800, 11);
  const SimResult a = simulate(g, hw), b = simulate(g, hw);
  ASSERT_EQ(a.tasks.size(), b.tasks.size());
  for (size_t i = 0; i < a.tasks.size(); ++i) {
    EXPECT_EQ(a.tasks[i].core, b.tasks[i].core);
    EXPECT_EQ(a.tasks[i].start, b.tasks[i].start);
    EXPECT_EQ(a.tasks[i].end, b.tasks[i].end);
  }
}

TEST(Simulator, StitchingReleasesDeviceTasksInOrder) {
  Hardware hw = ideal_runtime_hw();
  hw.control.device_task_submit_ns = 1000;
  hw.control.stitch_function_max_num = 4;
  TaskGraph g = fixed_graph(0);
  for (int r = 0; r < 10; ++r) g.add_task(0, r);  // 10 roots -> 3 device tasks
  g.finalize();
  const SimResult res = simulate_costed(g, fixed_cost(10), hw);
  const double submit = hw.ns_to_cycles(1000);
  EXPECT_NEAR(res.tasks[0].start, submit, 1e-9);
  EXPECT_NEAR(res.tasks[4].start, 2 * submit, 1e-9);
  EXPECT_NEAR(res.tasks[9].start, 3 * submit, 1e-9);
}

// PyPTO's scheduler thread count (device_common.h CalcSchAicpuNumByBlockDim): at most
// scheduler.max_threads, fewer when there are few AIC cores (one per scheduler.aic_per_thread);
// runtime.launch_sched_aicpu_num lowers the cap.
TEST(PyptoRuntime, SchedulerThreadsFollowPyptosFormula) {
  Hardware hw = default_hw();
  SimOptions opt;
  const std::vector<std::pair<int64_t, int64_t>> aic_threads = {{24, 3}, {20, 3}, {17, 3}, {16, 2},
                                                                {9, 2},  {8, 1},  {1, 1}};
  for (const auto& [aic, threads] : aic_threads) {
    hw.cores.aic = aic;
    EXPECT_EQ(scheduler_threads(hw, opt), threads) << aic << " AIC";
  }
  hw.cores.aic = 24;
  opt.launch_sched_aicpu_num = 2;
  EXPECT_EQ(scheduler_threads(hw, opt), 2);
  opt.launch_sched_aicpu_num = 7;  // PyPTO's range; the hardware's cap still holds
  EXPECT_EQ(scheduler_threads(hw, opt), 3);
  TaskGraph g = fixed_graph(1);
  g.finalize();
  EXPECT_EQ(simulate_costed(g, fixed_cost(10), default_hw()).scheduler_threads, 3);
}

// The 910B4 as its own chip: 20 AIC / 40 AIV under 3 scheduler threads (its 6 AICPUs less the
// control one, capped at 3 on dav-2201), each thread a consecutive block of each core type,
// PyPTO's split (aicore_manager.h UpdateAiCoreBlockIndexSection: cores / threads each, the first
// cores % threads threads one more): AIC 7/7/6, AIV 14/13/13; the index form the runtime uses
// gives that split for every core count and thread count up to 64 x 8.
TEST(PyptoRuntime, ScheduledCoreBlocksOfThe910B4) {
  const Hardware hw = load_hardware(shipped_hardware_path("ascend910b4"));
  ASSERT_EQ(hw.cores.aic, 20);
  ASSERT_EQ(hw.cores.aiv, 40);
  const int64_t threads = scheduler_threads(hw, SimOptions{});
  ASSERT_EQ(threads, 3);
  const auto sizes = [&](int64_t cores) {
    std::vector<int64_t> n(static_cast<size_t>(threads), 0);
    for (int64_t j = 0; j < cores; ++j)
      ++n[static_cast<size_t>(scheduler_of_core(j, cores, threads))];
    return n;
  };
  EXPECT_EQ(sizes(hw.cores.aic), (std::vector<int64_t>{7, 7, 6}));
  EXPECT_EQ(sizes(hw.cores.aiv), (std::vector<int64_t>{14, 13, 13}));
  for (int64_t cores = 1; cores <= 64; ++cores)
    for (int64_t n = 1; n <= std::min<int64_t>(cores, 8); ++n) {
      int64_t begin = 0;
      for (int64_t t = 0; t < n; ++t) {
        const int64_t size = cores / n + (t < cores % n ? 1 : 0);
        for (int64_t j = begin; j < begin + size; ++j)
          ASSERT_EQ(scheduler_of_core(j, cores, n), t) << cores << " cores, " << n << " threads";
        begin += size;
      }
    }
}

// One device task at a time: the next is released only once every task of the one before has
// been seen complete (device_sche.h RunTask's WAIT_TAIL_TASK_FINISH), even when it was built long
// before.
TEST(PyptoRuntime, DeviceTaskWaitsForThePreviousToDrain) {
  Hardware hw = ideal_runtime_hw();
  hw.scheduler.completion_notify_ns = 100;
  SimOptions opt;
  opt.stitch_function_max_num = 1;
  TaskGraph g = fixed_graph(0);
  for (int r = 0; r < 3; ++r) g.add_task(0, r);  // independent roots, one device task each
  g.finalize();
  const SimResult res = simulate_costed(g, fixed_cost(1000), hw, opt);
  const double notify = hw.ns_to_cycles(100);
  EXPECT_NEAR(res.tasks[0].start, 0, 1e-9);
  EXPECT_NEAR(res.tasks[1].start, 1000 + notify, 1e-9);
  EXPECT_NEAR(res.tasks[2].start, 2 * (1000 + notify), 1e-9);
  opt.stitch_function_max_num = 3;  // one device task: all three run at once
  const SimResult one = simulate_costed(g, fixed_cost(1000), hw, opt);
  for (const auto& t : one.tasks) EXPECT_NEAR(t.start, 0, 1e-9);
}

// A successor made ready by its last predecessor costs scheduler.resolve_last_cycles (no atomic
// decrement); every earlier edge costs scheduler.resolve_cycles.
TEST(PyptoRuntime, LastPredecessorSkipsTheAtomicDecrement) {
  Hardware hw = ideal_runtime_hw();
  hw.scheduler.resolve_cycles = 390;
  hw.scheduler.resolve_last_cycles = 100;
  TaskGraph g = fixed_graph(4);  // 0, 1, 2 -> 3
  for (int p = 0; p < 3; ++p) g.add_edge(p, 3);
  g.finalize();
  const SimResult res = simulate_costed(g, fixed_cost(1000), hw);
  EXPECT_NEAR(res.tasks[3].start, 1000 + 2 * 390 + 100, 1e-9);
}

// The polling loop reads only cores with a task outstanding: a lone busy core is read every
// scheduler.poll_ns, so its completion is seen at the first multiple of poll_ns after it ends.
TEST(PyptoRuntime, PollingVisitsOnlyBusyCores) {
  Hardware hw = ideal_runtime_hw();
  hw.scheduler.poll_ns = 100;
  hw.scheduler.handshake_cores = 0;  // polls from time 0: no hand-shake before the first task
  const double poll = hw.ns_to_cycles(100);
  TaskGraph g = fixed_graph(2);
  g.add_edge(0, 1);
  g.finalize();
  const SimResult res = simulate_costed(g, fixed_cost(1000), hw);
  EXPECT_NEAR(res.tasks[1].start, std::ceil(1000 / poll) * poll, 1e-6);
  // With every core of its thread busy, a completion waits up to a read of each of them.
  TaskGraph wide = fixed_graph(0);
  const int64_t per_thread = default_hw().cores.aiv / 3;
  for (int64_t i = 0; i < per_thread; ++i) wide.add_task(0, 0);
  wide.add_task(0, 0);
  wide.add_edge(0, static_cast<int32_t>(per_thread));
  wide.finalize();
  const SimResult busy = simulate_costed(wide, fixed_cost(1000), hw);
  const double start = busy.tasks[static_cast<size_t>(per_thread)].start;
  EXPECT_GE(start, 1000);
  EXPECT_LE(start, 1000 + static_cast<double>(per_thread) * poll + 1e-6);
}

// The span along its critical path (sim/span_path.hpp), in closed form: a chain of k equal
// tasks is k bodies and k - 1 hand-offs (each from a predecessor's end to its successor's start);
// a task held pending on a busy core is reached through that core's previous task (a turnaround,
// scheduler.task_gap_ns), the path starting at the run's first start; one task is its body. The
// parts always add up to the span.
TEST(SpanPath, BodiesHandOffsAndTurnaroundsAddUpToTheSpan) {
  const Hardware hw = default_hw();
  const double d = 1000;
  TaskGraph chain = fixed_graph(3);
  chain.add_edge(0, 1);
  chain.add_edge(1, 2);
  chain.finalize();
  SimResult r = simulate_costed(chain, fixed_cost(d), hw);
  SpanPath p = span_path(chain, r);
  EXPECT_EQ(p.tasks, 3);
  EXPECT_EQ(p.handoffs, 2);
  EXPECT_NEAR(p.task_cycles, 3 * d, 1e-9);
  EXPECT_NEAR(p.handoff_cycles,
              (r.tasks[1].start - r.tasks[0].end) + (r.tasks[2].start - r.tasks[1].end), 1e-9);
  EXPECT_DOUBLE_EQ(p.core_wait_cycles, 0.0);
  EXPECT_DOUBLE_EQ(p.head_cycles, 0.0);
  EXPECT_NEAR(p.cycles(), r.last_end - r.first_start, 1e-9);

  // 49 independent tasks on 48 AIV cores, long enough for the 49th to reach its core's pending
  // slot before the running task ends: it starts a turnaround after it.
  const double long_task = 20 * d;
  TaskGraph wave = fixed_graph(49);
  wave.finalize();
  r = simulate_costed(wave, fixed_cost(long_task), hw);
  p = span_path(wave, r);
  EXPECT_EQ(p.tasks, 2);
  EXPECT_EQ(p.handoffs, 0);
  EXPECT_NEAR(p.task_cycles, 2 * long_task, 1e-9);
  EXPECT_NEAR(p.core_wait_cycles, hw.ns_to_cycles(hw.scheduler.task_gap_ns), 1e-6);
  EXPECT_GE(p.head_cycles, 0.0);
  EXPECT_NEAR(p.cycles(), r.last_end - r.first_start, 1e-9);

  TaskGraph one = fixed_graph(1);
  one.finalize();
  r = simulate_costed(one, fixed_cost(d), hw);
  p = span_path(one, r);
  EXPECT_EQ(p.tasks, 1);
  EXPECT_NEAR(p.cycles(), d, 1e-9);
  EXPECT_EQ(span_path(TaskGraph{}, SimResult{}).tasks, 0);
}

TEST(Simulator, CycleIsReported) {
  const Hardware hw = default_hw();
  TaskGraph g = fixed_graph(2);
  g.add_edge(0, 1);
  g.add_edge(1, 0);
  g.finalize();
  EXPECT_THROW(simulate_costed(g, fixed_cost(10), hw), Error);
}

// N identical tasks on C cores take ceil(N / C) waves, under either ready order.
TEST(Simulator, EqualTasksOnCCoresTakeCeilNOverCWaves) {
  for (const ReadyOrder order : {ReadyOrder::kOldestRootFirst, ReadyOrder::kFifo})
    for (const int64_t cores : {1, 5, 48})
      for (const int n : {1, 4, 5, 6, 23, 97}) {
        Hardware hw = ideal_runtime_hw();
        hw.cores.aiv = cores;
        TaskGraph g = fixed_graph(0);
        for (int i = 0; i < n; ++i) g.add_task(0, i % 3);  // three root functions
        g.finalize();
        SimOptions opt;
        opt.ready_order = order;
        const SimResult r = simulate_costed(g, fixed_cost(1000), hw, opt);
        const double waves = std::ceil(static_cast<double>(n) / static_cast<double>(cores));
        EXPECT_NEAR(r.last_end - r.first_start, waves * 1000, 1e-9)
            << n << " tasks on " << cores << " cores, " << ready_order_name(order);
      }
}

// SPMD: the launch starts every core kernel.core_start_ns after the previous one, with no AICPU
// in between; each core runs its pinned tasks back to back a task gap apart.
TEST(Simulator, SpmdCoresAllStartAtLaunch) {
  const Hardware hw = default_hw();
  const double d = 5000, gap = hw.ns_to_cycles(hw.scheduler.task_gap_ns);
  TaskGraph g = fixed_graph(0);
  g.runtime = RuntimeStyle::kSpmd;
  const int cores = static_cast<int>(hw.cores.aiv);
  for (int round = 0; round < 3; ++round)
    for (int c = 0; c < cores; ++c) g.add_task(0, 0, c);
  g.finalize();
  SimOptions opt;
  opt.record_aicpu = true;
  const SimResult r = simulate_costed(g, fixed_cost(d), hw, opt);
  EXPECT_TRUE(r.aicpu_spans.empty());
  for (int round = 0; round < 3; ++round)
    for (int c = 0; c < cores; ++c) {
      const auto& t = r.tasks[static_cast<size_t>(round * cores + c)];
      EXPECT_EQ(t.core, c);
      EXPECT_NEAR(t.start, c * hw.ns_to_cycles(hw.kernel.core_start_ns) + round * (d + gap), 1e-6)
          << "core " << c << " round " << round;
    }
}

// SPMD blocks (unpinned tasks) take the first free core of their type: N equal blocks on C cores
// run in ceil(N / C) waves, each block starting block_start_ns after its core frees; grid < C
// leaves cores idle and grid = C + 1 adds one block time.
TEST(Simulator, SpmdBlocksRunInCeilNOverCWaves) {
  Hardware hw = ideal_runtime_hw();
  hw.scheduler.block_start_ns = 250;
  hw.scheduler.task_gap_ns = 300;  // pinned tasks only: blocks pay the block start instead
  const double d = 1000, s = hw.ns_to_cycles(hw.scheduler.block_start_ns);
  const int cores = static_cast<int>(hw.cores.aiv);
  auto span = [&](int n) {
    TaskGraph g = fixed_graph(n);
    g.runtime = RuntimeStyle::kSpmd;
    g.finalize();
    const SimResult r = simulate_costed(g, fixed_cost(d), hw);
    std::set<int32_t> used;
    for (const auto& t : r.tasks) used.insert(t.core);
    EXPECT_EQ(static_cast<int>(used.size()), std::min(n, cores)) << n << " blocks";
    EXPECT_EQ(r.first_start, s);
    return r.last_end;
  };
  for (int n : {1, 20, 47, 48, 49, 96, 97, 480}) {
    const double waves = std::ceil(static_cast<double>(n) / cores);
    EXPECT_NEAR(span(n), waves * (s + d), 1e-9) << n << " blocks";
  }
  EXPECT_NEAR(span(cores + 1) - span(cores), s + d, 1e-9);
  EXPECT_NEAR(span(cores) - span(1), 0, 1e-9);  // idle cores cost nothing
}

// The launch starts the cores blocks land on one after another: N <= C blocks of a first wave
// start kernel.core_start_ns apart, so more blocks cost (N - 1) core starts more.
TEST(Simulator, SpmdLaunchStartsCoresOneAfterAnother) {
  Hardware hw = ideal_runtime_hw();
  hw.kernel.core_start_ns = 40;
  const double d = 1000, cs = hw.ns_to_cycles(40);
  for (int n : {1, 2, 16, 48}) {
    TaskGraph g = fixed_graph(n);
    g.runtime = RuntimeStyle::kSpmd;
    g.finalize();
    const SimResult r = simulate_costed(g, fixed_cost(d), hw);
    for (int i = 0; i < n; ++i)
      EXPECT_NEAR(r.tasks[static_cast<size_t>(i)].start, i * cs, 1e-9) << i << " of " << n;
    EXPECT_NEAR(r.last_end, (n - 1) * cs + d, 1e-9) << n << " blocks";
  }
}

// An spmd graph of psg "blocks" with two empty kinds, costed apart: 0 long, 1 short.
TaskGraph long_and_short_spmd_graph() {
  TaskGraph g;
  g.runtime = RuntimeStyle::kSpmd;
  g.add_psg("blocks");
  g.add_kind(TaskKind{});
  g.add_kind(TaskKind{});
  return g;
}

// A block goes to whichever core frees first: one long block and many short ones on 2 cores.
TEST(Simulator, SpmdBlocksFillTheFirstFreeCore) {
  Hardware hw = ideal_runtime_hw();
  hw.cores.aiv = 2;
  TaskGraph g = long_and_short_spmd_graph();
  g.add_task(0, 0);                              // long: 10000 cycles
  for (int i = 0; i < 4; ++i) g.add_task(1, 0);  // short: 1000 cycles
  g.finalize();
  TaskCost lo, sh;
  lo.cycles = 10000;
  sh.cycles = 1000;
  const SimResult r = simulate_costed(g, {lo, sh}, hw);
  EXPECT_EQ(r.tasks[0].core, 0);
  for (size_t i = 1; i < 5; ++i) {
    EXPECT_EQ(r.tasks[i].core, 1) << i;
    EXPECT_NEAR(r.tasks[i].start, 1000.0 * static_cast<double>(i - 1), 1e-9) << i;
  }
  EXPECT_NEAR(r.last_end, 10000, 1e-9);
}

// A block may be a run of tasks (continues_block): the hardware places its first task, the rest
// run on the same core back to back with no start cost; two such blocks on one core run in turn.
TEST(Simulator, SpmdBlockOfSeveralTasksRunsOnItsCore) {
  Hardware hw = ideal_runtime_hw();
  hw.scheduler.block_start_ns = 250;
  hw.scheduler.task_gap_ns = 300;
  const double d = 1000, s = hw.ns_to_cycles(hw.scheduler.block_start_ns);
  for (const int cores : {1, 2}) {
    hw.cores.aiv = cores;
    TaskGraph g = fixed_graph(0);
    g.runtime = RuntimeStyle::kSpmd;
    g.add_task(0, 0);  // block 0: three tasks
    g.add_task(0, 0, -1, 0, true);
    g.add_task(0, 0, -1, 0, true);
    g.add_task(0, 0);  // block 1: two tasks
    g.add_task(0, 0, -1, 0, true);
    g.finalize();
    const SimResult r = simulate_costed(g, fixed_cost(d), hw);
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(r.tasks[i].core, 0);
      EXPECT_NEAR(r.tasks[i].start, s + static_cast<double>(i) * d, 1e-9) << i;
    }
    const double second = cores == 1 ? 3 * d + 2 * s : s;  // block 1 waits for the core
    EXPECT_EQ(r.tasks[3].core, cores - 1);
    EXPECT_EQ(r.tasks[4].core, cores - 1);
    EXPECT_NEAR(r.tasks[4].start, second + d, 1e-9) << cores << " cores";
  }
  TaskGraph bad = fixed_graph(0);
  bad.runtime = RuntimeStyle::kSpmd;
  bad.add_task(0, 0, 0);
  bad.add_task(0, 0, -1, 0, true);  // continues a pinned task
  bad.finalize();
  EXPECT_THROW(simulate_costed(bad, fixed_cost(d), hw), InternalError);
}

// A mixed block runs on a cluster (AIC c with AIVs 2c and 2c + 1): each core runs its lane's tasks
// in task order; a task waits for its predecessors, kernel.cross_core_flag_ns more for one on
// another core of the cluster; the cluster takes its next block when its block's last task ends.
TEST(Simulator, SpmdMixedBlockRunsOnAClusterBehindItsFlags) {
  Hardware hw = ideal_runtime_hw();
  hw.cores.aic = 2;
  hw.cores.aiv = 4;
  hw.scheduler.block_start_ns = 250;
  hw.kernel.cross_core_flag_ns = 100;
  const double s = hw.ns_to_cycles(250), f = hw.ns_to_cycles(100);
  auto graph = [](int blocks) {
    TaskGraph g;
    g.runtime = RuntimeStyle::kSpmd;
    g.add_psg("mix");
    TaskKind cube;
    cube.core = CoreType::kAic;
    g.add_kind(cube);        // 0: 1000 cycles
    g.add_kind(TaskKind{});  // 1: 3000 cycles on an AIV
    for (int b = 0; b < blocks; ++b) {
      auto add = [&](int kind, int lane, std::initializer_list<int32_t> deps) {
        const int32_t t = g.add_task(kind, 0, -1, 0, true);  // continues the block
        g.tasks[static_cast<size_t>(t)].mix_lane = static_cast<int8_t>(lane);
        for (const int32_t d : deps) g.add_edge(d, t);
        return t;
      };
      const int32_t a = g.add_task(0, 0);  // S on the AIC, the block's first task
      g.tasks[static_cast<size_t>(a)].mix_lane = 0;
      const int32_t b1 = add(1, 1, {a}), b2 = add(1, 2, {a});  // the rows' halves on the AIVs
      const int32_t c = add(0, 0, {b1, b2});                   // P V after both
      add(1, 1, {c});                                          // O on the first AIV
      add(0, 0, {});  // the AIC's next task: after P V on its core, no flag
    }
    g.finalize();
    return g;
  };
  TaskCost cube, vec;
  cube.cycles = 1000;
  vec.cycles = 3000;
  const SimResult r = simulate_costed(graph(3), {cube, vec}, hw);
  const double block = s + 8000 + 3 * f;  // S, the halves, P V, O: three flags
  for (int b = 0; b < 3; ++b) {
    const double t0 = b == 2 ? block : 0;  // the third block waits for cluster 0
    const int cl = b == 1 ? 1 : 0;
    const auto at = [&](int i) { return r.tasks[static_cast<size_t>(6 * b + i)]; };
    EXPECT_EQ(at(0).core, 4 + cl) << b;  // AIV cores come first
    EXPECT_EQ(at(1).core, 2 * cl);
    EXPECT_EQ(at(2).core, 2 * cl + 1);
    EXPECT_NEAR(at(0).start, t0 + s, 1e-9) << b;
    EXPECT_NEAR(at(1).start, t0 + s + 1000 + f, 1e-9) << b;
    EXPECT_NEAR(at(2).start, t0 + s + 1000 + f, 1e-9) << b;
    EXPECT_NEAR(at(3).start, t0 + s + 4000 + 2 * f, 1e-9) << b;
    EXPECT_NEAR(at(4).start, t0 + s + 5000 + 3 * f, 1e-9) << b;
    EXPECT_NEAR(at(5).start, t0 + s + 5000 + 2 * f, 1e-9) << b;
  }
  EXPECT_NEAR(r.last_end, 2 * block, 1e-9);
  // Refused: a cluster without two AIVs per AIC; an edge leaving its block.
  hw.cores.aiv = 3;
  EXPECT_THROW(simulate_costed(graph(1), {cube, vec}, hw), Error);
  hw.cores.aiv = 4;
  TaskGraph leaving;  // two one-task mixed blocks, the second depending on the first
  leaving.runtime = RuntimeStyle::kSpmd;
  leaving.add_kind(TaskKind{});
  for (int b = 0; b < 2; ++b)
    leaving.tasks[static_cast<size_t>(leaving.add_task(0, 0))].mix_lane = 1;
  leaving.add_edge(0, 1);
  leaving.finalize();
  EXPECT_THROW(simulate_costed(leaving, fixed_cost(1000), hw), InternalError);
}

// One task of stages L, C, S on an idle machine, each pipe taking its work in turn.
TaskCost three_stage_cost(double l, double c, double st) {
  TaskCost cost;
  cost.cycles = l + c + st;
  cost.stages = {l, l, l + c, l + c, l + c + st, 0, l, l + c + st};
  return cost;
}

// N tasks of kind `k` in one spmd block (not finalized): a mixed block's tasks on its first AIV,
// each carrying state to the next (an edge on its own core), or a block's continuing tasks.
TaskGraph loop_graph(int n, const TaskKind& k, bool mixed) {
  TaskGraph g;
  g.runtime = RuntimeStyle::kSpmd;
  g.add_psg("loop");
  g.add_kind(k);
  for (int i = 0; i < n; ++i) {
    const int32_t t = g.add_task(0, 0, -1, 0, i > 0);
    if (!mixed) continue;
    g.tasks[static_cast<size_t>(t)].mix_lane = 1;
    if (i > 0) g.add_edge(t - 1, t);
  }
  return g;
}

// A loop of N tasks on one core: a mixed block's tasks on its first AIV, each carrying state to
// the next, or a block's continuing tasks on the AIC. Kinds that overlap (TaskKind::overlap 2)
// run it in L + C + S + (N - 1) max(L, C, S) (model/task_overlap.hpp), the carried edge met at
// the predecessor's start: each task loads once the load pipe is free and its compute waits for
// the one before; kinds that do not run it in N (L + C + S). A core takes its next block
// (a one-task block here) only when every task of the first has ended, a block start later.
TEST(Simulator, SpmdLoopsOverlapToTheSlowestStage) {
  Hardware hw = ideal_runtime_hw();
  hw.cores.aic = 1;
  hw.cores.aiv = 2;
  hw.scheduler.block_start_ns = 250;
  const double s = hw.ns_to_cycles(hw.scheduler.block_start_ns);
  const double l = 300, c = 500, st = 200;
  const int n = 10;
  const double serial = n * (l + c + st), overlapped = l + c + st + (n - 1) * c;
  auto run = [&](int overlap, int64_t buffer_bytes, bool mixed) {
    TaskKind k;
    k.overlap = overlap;
    k.buffers = {{"in", buffer_bytes, BufferRole::kInput, MemSpace::kUb}};
    if (!mixed) k.core = CoreType::kAic;
    TaskGraph g = loop_graph(n, k, mixed);
    if (!mixed) g.add_task(0, 0);  // the next block
    g.finalize();
    return simulate_costed(g, {three_stage_cost(l, c, st)}, hw);
  };
  const SimResult lane = run(2, 1024, true);
  EXPECT_NEAR(lane.last_end, s + overlapped, 1e-6);
  EXPECT_NEAR(lane.tasks[1].start - lane.tasks[0].start, l, 1e-6);
  EXPECT_NEAR(lane.tasks[1].end - lane.tasks[0].end, c, 1e-6);
  EXPECT_NEAR(lane.pipe_wait_of(1), c - l, 1e-6);  // its compute waited for the one before
  EXPECT_NEAR(run(1, 1024, true).last_end, s + serial, 1e-6);
  // Buffers leaving no room for the next task's inputs: its loads wait for the compute before.
  EXPECT_NEAR(run(2, 128 * 1024, true).last_end, s + n * (l + c) + st, 1e-6);
  const SimResult block = run(2, 1024, false);
  EXPECT_NEAR(block.tasks[n - 1].end, s + overlapped, 1e-6);
  EXPECT_NEAR(block.tasks[n].start, 2 * s + overlapped, 1e-6);
  EXPECT_NEAR(run(1, 1024, false).tasks[n].start, 2 * s + serial, 1e-6);
}

// The depth binds: a core holds at most TaskKind::overlap tasks, so the loads run at most that
// many tasks ahead. Stages of 300 each (a run of 900): three tasks deep the loop takes a stage
// per task (fill + N x 300 + drain); two deep, a task's loads wait for the task two before it to
// end, and each pair of tasks takes a whole run: N / 2 x 900 + 300 (ends at 900, 1200, 1800,
// 2100, ...).
TEST(Simulator, SpmdOverlapDepthBoundsTheLoadsAhead) {
  Hardware hw = ideal_runtime_hw();
  hw.cores.aic = 1;
  hw.cores.aiv = 2;
  const double s = hw.ns_to_cycles(hw.scheduler.block_start_ns);
  const double stage = 300;
  const int n = 10;
  auto run = [&](int overlap) {
    TaskKind k;
    k.overlap = overlap;
    k.buffers = {{"in", 1024, BufferRole::kInput, MemSpace::kUb}};
    TaskGraph g = loop_graph(n, k, true);
    g.finalize();
    return simulate_costed(g, {three_stage_cost(stage, stage, stage)}, hw);
  };
  EXPECT_NEAR(run(3).last_end, s + 3 * stage + (n - 1) * stage, 1e-6);
  EXPECT_NEAR(run(4).last_end, s + 3 * stage + (n - 1) * stage, 1e-6);
  const SimResult two = run(2);
  EXPECT_NEAR(two.last_end, s + n / 2 * 3 * stage + stage, 1e-6);
  EXPECT_NEAR(two.tasks[2].start, two.tasks[0].end, 1e-6);
}

// A block's two overlapping tasks whose reads all hit L2 (warm: the input they read starts
// resident): the second's stages are taken at its hit share (model/task_overlap.hpp). Loads of
// 400 cycles missing and 100 hitting, compute 300, stores 200: all hitting, the second loads
// once the first's loads are done (100) and the compute binds: it ends 300 after the first. Cold,
// both miss: the loads bind, 400.
TEST(Simulator, OverlappedTasksTakeTheirStagesAtTheirHitShare) {
  Hardware hw = ideal_runtime_hw();
  hw.cores.aic = 1;
  hw.cores.aiv = 2;
  TaskKind k;
  k.overlap = 2;
  k.core = CoreType::kAic;
  TaskGraph g = loop_graph(2, k, false);
  for (int32_t t = 0; t < 2; ++t) g.add_access(t, {1, 1000, false});
  g.finalize();
  TaskCost c = three_stage_cost(400, 300, 200);
  c.hit_cycles = 600;
  c.hit_stages = PipeStages{100, 100, 400, 400, 600, 0, 100, 600};
  SimOptions warm;
  warm.l2_start = L2Start::kWarm;
  const SimResult hit = simulate_costed(g, {c}, hw, warm);
  ASSERT_EQ(hit.hit_share(0), 1);
  EXPECT_NEAR(hit.tasks[1].start - hit.tasks[0].start, 100, 1e-6);
  EXPECT_NEAR(hit.tasks[1].end - hit.tasks[0].end, 300, 1e-6);
  const SimResult cold = simulate_costed(g, {c}, hw);
  ASSERT_EQ(cold.hit_share(0), 0);
  EXPECT_NEAR(cold.tasks[1].start - cold.tasks[0].start, 400, 1e-6);
  EXPECT_NEAR(cold.tasks[1].end - cold.tasks[0].end, 400, 1e-6);
}

// Two launches: launch 1's blocks start only when every task of launch 0 has ended, the launch
// gap plus a block start later, even on cores that freed early; launch 0's blocks run first
// whatever their order in the graph. The gap is the launch of the graph's kernel type (vector
// only here), and each launch starts its first wave's cores kernel.core_start_ns apart.
TEST(Simulator, SpmdSecondLaunchWaitsForTheFirst) {
  Hardware hw = ideal_runtime_hw();
  hw.cores.aiv = 2;
  hw.scheduler.block_start_ns = 250;
  hw.kernel.core_start_ns = 100;
  hw.kernel.vector_launch_us = 3;
  hw.kernel.mixed_launch_us = 7;
  hw.kernel.end_us = 0.5;
  const double s = hw.ns_to_cycles(hw.scheduler.block_start_ns);
  const double c = hw.ns_to_cycles(hw.kernel.core_start_ns);
  TaskGraph g = long_and_short_spmd_graph();
  g.add_task(1, 0, -1, 1);  // launch 1, listed first
  g.add_task(0, 0);         // launch 0: 10000 cycles
  g.add_task(1, 0);         // launch 0: 1000 cycles
  g.add_task(1, 0, -1, 1);
  g.add_task(1, 0, -1, 1);
  g.finalize();
  EXPECT_EQ(g.num_launches(), 2);
  const double gap = launch_gap_cycles(hw, g);
  EXPECT_NEAR(gap, hw.ns_to_cycles(3500), 1e-9);    // launch 0's end, launch 1's start
  TaskGraph cube = fixed_graph(0, CoreType::kAic);  // a kernel starting cube cores
  cube.runtime = RuntimeStyle::kSpmd;
  EXPECT_NEAR(launch_gap_cycles(hw, cube), hw.ns_to_cycles(7500), 1e-9);
  TaskCost lo, sh;
  lo.cycles = 10000;
  sh.cycles = 1000;
  const SimResult r = simulate_costed(g, {lo, sh}, hw);
  EXPECT_NEAR(r.tasks[1].start, s, 1e-9);
  EXPECT_NEAR(r.tasks[2].start, c + s, 1e-9);  // the second core starts core_start later
  const double open = s + 10000 + gap;         // launch 0 ends with its long block
  EXPECT_NEAR(r.tasks[0].start, open + s, 1e-9);
  EXPECT_NEAR(r.tasks[3].start, open + c + s, 1e-9);  // staggered like launch 0
  // A second wave of launch 1 on core 0, the first free (c < s + 1000): no core start.
  EXPECT_NEAR(r.tasks[4].start, open + s + 1000 + s, 1e-9);
  EXPECT_NEAR(r.last_end, open + 2 * (s + 1000), 1e-9);
  std::ostringstream trace;  // the trace names each task's launch
  write_chrome_trace(trace, g, r, hw);
  EXPECT_NE(trace.str().find(R"("taskId":0,"root":0,"psg":"blocks","launch":1)"),
            std::string::npos);
  EXPECT_NE(trace.str().find(R"("taskId":1,"root":0,"psg":"blocks","launch":0)"),
            std::string::npos);
}

// One core, zero runtime overheads. Roots 0 (A0, then B0 after A0) and 1 (A1, C1) are released
// together: A0 runs and A1 waits in the core's pending slot. When A0 ends, B0 becomes ready behind
// C1; the order decides which fills the pending slot: B0 (oldest root first) or C1 (FIFO).
TEST(Simulator, ReadyOrderDecidesWhichRootRunsNext) {
  Hardware hw = ideal_runtime_hw();
  hw.cores.aiv = 1;
  const double d = 1000;
  TaskGraph g = fixed_graph(0);
  const int32_t a0 = g.add_task(0, 0), b0 = g.add_task(0, 0);
  const int32_t a1 = g.add_task(0, 1), c1 = g.add_task(0, 1);
  g.add_edge(a0, b0);
  g.finalize();
  auto starts = [&](ReadyOrder order) {
    SimOptions opt;
    opt.ready_order = order;
    const SimResult r = simulate_costed(g, fixed_cost(d), hw, opt);
    return std::vector<double>{r.tasks[a0].start, r.tasks[b0].start, r.tasks[a1].start,
                               r.tasks[c1].start};
  };
  EXPECT_EQ(starts(ReadyOrder::kOldestRootFirst), (std::vector<double>{0, 2 * d, d, 3 * d}));
  EXPECT_EQ(starts(ReadyOrder::kFifo), (std::vector<double>{0, 3 * d, d, 2 * d}));
}

// The ready order is a runtime policy of the run config and of the sweep config.
TEST(ReadyOrder, IsReadFromTheRuntimeKeyOfRunAndSweepConfigs) {
  const auto base = nlohmann::json::parse(
      R"({"op": "add", "shape": [64, 1024], "tile": [8, 1024], "dtype": "fp32"})");
  EXPECT_EQ(runtime_options_from_json(base, "a.json").ready_order, ReadyOrder::kOldestRootFirst);
  auto fifo = base;
  fifo["runtime"] = {{"ready_order", "fifo"}};
  EXPECT_EQ(runtime_options_from_json(fifo, "a.json").ready_order, ReadyOrder::kFifo);
  EXPECT_EQ(sweep_config_from_json(fifo, "s.json").options.ready_order, ReadyOrder::kFifo);
  auto bad = base;
  bad["runtime"] = {{"ready_order", "lifo"}};
  try {
    runtime_options_from_json(bad, "a.json");
    ADD_FAILURE() << "accepted ready_order lifo";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "a.json: runtime.ready_order: \"lifo\" is not allowed (allowed: oldest_root_first, "
              "fifo)");
  }
  auto pypto = base;
  pypto["runtime"] = {{"stitch_function_max_num", 16}, {"launch_sched_aicpu_num", 2}};
  EXPECT_EQ(runtime_options_from_json(pypto, "a.json").stitch_function_max_num, 16);
  EXPECT_EQ(runtime_options_from_json(pypto, "a.json").launch_sched_aicpu_num, 2);
  pypto["runtime"] = {{"stitch_function_max_num", 2048}};
  try {
    runtime_options_from_json(pypto, "a.json");
    ADD_FAILURE() << "accepted stitch_function_max_num 2048";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("a.json: runtime.stitch_function_max_num"),
              std::string::npos)
        << e.what();
  }
  auto unknown = base;
  unknown["runtime"] = {{"order", "fifo"}};
  EXPECT_THROW(runtime_options_from_json(unknown, "a.json"), Error);
}

// The Chrome trace of a real run (a two-pass kernel: dependencies between tasks): on every lane
// each slice ends no later than the next one starts, in the trace's own rounded numbers, and each
// dependency edge is one flow arrow from inside its predecessor's slice to inside its successor's.
TEST(ChromeTrace, LanesNeverOverlapAndEdgesAreFlowArrows) {
  RunConfig rc = load_run_config(test::source_path("configs/examples/softmax_16x16384.json"));
  rc.spec.tile = {1, 4096};
  rc.spec.loop_count = 4;
  const Hardware hw = load_hardware(rc.hardware);
  SimOptions opt;
  opt.record_aicpu = true;
  const RunOutcome run = run_kernel(rc.spec, hw, opt);
  const TaskGraph& g = run.kernel.graph;
  int64_t edges = 0;
  for (size_t i = 0; i < g.tasks.size(); ++i)
    edges += g.succ_end(static_cast<int32_t>(i)) - g.succ_begin(static_cast<int32_t>(i));
  ASSERT_GT(edges, 0);
  std::stringstream text;
  write_chrome_trace(text, g, run.sim, hw);
  const auto trace = nlohmann::json::parse(text.str());
  auto ticks = [](const nlohmann::json& v) { return std::llround(v.get<double>() * 1e4); };
  struct Slice {
    int64_t start, end, task;
  };
  std::map<std::pair<int, int>, std::vector<Slice>> lanes;
  std::map<int64_t, std::pair<std::pair<int, int>, int64_t>> flow_start, flow_end;
  for (const auto& e : trace) {
    const auto lane = std::pair{e.value("pid", 0), e.value("tid", 0)};
    if (e["ph"] == "X") {
      lanes[lane].push_back(
          {ticks(e["ts"]), ticks(e["ts"]) + ticks(e["dur"]), e["args"]["taskId"].get<int64_t>()});
    } else if (e["ph"] == "s" || e["ph"] == "f") {
      EXPECT_EQ(e["bp"], "e");
      auto& flows = e["ph"] == "s" ? flow_start : flow_end;
      EXPECT_TRUE(flows.emplace(e["id"].get<int64_t>(), std::pair{lane, ticks(e["ts"])}).second);
    }
  }
  size_t slices = 0;
  for (auto& [lane, v] : lanes) {
    std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.start < b.start; });
    for (size_t i = 0; i + 1 < v.size(); ++i)
      EXPECT_LE(v[i].end, v[i + 1].start) << "lane " << lane.first << "/" << lane.second;
    slices += v.size();
  }
  EXPECT_EQ(slices, g.tasks.size() + run.sim.aicpu_spans.size());
  // Flows: one per edge, each end strictly inside the slice of its task on that lane.
  ASSERT_EQ(static_cast<int64_t>(flow_start.size()), edges);
  ASSERT_EQ(flow_end.size(), flow_start.size());
  auto task_at = [&](const std::pair<std::pair<int, int>, int64_t>& at) {
    for (const auto& s : lanes[at.first])
      if (at.first.first != 3 && s.start < at.second && at.second < s.end) return s.task;
    return int64_t{-1};
  };
  std::set<std::pair<int64_t, int64_t>> arrows, want;
  for (const auto& [id, at] : flow_start) arrows.insert({task_at(at), task_at(flow_end.at(id))});
  for (size_t i = 0; i < g.tasks.size(); ++i)
    for (const int32_t* s = g.succ_begin(static_cast<int32_t>(i));
         s != g.succ_end(static_cast<int32_t>(i)); ++s)
      want.insert({static_cast<int64_t>(i), *s});
  EXPECT_EQ(arrows, want);
}

// Two tasks reading the same block, then a task writing: the re-read hits L2 while it is within
// l2.bytes of traffic, and writes cost HBM only when the footprint exceeds L2.
TEST(L2Residency, ReReadsHitWithinCapacityAndWritesAbsorbWhenTheFootprintFits) {
  TaskGraph g = fixed_graph(4);
  g.add_access(0, {1, 1000, false});
  g.add_access(1, {1, 1000, false});  // re-read right after: hit
  g.add_access(2, {2, 5000, false});  // 5000 B of other traffic
  g.add_access(3, {1, 1000, false});  // re-read 5000 B later
  g.add_access(3, {3, 1000, true});
  g.finalize();
  L2Residency big(g, 100000);  // footprint 7000 B fits: writes absorbed
  EXPECT_TRUE(big.absorbs_writes());
  EXPECT_DOUBLE_EQ(big.on_start(0)->read_hbm, 1);
  EXPECT_DOUBLE_EQ(big.on_start(1)->read_hbm, 0);
  EXPECT_DOUBLE_EQ(big.on_start(2)->read_hbm, 1);
  const auto hit = big.on_start(3);
  EXPECT_DOUBLE_EQ(hit->read_hbm, 0);
  EXPECT_DOUBLE_EQ(hit->write_hbm, 0);
  L2Residency small(g, 4000);  // re-read 5000 B later misses; footprint 7000 B: writes cost HBM
  EXPECT_FALSE(small.absorbs_writes());
  small.on_start(0);
  EXPECT_DOUBLE_EQ(small.on_start(1)->read_hbm, 0);
  small.on_start(2);
  const auto t = small.on_start(3);  // 1000 B read miss + 1000 B write, as shares of 2000 B
  EXPECT_DOUBLE_EQ(t->read_hbm, 0.5);
  EXPECT_DOUBLE_EQ(t->write_hbm, 0.5);
}

// L2Residency's shares against a brute-force LRU over random access streams, at capacities on both
// sides of the footprint (below it the stack distances come from the Fenwick tree; above it
// every block touched before is resident and no distance is kept).
TEST(L2Residency, SharesMatchABruteForceLruOnBothSidesOfTheFootprint) {
  std::mt19937_64 rng(51);
  for (int round = 0; round < 40; ++round) {
    const int tasks = 20 + static_cast<int>(rng() % 40);
    const auto blocks = 3 + rng() % 12;
    TaskGraph g = fixed_graph(tasks);
    std::map<uint64_t, int64_t> largest;  // a block's largest touch: the footprint's term
    for (int t = 0; t < tasks; ++t)
      for (auto n = 1 + rng() % 3; n-- > 0;) {
        const Access a{1 + rng() % blocks, static_cast<int64_t>(1 + rng() % 4096), rng() % 4 == 0};
        g.add_access(t, a);
        largest[a.block] = std::max(largest[a.block], a.bytes);
      }
    g.finalize();
    int64_t footprint = 0;
    for (const auto& [block, bytes] : largest) footprint += bytes;
    for (const int64_t capacity : {footprint / 3, footprint - 1, footprint, footprint + 1}) {
      L2Residency l2(g, static_cast<double>(capacity));
      std::vector<std::pair<uint64_t, int64_t>> touches;  // (block, bytes), oldest first
      for (int t = 0; t < tasks; ++t) {
        double moved = 0, miss = 0, write_hbm = 0;
        for (const Access* a = g.access_begin(t); a != g.access_end(t); ++a) {
          // Distinct other blocks touched since this block's last touch, at their latest bytes.
          std::map<uint64_t, int64_t> after;
          bool seen = false;
          for (auto it = touches.rbegin(); it != touches.rend() && !seen; ++it) {
            seen = it->first == a->block;
            if (!seen) after.try_emplace(it->first, it->second);
          }
          int64_t distance = 0;
          for (const auto& [block, bytes] : after) distance += bytes;
          const bool resident = seen && distance < capacity;
          moved += static_cast<double>(a->bytes);
          if (a->write && footprint > capacity) write_hbm += static_cast<double>(a->bytes);
          if (!a->write && !resident) miss += static_cast<double>(a->bytes);
          touches.emplace_back(a->block, a->bytes);
        }
        const auto share = l2.on_start(t);
        ASSERT_TRUE(share.has_value());
        EXPECT_DOUBLE_EQ(share->read_hbm, miss / moved) << "round " << round << " task " << t;
        EXPECT_DOUBLE_EQ(share->write_hbm, write_hbm / moved) << "round " << round;
      }
    }
  }
}

// The HBM bytes a lowered kernel's GM accesses read and write through an L2 of `capacity` bytes,
// its tasks counted in the order the simulation started them.
struct HbmBytes {
  double read = 0, write = 0;
};
HbmBytes hbm_bytes(const TaskGraph& g, const SimResult& r, double capacity) {
  std::vector<int32_t> order(g.tasks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    return r.tasks[static_cast<size_t>(a)].start < r.tasks[static_cast<size_t>(b)].start;
  });
  L2Residency l2(g, capacity);
  HbmBytes total;
  for (const int32_t t : order) {
    double bytes = 0;
    for (const Access* a = g.access_begin(t); a != g.access_end(t); ++a)
      bytes += static_cast<double>(a->bytes);
    const auto share = l2.on_start(t);
    total.read += bytes * share->read_hbm;
    total.write += bytes * share->write_hbm;
  }
  return total;
}

// An fp16 spmd matmul of `shape` [m, k, n] in `tile` [m1, k1, n1] on `grid` blocks, its C tiles
// handed out in bands of `rows` tile rows (swizzle [rows, 0]).
KernelSpec spmd_matmul(Dims shape, Dims tile, int64_t grid, int64_t rows) {
  KernelSpec s;
  s.op = "matmul";
  s.shape = std::move(shape);
  s.tile = std::move(tile);
  s.dtype = DType::kFp16;
  s.partition = PartitionStyle::kSpmd;
  s.grid = grid;
  s.params["swizzle"] = {rows, 0};
  return s;
}

// The spmd matmul records each C tile's GM blocks, so tiles of different blocks that read the
// same A row or B column panel hit L2. C [256, 1024] in [128, 256] tiles = 2 x 4 tiles over 4
// blocks, one k step: 8 tiles read 8 x (64 + 128) KiB, of which only the 2 A and 4 B panels
// (128 + 512 KiB) miss; C (512 KiB) fits with the inputs, so its writes stay in L2. Without L2
// every byte reaches HBM.
TEST(L2Residency, SpmdMatmulTilesOfDifferentBlocksShareThePanels) {
  const KernelSpec s = spmd_matmul({256, 256, 1024}, {128, 256, 256}, 4, 2);
  const LoweredKernel k = lower_kernel(s, default_hw());
  const SimResult r = simulate(k.graph, default_hw());
  const double kib = 1024;
  const HbmBytes fits = hbm_bytes(k.graph, r, static_cast<double>(default_hw().l2.bytes));
  EXPECT_DOUBLE_EQ(fits.read + fits.write, (128 + 512) * kib);
  const HbmBytes none = hbm_bytes(k.graph, r, 0);
  EXPECT_DOUBLE_EQ(none.read + none.write, (8 * (64 + 128) + 512) * kib);
}

// A round of L2 tiles (params.l2_block): C [512, 1024] in [128, 128] tiles = 4 x 8 tiles, one k
// step, on one block, walked in serpentine rows (swizzle [1, 0]). Each tile reads a 64 KiB A
// panel and a 64 KiB B panel, then writes its 32 KiB C tile; L2 holds 384 KiB. Row by row, a B
// panel is read again one row later: it hits only next to the turn, where 96 KiB (A, C) or 288
// KiB (the last two B panels, A, three C tiles) came between, and misses once 416 KiB did. So
// 4 A + 8 B panels miss on the first row and 6 B panels on each of the other three: 30 panels.
// In L2 blocks of 2 x 2 tiles each block fetches its two B panels once, and each block row its
// two A panels once (the second block re-reads an A panel after at most 352 KiB): 2 x 2 + 8 x 2
// = 20 panels. The footprint (12 panels and 32 C tiles, 1.75 MiB) exceeds L2, so both walks
// write every C tile to HBM. When L2 holds the footprint both fetch each panel once and write
// nothing back: the split gains only when the unsplit working set exceeds L2.
TEST(L2Residency, ARoundOfL2TilesFetchesEachPanelOncePerBlock) {
  const KernelSpec s = spmd_matmul({512, 256, 1024}, {128, 256, 128}, 1, 1);
  KernelSpec blocked = s;
  blocked.params["l2_block"] = {2, 2};
  Hardware hw = default_hw();
  hw.l2.bytes = 384 * 1024;
  const double panel = 64 * 1024, c_tiles = 32 * 32 * 1024;
  const LoweredKernel rows = lower_kernel(s, hw), tiles = lower_kernel(blocked, hw);
  const SimResult r_rows = simulate(rows.graph, hw), r_tiles = simulate(tiles.graph, hw);
  const double l2 = static_cast<double>(hw.l2.bytes);
  const HbmBytes row_walk = hbm_bytes(rows.graph, r_rows, l2);
  const HbmBytes block_walk = hbm_bytes(tiles.graph, r_tiles, l2);
  EXPECT_DOUBLE_EQ(row_walk.read, 30 * panel);
  EXPECT_DOUBLE_EQ(block_walk.read, 20 * panel);
  EXPECT_DOUBLE_EQ(row_walk.write, c_tiles);
  EXPECT_DOUBLE_EQ(block_walk.write, c_tiles);
  EXPECT_LT(r_tiles.last_end, r_rows.last_end);
  const double all = 4 * 1024 * 1024;
  for (const auto& [k, r] : {std::pair{&rows, &r_rows}, {&tiles, &r_tiles}}) {
    const HbmBytes fits = hbm_bytes(k->graph, *r, all);
    EXPECT_DOUBLE_EQ(fits.read, 12 * panel);
    EXPECT_DOUBLE_EQ(fits.write, 0);
  }
}

TEST(SharedBandwidth, ProportionalSlowdown) {
  SharedBandwidth bw(10.0);   // 10 B/cycle
  bw.start(0, 0, 100, 1000);  // wants 10 B/cycle alone
  bw.start(1, 0, 100, 1000);  // together 20 B/cycle -> half speed
  EXPECT_NEAR(bw.next_finish(), 200, 1e-9);
  EXPECT_EQ(bw.finish_next(), 0);
  EXPECT_NEAR(bw.next_finish(), 200, 1e-9);
}

// Every byte also passes L2: when the L2 stage is the tighter one it sets the common slowdown.
TEST(SharedBandwidth, TheTighterStageBinds) {
  SharedBandwidth bw(100.0, 10.0);  // HBM 100 B/cycle, L2 10 B/cycle
  const int32_t cls = bw.flow_class(SharedBandwidth::run_time(100));
  bw.start_flow(0, 0, cls, 1.0, 10.0);  // L2 hits: little HBM demand, 10 B/cycle through L2
  EXPECT_NEAR(bw.next_finish(), 100, 1e-9);
  bw.start_flow(1, 0, cls, 1.0, 10.0);  // L2 demand 20 > 10: half speed
  EXPECT_NEAR(bw.next_finish(), 200, 1e-9);
  EXPECT_NEAR(bw.slowdown(), 2.0, 1e-12);
}

// L2 bounds reads alone more tightly than its mixed traffic (l2.read_bandwidth_gbps within
// l2.bandwidth_gbps): two flows of 8 B/cycle each, reads 6 and writes 2, through an L2 of 20
// B/cycle for all traffic and 10 for reads. Together they want 16 of 20 (fits) but read 12 of 10:
// the read bound slows both by 10 / 12. Writes alone leave the read bound idle.
TEST(SharedBandwidth, ReadsHaveABoundOfTheirOwn) {
  const double inf = std::numeric_limits<double>::infinity();
  SharedBandwidth bw(inf, 20.0, 0, 10.0);
  const int32_t cls = bw.flow_class(SharedBandwidth::run_time(100));
  bw.start_flow(0, 0, cls, 0.0, 8.0, 0.0, 6.0);
  EXPECT_NEAR(bw.next_finish(), 100, 1e-9);  // reads 6 of 10, all 8 of 20
  bw.start_flow(1, 0, cls, 0.0, 8.0, 0.0, 6.0);
  EXPECT_NEAR(bw.slowdown(), 12.0 / 10.0, 1e-12);
  EXPECT_NEAR(bw.next_finish(), 120, 1e-9);
  SharedBandwidth writes(inf, 20.0, 0, 10.0);
  ASSERT_EQ(writes.flow_class(SharedBandwidth::run_time(100)), cls);
  writes.start_flow(0, 0, cls, 0.0, 16.0, 0.0, 0.0);  // 16 of 20, no reads
  EXPECT_DOUBLE_EQ(writes.slowdown(), 1.0);
  writes.start_flow(1, 0, cls, 0.0, 8.0, 0.0, 0.0);  // 24 of 20: the mixed bound
  EXPECT_NEAR(writes.slowdown(), 24.0 / 20.0, 1e-12);
}

// HBM queueing: flows that wait for memory stretch by S = ((1 + a) + sqrt((1 - a)^2 + 4 q X / B)) /
// 2 (a = demand / capacity, X = demand x waits per cycle, q the queue scale); without waits, max(1,
// a).
TEST(SharedBandwidth, WaitingFlowsQueue) {
  const double cap = 10, q = 20, inf = std::numeric_limits<double>::infinity();
  SharedBandwidth plain(cap, inf, q), waiting(cap, inf, q);
  const int32_t cls = plain.flow_class(SharedBandwidth::run_time(100));
  ASSERT_EQ(waiting.flow_class(SharedBandwidth::run_time(100)), cls);
  plain.start_flow(0, 0, cls, 15.0, 15.0, 0.0);  // a = 1.5, no waits: plain sharing
  EXPECT_DOUBLE_EQ(plain.slowdown(), 1.5);
  waiting.start_flow(0, 0, cls, 15.0, 15.0, 15.0 * 0.01);  // one wait per 100 cycles
  const double a = 1.5, x = 0.15;
  const double s = ((1 + a) + std::sqrt((1 - a) * (1 - a) + 4 * q * x / cap)) / 2;
  EXPECT_NEAR(waiting.slowdown(), s, 1e-12);
  EXPECT_NEAR(waiting.next_finish(), 100 * s, 1e-9);
  // The stretch obeys its definition: 1 + (X / D) q u / (1 - u) at u = D / (S B).
  const double u = a / s;
  EXPECT_NEAR(s, 1 + 0.01 * q * u / (1 - u), 1e-12);
}

// N cores each run one task of n one-buffer iterations (load, add, store): each iteration waits
// for its load, so the task waits n + 1 times (the last store's landing ends it), and a loaded
// HBM lengthens each wait by q u / (1 - u). The run is the M/M/1 fixed point
// t = t0 + E q u / (1 - u), u = N bytes / (t B) (bytes in read equivalents); double-buffered,
// the loads hide their latency (2 waits: the first load, the last store) and the same bytes
// saturate HBM instead. Halving HBM raises u and the waits grow: a physical, not fitted, effect.
TEST(HbmQueue, OneBufferTasksWaitInTheQueueDoubleBufferedOnesHide) {
  Hardware hw = ideal_runtime_hw();
  hw.gm.hbm_write_bandwidth_gbps = hw.gm.hbm_bandwidth_gbps;
  hw.l2.bandwidth_gbps = hw.l2.read_bandwidth_gbps = 1e6;
  ASSERT_GT(hw.gm.hbm_queue_ns, 0);
  const int cores = 48;
  const int64_t tile = 8192, n = 64;
  auto kind = [&](int depth) { return add_kind(tile, n, depth); };
  auto run = [&](const Hardware& h, int depth) {
    TaskGraph g;
    g.runtime = RuntimeStyle::kSpmd;
    g.add_psg("add");
    g.add_kind(kind(depth));
    for (int c = 0; c < cores; ++c) g.add_task(0, 0, c);
    g.finalize();
    return simulate(g, h).last_end;
  };
  const TaskCost one = cost_task_kind(kind(1), hw), two = cost_task_kind(kind(2), hw);
  EXPECT_NEAR(one.latency_exposures, n + 1, 1e-6);
  EXPECT_NEAR(two.latency_exposures, 2, 1e-6);
  for (const double scale : {1.0, 0.5}) {
    Hardware h = hw;
    h.gm.hbm_bandwidth_gbps *= scale;
    h.gm.hbm_write_bandwidth_gbps *= scale;
    const double bytes = cores * one.gm_bytes(), cap = h.hbm_bytes_per_cycle();
    const double q = h.hbm_queue_cycles();
    const double t = run(h, 1);
    const double u = bytes / (t * cap);
    ASSERT_LT(u, 1);
    EXPECT_NEAR(t, one.cycles + one.latency_exposures * q * u / (1 - u), 1e-6 * t) << scale;
    EXPECT_GT(t, std::max(one.cycles, bytes / cap)) << scale;  // slower than sharing alone
    Hardware plain = h;
    plain.gm.hbm_queue_ns = 0;
    EXPECT_NEAR(run(plain, 1), std::max(one.cycles, bytes / cap), 1e-6 * t) << scale;
    // Double-buffered, the same bytes queue twice per task only: within 1% of sharing alone.
    const double t2 = run(h, 2);
    EXPECT_NEAR(t2, std::max(two.cycles, bytes / cap), 1e-2 * t2) << scale;
  }
}

// A task's shared-bandwidth delay splits by its traffic (write share 1/3): lost 150 of 250 cycles,
// 100 for its reads and 50 for its writes. Each pipe counts its busy share (80 and 30 of 100
// idle cycles) of the delays it waits through: its own, plus the other's where mixed.
TEST(DmaAttribution, EachPipeWaitsForItsOwnTrafficAndForTheOthersWhereMixed) {
  TaskCost c;
  c.cycles = 100;
  c.mte2_busy = 80;
  c.mte3_busy = 30;
  const double w = 1.0 / 3;
  c.mixed_share = 0;  // in turn
  EXPECT_NEAR(shared_dma_busy(c, 250, 0, w).mte2, 80 * (1 + 100.0 / 100), 1e-9);
  EXPECT_NEAR(shared_dma_busy(c, 250, 0, w).mte3, 30 * (1 + 50.0 / 100), 1e-9);
  c.mixed_share = 0.5;
  EXPECT_NEAR(shared_dma_busy(c, 250, 0, w).mte2, 80 * (1 + 125.0 / 100), 1e-9);
  EXPECT_NEAR(shared_dma_busy(c, 250, 0, w).mte3, 30 * (1 + 100.0 / 100), 1e-9);
  c.mixed_share = 1;  // mixed: both stretch with the whole run
  EXPECT_DOUBLE_EQ(shared_dma_busy(c, 250, 0, w).mte2, 80 * 250.0 / 100);
  EXPECT_DOUBLE_EQ(shared_dma_busy(c, 250, 0, w).mte3, 30 * 250.0 / 100);
  // Never past the task; an unslowed task keeps its idle busy times.
  c.mte2_busy = 100;
  EXPECT_DOUBLE_EQ(shared_dma_busy(c, 250, 0, w).mte2, 250);
  EXPECT_DOUBLE_EQ(shared_dma_busy(c, 100, 0, w).mte3, 30);
}

// A task whose reads hit L2 runs between its kind's all-miss and all-hit runs (half its reads
// hitting: 80 idle cycles of 100 and 60), and so does its load pipe (60 busy of 80 and 40); its
// shared-bandwidth delay is measured from that run.
TEST(DmaAttribution, ReadsThatHitL2BusyTheLoadPipeAsTheHitRunDoes) {
  TaskCost c;
  c.cycles = 100;
  c.hit_cycles = 60;
  c.mte2_busy = 80;
  c.hit_mte2_busy = 40;
  c.mte3_busy = 30;
  EXPECT_DOUBLE_EQ(shared_dma_busy(c, 80, 0.5, 0).mte2, 60);
  EXPECT_DOUBLE_EQ(shared_dma_busy(c, 60, 1, 0).mte2, 40);
  EXPECT_DOUBLE_EQ(shared_dma_busy(c, 80, 0.5, 0).mte3, 30);
  c.mixed_share = 1;  // twice the idle run: both pipes stretch with it
  EXPECT_DOUBLE_EQ(shared_dma_busy(c, 160, 0.5, 0.5).mte2, 120);
  EXPECT_DOUBLE_EQ(shared_dma_busy(c, 160, 0.5, 0.5).mte3, 60);
}

// A core that starts the next task when the previous one's last load has issued (40 of 100
// cycles) has both tasks' loads outstanding from 40 to 60: the loads' union is [0, 100], not the
// 120 cycles of the two tasks' busy times. The stores do not meet ([70, 100] and [110, 140]).
TEST(DmaAttribution, ACoreCountsOverlappedTasksOutstandingCopiesOnce) {
  TaskCost c;
  c.cycles = 100;
  c.mte2_busy = 60;
  c.mte3_busy = 30;
  c.stages.load_done = 40;
  c.stages.load_ready = 60;
  c.stages.store_start = 70;
  c.stages.store_done = 90;
  c.stages.store_ready = 100;
  CoreDmaBusy core;
  core.add(c, 0, 100, 0, 0);
  core.add(c, 40, 100, 0, 0);
  EXPECT_DOUBLE_EQ(core.total().mte2, 100);
  EXPECT_DOUBLE_EQ(core.total().mte3, 60);
  // Twice as slow (shared memory), its window twice as long: [0, 120] and [80, 200].
  CoreDmaBusy slow;
  c.mixed_share = 1;
  slow.add(c, 0, 200, 0, 0.5);
  slow.add(c, 80, 200, 0, 0.5);
  EXPECT_DOUBLE_EQ(slow.total().mte2, 200);
}

// Two cores share HBM, one reading and one writing the same bytes: at capacity C below their
// summed demand both run at C / (dR + dW) until the shorter ends, the other then alone. Each
// pipe's busy time is its idle busy time stretched with its own run (its task's only traffic).
TEST(DmaAttribution, OneCoreReadingOneWritingShareHbm) {
  Hardware hw = ideal_runtime_hw();
  hw.gm.hbm_queue_ns = 0;  // the split of a delay, whatever makes it
  hw.gm.hbm_write_bandwidth_gbps = hw.gm.hbm_bandwidth_gbps = 100;  // binds; L2 does not
  hw.l2.bandwidth_gbps = hw.l2.read_bandwidth_gbps = 1e6;
  TaskGraph g;
  g.runtime = RuntimeStyle::kSpmd;
  g.add_psg("copy");
  g.add_kind(load_kind(64, 2048, 16));
  g.add_kind(dma_kind(DmaDir::kWrite, 64, 2048, 16));
  g.add_task(0, 0, 0);
  g.add_task(1, 0, 1);
  g.finalize();
  const TaskCost rd = cost_task_kind(g.kinds[0], hw), wr = cost_task_kind(g.kinds[1], hw);
  const SimResult r = simulate(g, hw);
  const double bytes = 16.0 * 64 * 2048, cap = hw.hbm_bytes_per_cycle();
  const double rate = cap / (bytes / rd.cycles + bytes / wr.cycles);
  ASSERT_LT(rate, 1);
  ASSERT_GE(cap, bytes / std::max(rd.cycles, wr.cycles));  // the survivor runs unslowed
  const double shorter = std::min(rd.cycles, wr.cycles), t1 = shorter / rate;
  const double end_rd = rd.cycles == shorter ? t1 : t1 + rd.cycles - shorter;
  const double end_wr = wr.cycles == shorter ? t1 : t1 + wr.cycles - shorter;
  EXPECT_NEAR(r.tasks[0].end, end_rd, 1e-6 * end_rd);
  EXPECT_NEAR(r.tasks[1].end, end_wr, 1e-6 * end_wr);
  EXPECT_EQ(r.tasks[0].write_share, 0);
  EXPECT_EQ(r.tasks[1].write_share, 1);
  const Metrics m = compute_metrics(g, r, hw);
  ASSERT_EQ(m.per_core.size(), 2u);
  EXPECT_NEAR(m.per_core[0].mte2_us, hw.cycles_to_us(rd.mte2_busy * end_rd / rd.cycles), 1e-6);
  EXPECT_NEAR(m.per_core[1].mte3_us, hw.cycles_to_us(wr.mte3_busy * end_wr / wr.cycles), 1e-6);
}

// N cores load one block at the same moment, each in R requests of 128 B: L2 serves the
// requests for one line one after another, so each load takes R x N x l2.same_line_request_ns
// when that exceeds its own run (the data_copy study's same-order loads), the first to start as
// long as the last; a lone reader runs at its own rate. A request is a burst's piece
// within one dma.gm_granule_bytes line: 2048 B bursts make four each.
TEST(SharedReads, CoReadersQueueForTheirLinesOnePerRequest) {
  Hardware hw = ideal_runtime_hw();
  hw.gm.hbm_queue_ns = 0;
  hw.gm.hbm_bandwidth_gbps = hw.gm.hbm_write_bandwidth_gbps = hw.l2.bandwidth_gbps =
      hw.l2.read_bandwidth_gbps = 1e6;
  hw.dma.gm_granule_bytes = 512;
  hw.l2.same_line_request_ns = 2.0;
  const auto last_end = [&](int32_t readers, int64_t burst_bytes, CoreType type) {
    TaskGraph g;
    g.runtime = RuntimeStyle::kSpmd;
    g.add_psg("copy");
    TaskKind k = load_kind(64, burst_bytes, 16);
    k.core = type;
    g.add_kind(k);
    for (int32_t c = 0; c < readers; ++c) {
      g.add_task(0, 0, c);
      g.add_access(c, {7, 16 * 64 * burst_bytes, false});
    }
    g.finalize();
    const SimResult r = simulate(g, hw);
    return std::pair{r.tasks[0].end, r.tasks[static_cast<size_t>(readers) - 1].end};
  };
  for (const CoreType type : {CoreType::kAiv, CoreType::kAic}) {
    const auto [alone, unused] = last_end(1, 128, type);
    const double queue = 16 * 64 * 8 * hw.ns_to_cycles(2.0);  // 1024 requests x 8 readers
    ASSERT_GT(queue, alone);
    EXPECT_NEAR(last_end(8, 128, type).second, queue, 1e-9 * queue);
    EXPECT_NEAR(last_end(8, 2048, type).second, 4 * queue, 1e-9 * queue);
    // Cores reading in step share the line's service whoever came first (the second pass).
    EXPECT_NEAR(last_end(8, 128, type).first, queue, 1e-9 * queue);
  }
}

// A task reads its blocks in the order it records them, each at its start plus its share of the
// task's read bytes before it, of its run. Two cores both read blocks 7 and 8 (1024 requests
// each): in the same order they read each block together and queue, 2048 requests x 2 readers x
// l2.same_line_request_ns; one in the reverse order reads 8 while the other reads 7 (half a run
// apart, a block's whole window), so no read has a co-reader and each runs as it would without
// the queue (catlass's shuffled K loop: ENABLE_SHUFFLE_K).
TEST(SharedReads, ReadersOfOneBlockAtOtherPointsOfTheirRunsDoNotQueue) {
  Hardware hw = ideal_runtime_hw();
  hw.gm.hbm_queue_ns = 0;
  hw.gm.hbm_bandwidth_gbps = hw.gm.hbm_write_bandwidth_gbps = hw.l2.bandwidth_gbps =
      hw.l2.read_bandwidth_gbps = 1e6;
  hw.dma.gm_granule_bytes = 512;
  const auto last_end = [&](bool reversed, double same_line_ns) {
    hw.l2.same_line_request_ns = same_line_ns;
    TaskGraph g;
    g.runtime = RuntimeStyle::kSpmd;
    g.add_psg("copy");
    g.add_kind(load_kind(64, 128, 32));
    for (int32_t c = 0; c < 2; ++c) {
      g.add_task(0, 0, c);
      const bool back = reversed && c == 1;
      g.add_access(c, {back ? 8U : 7U, 16 * 64 * 128, false});
      g.add_access(c, {back ? 7U : 8U, 16 * 64 * 128, false});
    }
    g.finalize();
    const SimResult r = simulate(g, hw);
    return std::max(r.tasks[0].end, r.tasks[1].end);
  };
  const double queue = 2048 * 2 * hw.ns_to_cycles(4.0);
  ASSERT_GT(queue, last_end(false, 0));
  EXPECT_NEAR(last_end(false, 4.0), queue, 1e-9 * queue);
  EXPECT_NEAR(last_end(true, 4.0), last_end(true, 0), 1e-9 * queue);
}

// Two tasks read one block, on one core one after the other: no read has a co-reader on either
// side, so the first pass is the answer (a second pass from its
// starts would repeat it exactly); on two cores they start together, co-readers, and the second
// pass runs.
TEST(SharedReads, ReadersApartInTimeNeedNoSecondPass) {
  Hardware hw = ideal_runtime_hw();
  hw.gm.hbm_queue_ns = 0;
  hw.gm.hbm_bandwidth_gbps = hw.gm.hbm_write_bandwidth_gbps = hw.l2.bandwidth_gbps =
      hw.l2.read_bandwidth_gbps = 1e6;
  hw.dma.gm_granule_bytes = 512;
  hw.l2.same_line_request_ns = 8.0;  // two readers' 1024 requests queue past a lone run
  const auto graph = [&](bool chained) {
    TaskGraph g;
    g.runtime = RuntimeStyle::kSpmd;
    g.add_psg("copy");
    g.add_kind(load_kind(64, 128, 16));
    for (int32_t c = 0; c < 2; ++c) {
      g.add_task(0, 0, chained ? 0 : c);
      g.add_access(c, {7, 16 * 64 * 128, false});
    }
    g.finalize();
    return g;
  };
  for (const bool chained : {true, false}) {
    const TaskGraph g = graph(chained);
    std::vector<TaskCost> costs{cost_task_kind(g.kinds[0], hw)};
    SimOptions first;
    first.find_co_readers = true;
    const SimResult one = simulate_costed(g, costs, hw, first);
    EXPECT_EQ(one.l2_co_readers, !chained);
    SimOptions second;
    for (const TaskRecord& r : one.tasks) second.prior_starts.push_back(r.start);
    const SimResult two = simulate_costed(g, costs, hw, second);
    const SimResult chosen = simulate(g, hw);
    for (size_t t = 0; t < 2; ++t) {
      EXPECT_EQ(chosen.tasks[t].end, two.tasks[t].end);
      if (chained) {
        EXPECT_EQ(one.tasks[t].end, two.tasks[t].end);
      }
    }
  }
}

// K cores each load, add and store one tile at a time, HBM-bound: every task runs
// dur = K (R + W) / C. Its reads and writes share its delay lost = dur - cycles by bytes. With one
// buffer a load meets stores in turn, each pipe counting its own traffic's delay; double
// buffered, they are mixed (share from the pipeline) and the load pipe waits for the writes too.
TEST(DmaAttribution, LoadsAndStoresInTurnOrMixedUnderSharedHbm) {
  Hardware hw = ideal_runtime_hw();
  hw.gm.hbm_queue_ns = 0;  // the split of a delay, whatever makes it
  hw.gm.hbm_write_bandwidth_gbps = hw.gm.hbm_bandwidth_gbps = 400;
  hw.l2.bandwidth_gbps = hw.l2.read_bandwidth_gbps = 1e6;
  const int cores = 16;
  const int64_t tile = 16384;
  for (const int depth : {1, 2}) {
    const TaskKind k = add_kind(tile, 64, depth);
    TaskGraph g;
    g.runtime = RuntimeStyle::kSpmd;
    g.add_psg("add");
    g.add_kind(k);
    for (int c = 0; c < cores; ++c) g.add_task(0, 0, c);
    g.finalize();
    const TaskCost c = cost_task_kind(g.kinds[0], hw);
    ASSERT_EQ(c.depth, depth);
    EXPECT_EQ(c.mixed_share == 0, depth == 1);
    const SimResult r = simulate(g, hw);
    const double dur = cores * (c.gm_read_bytes + c.gm_write_bytes) / hw.hbm_bytes_per_cycle();
    ASSERT_GT(dur, c.cycles);
    EXPECT_NEAR(r.last_end, dur, 1e-6 * dur);
    const double lost = dur - c.cycles, w = c.gm_write_bytes / c.gm_bytes();
    EXPECT_NEAR(r.tasks[0].write_share, w, 1e-6);
    const double mte2 = c.mte2_busy * (1 + (lost * (1 - w) + c.mixed_share * lost * w) / c.cycles);
    const double mte3 = c.mte3_busy * (1 + (lost * w + c.mixed_share * lost * (1 - w)) / c.cycles);
    const Metrics m = compute_metrics(g, r, hw);
    EXPECT_NEAR(pipe_mean_us(m, "MTE2"), hw.cycles_to_us(std::min(dur, mte2)), 1e-4) << depth;
    EXPECT_NEAR(pipe_mean_us(m, "MTE3"), hw.cycles_to_us(std::min(dur, mte3)), 1e-4) << depth;
    if (depth == 1) {  // in turn: the read pipe sits through the reads' delay only
      EXPECT_LT(pipe_mean_us(m, "MTE2"), hw.cycles_to_us(c.mte2_busy * dur / c.cycles));
    }
  }
}

}  // namespace
}  // namespace tilesim
