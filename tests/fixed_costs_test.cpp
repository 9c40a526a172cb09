// The six fixed parts of a kernel's time (sim/launch_cost.hpp), each in closed form.
#include <gtest/gtest.h>

#include <cmath>

#include "sim/launch_cost.hpp"
#include "sim/simulator.hpp"
#include "test_support.hpp"
#include "tools/analyses/run_kernel.hpp"
#include "tools/reports/report.hpp"

namespace tilesim {
namespace {

// The start a kernel pays: an SPMD kernel the vector-only launch unless a task runs on a cube
// core; a PyPTO kernel always the mixed launch (its AICore binary is a MIX_AIC kernel on every AI
// core, hicann/pypto device_launcher.cpp LaunchAicoreKernel) and its scheduler threads'
// hand-shake, one poll per core a thread manages (8 AIC + 16 AIV x 100 ns on the 910B1, 7 + 14 on
// the 910B4); every kernel ends with kernel.end_us.
TEST(LaunchCost, ByKernelType) {
  const Hardware hw = load_hardware(shipped_hardware_path("ascend910b1"));
  TaskGraph g;
  g.add_psg("p");
  TaskKind vec;
  g.add_kind(vec);
  g.add_task(0, 0);
  g.runtime = RuntimeStyle::kMpmd;
  EXPECT_FALSE(starts_cube_cores(g));
  EXPECT_EQ(kernel_launch_us(g, hw), hw.kernel.mixed_launch_us);
  EXPECT_NEAR(aicpu_handshake_us(g, hw), (8 + 16) * 0.1, 1e-12);
  EXPECT_NEAR(aicpu_handshake_us(g, load_hardware(shipped_hardware_path("ascend910b4"))),
              (7 + 14) * 0.1, 1e-12);
  EXPECT_EQ(kernel_end_us(g, hw), hw.kernel.end_us);
  g.runtime = RuntimeStyle::kSpmd;
  EXPECT_EQ(kernel_launch_us(g, hw), hw.kernel.vector_launch_us);
  EXPECT_EQ(aicpu_handshake_us(g, hw), 0.0);
  EXPECT_EQ(kernel_end_us(g, hw), hw.kernel.end_us);
  TaskKind cube;
  cube.core = CoreType::kAic;
  g.add_kind(cube);
  EXPECT_TRUE(starts_cube_cores(g));
  EXPECT_EQ(kernel_launch_us(g, hw), hw.kernel.mixed_launch_us);
  EXPECT_LT(hw.kernel.vector_launch_us, hw.kernel.mixed_launch_us);
  // Between two launches of one SPMD run: the first one's end and the second one's start.
  EXPECT_NEAR(launch_gap_cycles(hw, g),
              hw.ns_to_cycles(1000 * (hw.kernel.end_us + hw.kernel.mixed_launch_us)), 1e-9);
}

// kernel_time_us = launch_us + handshake_us + root_build_us + dispatch_us + gen_time_us +
// completion_us + end_us, each of the six fixed parts in closed form on one-tile kernels of the
// 910B1 (head_us = root_build_us + dispatch_us):
//  - an spmd (Triton / Ascend C block) vector kernel: the vector launch; no hand-shake, no root
//    build; the first block's start on its core (scheduler.block_start_ns) as its dispatch; no
//    completion hop; the kernel's end;
//  - an ascendc kernel (pinned cores, started at launch): no dispatch either;
//  - a PyPTO kernel of one root with one task: the mixed launch; no hand-shake of its own (its
//    24 polls, 2.4 us, run while the control AICPU builds for 6 us); the root's build, its task's
//    and the device task's submit; one dispatch and its notify; the last
//    task's completion: its scheduler sees the task's ACK as it starts (one poll) and then stops
//    its 24 cores (8 AIC + 16 AIV), one register write each, so the core is released
//    max(turnaround, poll + 24 x notify - the task's run) after the task ends; the end;
//  - a kernel that starts cube cores: the mixed launch.
TEST(FixedCosts, EachPartOfTheKernelTimeHasItsClosedForm) {
  const Hardware hw = load_hardware(shipped_hardware_path("ascend910b1"));
  KernelSpec s;
  s.op = "add";
  s.shape = {8, 1024};
  s.tile = {8, 1024};
  s.partition = PartitionStyle::kSpmd;
  s.grid = 1;
  const auto parts = [&](const KernelSpec& spec) {
    const Metrics m = run_kernel(spec, hw).metrics;
    EXPECT_NEAR(m.head_us, m.root_build_us + m.dispatch_us, 1e-12);
    EXPECT_NEAR(m.kernel_time_us,
                m.launch_us + m.handshake_us + m.root_build_us + m.dispatch_us + m.gen_time_us +
                    m.completion_us + m.end_us,
                1e-9);
    EXPECT_DOUBLE_EQ(m.end_us, hw.kernel.end_us);
    return m;
  };
  Metrics m = parts(s);
  EXPECT_DOUBLE_EQ(m.launch_us, hw.kernel.vector_launch_us);
  EXPECT_DOUBLE_EQ(m.handshake_us, 0.0);
  EXPECT_DOUBLE_EQ(m.root_build_us, 0.0);
  EXPECT_NEAR(m.dispatch_us, hw.scheduler.block_start_ns / 1000, 1e-9);
  EXPECT_DOUBLE_EQ(m.completion_us, 0.0);
  s.partition = PartitionStyle::kAscendC;
  s.cores = 1;
  m = parts(s);
  EXPECT_DOUBLE_EQ(m.head_us, 0.0);
  s.partition = PartitionStyle::kPypto;
  s.cores = 0;
  s.max_tasks_per_psg = 0;
  m = parts(s);
  ASSERT_EQ(m.tasks, 1);
  EXPECT_DOUBLE_EQ(m.launch_us, hw.kernel.mixed_launch_us);
  EXPECT_DOUBLE_EQ(m.handshake_us, 0.0);
  EXPECT_NEAR(
      m.root_build_us,
      (hw.control.root_build_ns + hw.control.task_build_ns + hw.control.device_task_submit_ns) /
          1000,
      1e-9);
  EXPECT_NEAR(m.dispatch_us,
              hw.scheduler.notify_ns / 1000 + hw.cycles_to_us(hw.scheduler.dispatch_cycles), 1e-9);
  const double stops = (hw.scheduler.poll_ns + 24 * hw.scheduler.notify_ns) / 1000;
  ASSERT_GT(stops - m.gen_time_us, hw.scheduler.task_gap_ns / 1000);  // the stops outlast it
  EXPECT_NEAR(m.completion_us, stops - m.gen_time_us, 1e-9);
  KernelSpec mm;  // one C tile of 32 k steps: a task that outlasts the stops
  mm.op = "matmul";
  mm.dtype = DType::kFp16;
  mm.shape = {128, 2048, 256};
  mm.tile = {128, 64, 256};
  mm.partition = PartitionStyle::kPypto;
  m = parts(mm);
  ASSERT_EQ(m.tasks, 1);
  ASSERT_GT(m.gen_time_us, stops);  // released a turnaround after its end
  EXPECT_NEAR(m.completion_us, hw.scheduler.task_gap_ns / 1000, 1e-9);
  mm = KernelSpec{};
  mm.op = "matmul";
  mm.dtype = DType::kFp16;
  mm.shape = {128, 256, 256};
  mm.tile = {128, 256, 256};
  mm.partition = PartitionStyle::kSpmd;
  mm.grid = 1;
  m = parts(mm);
  EXPECT_DOUBLE_EQ(m.launch_us, hw.kernel.mixed_launch_us);
  EXPECT_NEAR(m.dispatch_us, hw.scheduler.block_start_ns / 1000, 1e-9);
}

// The control AICPU builds the first device task while the scheduler threads shake hands with
// their cores (the threads prefetch it inside their hand-shake loop, aicore_manager.h
// HandShakeTryPreFetchDevTask): the first device task is released at max(build, hand-shake).
// The kernel's time shows the hand-shake only where it outlasts the build, and its parts still
// add up.
TEST(FixedCosts, HandShakeOverlapsTheFirstBuild) {
  Hardware hw = load_hardware(shipped_hardware_path("ascend910b1"));
  KernelSpec s;
  s.op = "add";
  s.shape = {8, 1024};
  s.tile = {8, 1024};
  s.partition = PartitionStyle::kPypto;
  const double handshake = 24 * hw.scheduler.poll_ns / 1000;  // 2.4 us
  const auto with_build = [&](double submit_ns) {
    hw.control.root_build_ns = hw.control.task_build_ns = 0;
    hw.control.device_task_submit_ns = submit_ns;
    const RunOutcome r = run_kernel(s, hw);
    EXPECT_EQ(r.metrics.tasks, 1);
    const Metrics& m = r.metrics;
    EXPECT_NEAR(m.kernel_time_us,
                m.launch_us + m.handshake_us + m.root_build_us + m.dispatch_us + m.gen_time_us +
                    m.completion_us + m.end_us,
                1e-9);
    EXPECT_NEAR(m.dispatch_us,
                hw.scheduler.notify_ns / 1000 + hw.cycles_to_us(hw.scheduler.dispatch_cycles),
                1e-9);
    return m;
  };
  Metrics m = with_build(1000);  // a 1 us build: the hand-shake adds 1.4 us
  EXPECT_NEAR(m.root_build_us, 1.0, 1e-9);
  EXPECT_NEAR(m.handshake_us, handshake - 1.0, 1e-9);
  EXPECT_NEAR(m.head_us, handshake + m.dispatch_us, 1e-9);
  m = with_build(5000);  // a 5 us build hides it
  EXPECT_NEAR(m.root_build_us, 5.0, 1e-9);
  EXPECT_DOUBLE_EQ(m.handshake_us, 0.0);
  EXPECT_NEAR(m.head_us, 5.0 + m.dispatch_us, 1e-9);
}

// What PyPTO's swimlane spans (tools/profiling/draw_swim_lane.py: max(execEnd) - min(execStart)),
// each task's lane entry running from its core entering ExecDynCoreFunctionKernel to the
// PipeSync after the leaf function (interface/machine/device/tilefwk/aicore_entry.h): the launch,
// the AICPU start, the builds, the dispatch and the release are outside it, so a one-task
// kernel's gen_time_us is its task's idle-machine cost, to the cycle (HBM queueing off: the one
// task's own traffic would queue behind itself by under a cycle, sim/shared_bandwidth.hpp).
TEST(Swimlane, SpanOfOneTaskIsTheTask) {
  Hardware hw = load_hardware(shipped_hardware_path("ascend910b1"));
  hw.gm.hbm_queue_ns = 0;
  KernelSpec s;
  s.op = "rmsnorm";
  s.dtype = DType::kFp16;
  s.shape = {1, 1024};
  s.tile = {1, 1024};
  s.partition = PartitionStyle::kPypto;
  const RunOutcome r = run_kernel(s, hw);
  ASSERT_EQ(r.metrics.tasks, 1);
  const double cycles = r.sim.kind_costs[static_cast<size_t>(r.kernel.graph.tasks[0].kind)].cycles;
  EXPECT_NEAR(r.metrics.gen_time_us, hw.cycles_to_us(cycles), 1e-9);
  EXPECT_GT(r.metrics.kernel_time_us, r.metrics.gen_time_us + hw.kernel.mixed_launch_us);
}

// A chain of two dependent tasks spans both bodies and one hand-off through the AICPU: the
// first's completion is seen at the owning thread's next poll of its core (the only busy one:
// the first poll slot at or after end + scheduler.completion_notify_ns), then the thread pays
// the completion, the successor's last-predecessor resolve and its dispatch, and the task
// reaches an idle core scheduler.notify_ns later (aicore_manager.h ResolveDepForAllAiCore,
// ResolveDepDyn, SendTaskToAiCore).
TEST(Swimlane, SpanOfAChainAddsOneHandOffPerEdge) {
  const Hardware hw = load_hardware(shipped_hardware_path("ascend910b1"));
  TaskGraph g;
  g.add_psg("fixed");
  TaskKind k;
  k.label = "fixed";
  g.add_kind(k);
  g.add_task(0, 0);
  g.add_task(0, 0);
  g.add_edge(0, 1);
  g.finalize();
  const double d = 1000;  // cycles per task
  TaskCost c;
  c.cycles = d;
  const SimResult r = simulate_costed(g, {c}, hw);
  const double end0 = r.tasks[0].end;
  ASSERT_NEAR(end0 - r.tasks[0].start, d, 1e-9);
  const double poll = hw.ns_to_cycles(hw.scheduler.poll_ns);
  const double seen =
      std::ceil((end0 + hw.ns_to_cycles(hw.scheduler.completion_notify_ns)) / poll - 1e-9) * poll;
  const double handoff = seen - end0 + hw.scheduler.completion_cycles +
                         hw.scheduler.resolve_last_cycles + hw.scheduler.dispatch_cycles +
                         hw.ns_to_cycles(hw.scheduler.notify_ns);
  EXPECT_NEAR(r.tasks[1].start - end0, handoff, 1e-6);
  EXPECT_NEAR(r.last_end - r.first_start, 2 * d + handoff, 1e-6);
  // 1.09-1.19 us on the 910B1: the hop (0.6 us), a poll (<= 0.1 us), 640 AICPU cycles (0.35 us),
  // the notify (0.14 us).
  EXPECT_GT(hw.cycles_to_us(handoff), 1.08);
  EXPECT_LT(hw.cycles_to_us(handoff), 1.2);
}

// The run table's span path line (tools/reports/report.hpp): shown when the critical path holds
// more than one task, each part in us.
TEST(Swimlane, SpanPathLineNamesEachPart) {
  const Hardware hw = load_hardware(shipped_hardware_path("ascend910b1"));
  const double us = hw.ns_to_cycles(1000);
  SpanPath p;
  p.tasks = 1;
  p.task_cycles = us;
  EXPECT_EQ(span_path_line(p, hw), "");
  p.tasks = 3;
  p.task_cycles = 0.99 * us;
  p.handoffs = 2;
  p.handoff_cycles = 2.582 * us;
  EXPECT_EQ(span_path_line(p, hw), "  span path: 3 tasks 0.990 us + 2 hand-offs 2.582 us\n");
  p.core_wait_cycles = 0.3 * us;
  p.head_cycles = 1.081 * us;
  EXPECT_EQ(span_path_line(p, hw),
            "  span path: 3 tasks 0.990 us + 2 hand-offs 2.582 us + core turnarounds 0.300 us + "
            "start-up 1.081 us\n");
}

}  // namespace
}  // namespace tilesim
