// The memory behind the cores: the L2 start states ("runtime": {"l2": "cold" | "warm" |
// "flushed"}) and the two bandwidth stages (L2 for every byte, HBM for misses and write-backs).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/error.hpp"
#include "sim/l2_residency.hpp"
#include "sim/simulator.hpp"
#include "test_support.hpp"
#include "tools/analyses/run_kernel.hpp"
#include "tools/formats/run_config.hpp"

namespace tilesim {
namespace {

// One task reading two input blocks (1000 B each) and writing one output block (1000 B).
TaskGraph read_two_write_one() {
  TaskGraph g;
  g.add_psg("t");
  TaskKind k;
  k.psg = 0;
  const int32_t kind = g.add_kind(k);
  const int32_t t = g.add_task(kind, 0);
  g.add_access(t, {1, 1000, false});
  g.add_access(t, {2, 1000, false});
  g.add_access(t, {3, 1000, true});
  g.finalize();
  return g;
}

TEST(L2Warm, InputsThatFitAreResidentAndCostNoHbm) {
  const TaskGraph g = read_two_write_one();
  // Footprint 3000 B fits 4096 B: writes are absorbed; cold reads miss (2000 of 3000 B), warm
  // ones hit.
  const auto cold = L2Residency(g, 4096, L2Start::kCold).on_start(0);
  ASSERT_TRUE(cold);
  EXPECT_DOUBLE_EQ(cold->read_hbm, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(cold->write_hbm, 0.0);
  const auto warm = L2Residency(g, 4096, L2Start::kWarm).on_start(0);
  EXPECT_DOUBLE_EQ(warm->read_hbm, 0.0);
  EXPECT_DOUBLE_EQ(warm->write_hbm, 0.0);
}

TEST(L2Warm, InputsThatDoNotFitGainNothing) {
  const TaskGraph g = read_two_write_one();
  // 2000 B of inputs in 1500 B of L2: no preload; every byte goes to HBM either way.
  for (const L2Start start : {L2Start::kCold, L2Start::kWarm}) {
    const auto t = L2Residency(g, 1500, start).on_start(0);
    EXPECT_DOUBLE_EQ(t->read_hbm, 2.0 / 3.0);
    EXPECT_DOUBLE_EQ(t->write_hbm, 1.0 / 3.0);
  }
}

TEST(L2Warm, BypassingReadsLeaveL2ToTheWrites) {
  // The two inputs read past L2 (SetL2CacheHint(CACHE_MODE_DISABLE)): the footprint is the 1000 B
  // output alone, which fits 1500 B, so the write is absorbed; the reads still miss.
  TaskGraph g;
  g.add_psg("t");
  const int32_t kind = g.add_kind(TaskKind{});
  const int32_t t = g.add_task(kind, 0);
  g.add_access(t, {1, 1000, false, true});
  g.add_access(t, {2, 1000, false, true});
  g.add_access(t, {3, 1000, true});
  const int32_t u = g.add_task(kind, 0);
  g.add_access(u, {3, 1000, false, true});  // a bypassing read of a line L2 holds: a hit
  g.add_access(u, {1, 1000, false, true});  // bypassed before, so never kept: a miss
  g.finalize();
  L2Residency l2(g, 1500, L2Start::kWarm);  // warm: bypassed inputs were never kept either
  const auto first = l2.on_start(t);
  EXPECT_DOUBLE_EQ(first->read_hbm, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(first->write_hbm, 0.0);
  EXPECT_TRUE(l2.absorbs_writes());
  const auto second = l2.on_start(u);
  EXPECT_DOUBLE_EQ(second->read_hbm, 0.5);
  EXPECT_DOUBLE_EQ(second->read_hit, 0.5);
  // The same task without the bypass: 3000 B do not fit 1500 B, so the write goes to HBM too.
  EXPECT_DOUBLE_EQ(L2Residency(read_two_write_one(), 1500).on_start(0)->write_hbm, 1.0 / 3.0);
}

TEST(L2Warm, AFlushedL2WritesBackOneDirtyLinePerAllocation) {
  const TaskGraph g = read_two_write_one();
  // Three blocks allocated (two read misses, one write) each evict 1000 dirty bytes; the
  // kernel's own write is absorbed (footprint 3000 B <= 4096 B).
  const auto t = L2Residency(g, 4096, L2Start::kDirty).on_start(0);
  EXPECT_DOUBLE_EQ(t->read_hbm, 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(t->write_hbm, 1.0);
  // Only l2.bytes of dirty lines exist: with 1500 B, 1500 B are written back, plus the write.
  const auto small = L2Residency(g, 1500, L2Start::kDirty).on_start(0);
  EXPECT_DOUBLE_EQ(small->write_hbm, 2500.0 / 3000.0);
  EXPECT_STREQ(l2_start_name(L2Start::kDirty), "flushed");
}

TEST(L2Warm, IsReadFromTheRuntimeKeyAndDefaultsToCold) {
  auto doc = nlohmann::json::parse(
      R"({"op": "relu", "shape": [64, 1024], "tile": [8, 1024], "dtype": "fp32"})");
  EXPECT_EQ(runtime_options_from_json(doc, "a.json").l2_start, L2Start::kCold);
  doc["runtime"] = {{"l2", "warm"}};
  EXPECT_EQ(runtime_options_from_json(doc, "a.json").l2_start, L2Start::kWarm);
  doc["runtime"] = {{"l2", "hot"}};
  try {
    runtime_options_from_json(doc, "a.json");
    ADD_FAILURE() << "accepted l2 hot";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "a.json: runtime.l2: \"hot\" is not allowed (allowed: cold, warm, flushed)");
  }
}

// A bandwidth-bound read stream (copy_in of 96 MiB on 48 cores): warm runs faster when its input
// fits L2 (then the L2 stage binds, not HBM), and exactly as fast as cold when L2 is smaller than
// the input. (A read+write kernel gains less: its absorbed writes load the L2 stage too.)
TEST(L2Warm, WarmSmallInputRunsFasterAndTooLargeGainsNothing) {
  RunConfig rc = load_run_config(test::source_path("configs/examples/copy_in_pypto.json"));
  rc.spec.shape = {4096, 12288};
  rc.spec.loop_count = 4;
  Hardware hw = load_hardware(rc.hardware);
  SimOptions cold, warm;
  warm.l2_start = L2Start::kWarm;
  ASSERT_GE(hw.l2.bytes, int64_t{96} << 20);  // the input fits
  const double cold_us = run_kernel(rc.spec, hw, cold).metrics.kernel_time_us;
  const double warm_us = run_kernel(rc.spec, hw, warm).metrics.kernel_time_us;
  EXPECT_LT(warm_us, cold_us);
  hw.l2.bytes = int64_t{32} << 20;  // a third of the input
  EXPECT_DOUBLE_EQ(run_kernel(rc.spec, hw, warm).metrics.kernel_time_us,
                   run_kernel(rc.spec, hw, cold).metrics.kernel_time_us);
}

// An spmd relu on the 910B4 (40 AIV), `rows` x 65536 fp32, in (1, 8192) sub-tiles on 40 blocks.
KernelSpec spmd_relu(int64_t rows) {
  KernelSpec s;
  s.op = "relu";
  s.shape = {rows, 65536};
  s.tile = {1, 8192};
  s.partition = PartitionStyle::kSpmd;
  s.grid = 40;
  return s;
}

// Halving HBM bandwidth doubles a cold stream far larger than L2 (1 GiB in, 1 GiB out: every
// byte through HBM), and leaves a warm kernel whose inputs and outputs fit L2 untouched (hits and
// absorbed writes never reach HBM); halving L2 bandwidth slows that warm kernel instead.
TEST(MemoryStages, HalvedHbmDoublesAColdStreamAndSparesAWarmKernel) {
  const Hardware hw = load_hardware(shipped_hardware_path("ascend910b4"));
  Hardware half = hw;
  half.gm.hbm_bandwidth_gbps /= 2;
  half.gm.hbm_write_bandwidth_gbps /= 2;
  SimOptions cold, warm;
  warm.l2_start = L2Start::kWarm;
  const KernelSpec big = spmd_relu(4096);
  const double t = run_kernel(big, hw, cold).metrics.gen_time_us;
  EXPECT_NEAR(run_kernel(big, half, cold).metrics.gen_time_us / t, 2.0, 0.05);
  const KernelSpec small = spmd_relu(64);  // 16 MiB in, 16 MiB out: fits 96 MiB
  const double w = run_kernel(small, hw, warm).metrics.gen_time_us;
  EXPECT_DOUBLE_EQ(run_kernel(small, half, warm).metrics.gen_time_us, w);
  Hardware slow_l2 = hw;
  slow_l2.l2.bandwidth_gbps /= 4;
  EXPECT_GT(run_kernel(small, slow_l2, warm).metrics.gen_time_us, 1.5 * w);
}

// A write-back costs hbm read / write bandwidth read bytes: a cold read+write stream is slower
// than a read-only one by exactly that mix when HBM binds.
TEST(MemoryStages, WriteBacksCostTheirOwnBandwidth) {
  const Hardware hw = load_hardware(shipped_hardware_path("ascend910b4"));
  Hardware even = hw;
  even.gm.hbm_write_bandwidth_gbps = hw.gm.hbm_bandwidth_gbps;
  const KernelSpec big = spmd_relu(4096);
  const double t = run_kernel(big, hw, {}).metrics.gen_time_us;
  const double t_even = run_kernel(big, even, {}).metrics.gen_time_us;
  // Equal bytes read and written: time ~ (1/read + 1/write) / (2/read).
  const double want = (1 / hw.gm.hbm_bandwidth_gbps + 1 / hw.gm.hbm_write_bandwidth_gbps) /
                      (2 / hw.gm.hbm_bandwidth_gbps);
  EXPECT_NEAR(t / t_even, want, 0.03 * want);
}

}  // namespace
}  // namespace tilesim
