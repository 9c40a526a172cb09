// The six fixed parts of a kernel's time (sim/launch_cost.hpp), each in closed form.
#include <gtest/gtest.h>

#include "sim/launch_cost.hpp"
#include "test_support.hpp"
#include "tools/analyses/run_kernel.hpp"

namespace tilesim {
namespace {

// The start a kernel pays: the vector-only launch unless a task runs on a cube core; a PyPTO
// kernel adds its scheduler threads' handshake, one poll per core (4 x 100 ns on the 910B1); every
// kernel ends with kernel.end_us.
TEST(LaunchCost, ByKernelType) {
  const Hardware hw = load_hardware(shipped_hardware_path("ascend910b1"));
  TaskGraph g;
  g.add_psg("p");
  TaskKind vec;
  g.add_kind(vec);
  g.add_task(0, 0);
  g.runtime = RuntimeStyle::kMpmd;
  EXPECT_EQ(kernel_launch_us(g, hw), hw.kernel.vector_launch_us);
  EXPECT_DOUBLE_EQ(aicpu_handshake_us(g, hw), 0.4);
  EXPECT_EQ(kernel_end_us(g, hw), hw.kernel.end_us);
  g.runtime = RuntimeStyle::kSpmd;
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
//  - a PyPTO kernel of one root with one task: the hand-shake (4 cores x 100 ns); the root's
//    build, its task's and the device task's submit; one dispatch and its notify; the last
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
  EXPECT_DOUBLE_EQ(m.launch_us, hw.kernel.vector_launch_us);
  EXPECT_DOUBLE_EQ(m.handshake_us, 4 * hw.scheduler.poll_ns / 1000);
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

}  // namespace
}  // namespace tilesim
