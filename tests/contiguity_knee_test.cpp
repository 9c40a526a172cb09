// tools/contiguity_knee: the contiguous-bytes knee measured through copy_in, lowering and the
// simulator, checked against closed forms and the mechanisms that shape it.
#include <gtest/gtest.h>

#include "model/dma_cost.hpp"
#include "model/error.hpp"
#include "test_support.hpp"
#include "tools/analyses/contiguity_knee.hpp"

namespace tilesim {
namespace {

using test::default_hw;

const KneePoint& point_at(const KneeCurve& k, int64_t bytes) {
  for (const auto& p : k.points)
    if (p.contiguous_bytes == bytes) return p;
  throw Error("no grid point at " + std::to_string(bytes) + " B");
}

TEST(ContiguityKnee, GridIsAlignedStepsThenPowersOfTwo) {
  const Hardware hw = default_hw();
  const std::vector<int64_t> g = knee_grid(hw);
  ASSERT_EQ(hw.ub.align_bytes, 32);
  // 32..2048 step 32, 2304..8192 step 256, then 16 and 32 KiB.
  ASSERT_EQ(g.size(), 2048u / 32 + (8192u - 2048) / 256 + 2);
  EXPECT_EQ(g.front(), 32);
  EXPECT_EQ(g[63], 2048);
  EXPECT_EQ(g[64], 2304);
  EXPECT_EQ(g[63 + 24], 8192);
  EXPECT_EQ(g.back(), kKneeMaxBytes);
  for (size_t i = 1; i < g.size(); ++i) EXPECT_GT(g[i], g[i - 1]);
}

TEST(ContiguityKnee, KneeIsTheStartOfTheLastRunAboveTheLevel) {
  const std::vector<KneePoint> pts = {
      {32, 0, 0.95}, {64, 0, 0.85}, {128, 0, 0.92}, {256, 0, 0.96}, {512, 0, 1.0}};
  EXPECT_EQ(knee_at(pts, 0.90), 128);  // 32 reaches 90% but 64 falls back below
  EXPECT_EQ(knee_at(pts, 0.95), 256);
  EXPECT_EQ(knee_at(pts, 1.0), 512);
  EXPECT_FALSE(knee_at(pts, 1.01).has_value());
  EXPECT_FALSE(knee_at({}, 0.9).has_value());
}

// 1. One core streaming: efficiency rises with contiguous bytes and ends at the plateau. A tile
// holds floor(32 KiB / c) rows, so where c does not divide 32 KiB the per-tile costs spread over
// a little fewer bytes: a dip of up to 0.5% is that quantisation, not a fall of the curve.
TEST(ContiguityKnee, IdleCoreEfficiencyIsNonDecreasingUpToThePlateau) {
  const Hardware hw = default_hw();
  const KneeCurve k = measure_knee_curve(hw, DType::kFp32, 1);
  EXPECT_EQ(k.cores, 1);
  EXPECT_EQ(k.scenario, "idle core");
  ASSERT_EQ(k.points.size(), knee_grid(hw).size());
  for (size_t i = 1; i < k.points.size(); ++i)
    EXPECT_GE(k.points[i].efficiency, k.points[i - 1].efficiency - 0.005)
        << k.points[i].contiguous_bytes << " B";
  EXPECT_DOUBLE_EQ(k.points.back().efficiency, 1.0);
  EXPECT_DOUBLE_EQ(k.plateau_gbps, k.points.back().gbps);
  // The per-burst cost makes the shortest runs clearly inefficient.
  EXPECT_LT(k.points.front().efficiency, 0.5);
  ASSERT_TRUE(k.knee90_bytes && k.knee95_bytes);
  EXPECT_LE(*k.knee90_bytes, *k.knee95_bytes);
  EXPECT_GE(point_at(k, *k.knee90_bytes).efficiency, 0.90);
}

// 2. A stream of identical DMAs on one core is bound by MTE2 occupancy: at large runs the
// measured bandwidth is the DMA cost's closed form, short of it only by the one exposed latency.
TEST(ContiguityKnee, IdleCoreBandwidthMatchesTheDmaOccupancyClosedForm) {
  const Hardware hw = default_hw();
  const KneeCurve k = measure_knee_curve(hw, DType::kFp32, 1);
  for (int64_t c : {int64_t{4096}, int64_t{16384}, kKneeMaxBytes}) {
    const int64_t rows = kKneeTileBytes / c;  // one burst per tile row
    const DmaOp op{DmaDir::kRead, rows, c, 0};
    const double closed_gbps =
        static_cast<double>(op.bytes()) / dma_occupancy_cycles(op, hw) * hw.clock_mhz * 1e-3;
    const double got = point_at(k, c).gbps;
    EXPECT_NEAR(got, closed_gbps, 0.02 * closed_gbps) << c << " B";
    EXPECT_LE(got, closed_gbps * (1 + 1e-9)) << c << " B";
  }
}

// 3. All cores streaming share HBM: the plateau never exceeds it, and the shared bandwidth hides
// per-burst costs, so the knee comes no later than on an idle core.
TEST(ContiguityKnee, AllCoresAreBoundByHbmAndReachTheKneeNoLater) {
  const Hardware hw = default_hw();
  const KneeCurve idle = measure_knee_curve(hw, DType::kFp32, 1);
  const KneeCurve all = measure_knee_curve(hw, DType::kFp32, static_cast<int>(hw.cores.aiv));
  EXPECT_EQ(all.scenario, "all cores streaming");
  for (const auto& p : all.points)
    EXPECT_LE(p.gbps, hw.gm.hbm_bandwidth_gbps * (1 + 1e-6)) << p.contiguous_bytes << " B";
  // 48 cores at the idle-core plateau ask for more than HBM gives: the plateau is HBM's.
  ASSERT_GT(idle.plateau_gbps * static_cast<double>(hw.cores.aiv), hw.gm.hbm_bandwidth_gbps);
  // (The launch starts the cores kernel.core_start_ns apart, ~1.7 us over 48 cores: within 3%.)
  EXPECT_NEAR(all.plateau_gbps, hw.gm.hbm_bandwidth_gbps, 0.03 * hw.gm.hbm_bandwidth_gbps);
  ASSERT_TRUE(idle.knee90_bytes && all.knee90_bytes);
  EXPECT_LE(*all.knee90_bytes, *idle.knee90_bytes);
  ASSERT_TRUE(idle.knee95_bytes && all.knee95_bytes);
  EXPECT_LE(*all.knee95_bytes, *idle.knee95_bytes);
  // Below saturation each core streams as it would alone.
  const KneePoint& shortest = all.points.front();
  EXPECT_LT(shortest.gbps, hw.gm.hbm_bandwidth_gbps * 0.99);
  EXPECT_NEAR(shortest.gbps, idle.points.front().gbps * static_cast<double>(hw.cores.aiv),
              0.03 * shortest.gbps);
}

// 4. The DMA cost is in bytes: every dtype has the same byte knee, so the element knees scale
// with the element size.
TEST(ContiguityKnee, KneesAgreeInBytesAcrossDtypes) {
  const Hardware hw = default_hw();
  const std::vector<KneeCurve> curves =
      measure_contiguity_knees(hw, {DType::kFp32, DType::kFp16, DType::kBf16});
  ASSERT_EQ(curves.size(), 6u);
  const DType order[] = {DType::kFp32, DType::kFp16, DType::kBf16};
  for (size_t i = 0; i < curves.size(); ++i) {
    EXPECT_EQ(curves[i].dtype, order[i / 2]);
    EXPECT_EQ(curves[i].cores, i % 2 == 0 ? 1 : hw.cores.aiv);
  }
  for (size_t s = 0; s < 2; ++s) {
    const KneeCurve& f32 = curves[s];
    const KneeCurve& f16 = curves[2 + s];
    const KneeCurve& b16 = curves[4 + s];
    ASSERT_TRUE(f32.knee90_bytes && f16.knee90_bytes && f32.knee95_bytes && f16.knee95_bytes);
    EXPECT_EQ(f16.knee90_bytes, f32.knee90_bytes) << f32.scenario;
    EXPECT_EQ(f16.knee95_bytes, f32.knee95_bytes) << f32.scenario;
    EXPECT_EQ(b16.knee90_bytes, f16.knee90_bytes) << f32.scenario;
    EXPECT_EQ(b16.knee95_bytes, f16.knee95_bytes) << f32.scenario;
    EXPECT_EQ(*f16.knee90_bytes / dtype_bytes(DType::kFp16),
              2 * (*f32.knee90_bytes / dtype_bytes(DType::kFp32)));
    EXPECT_EQ(*f16.knee95_bytes / dtype_bytes(DType::kFp16),
              2 * (*f32.knee95_bytes / dtype_bytes(DType::kFp32)));
  }
}

// 5. The knee comes from the per-burst cost: halving it moves the knee down or leaves it.
TEST(ContiguityKnee, CheaperBurstsNeverRaiseTheIdleCoreKnee) {
  const Hardware hw = default_hw();
  Hardware cheap = hw;
  cheap.dma.read.burst_cycles /= 2;
  const KneeCurve base = measure_knee_curve(hw, DType::kFp32, 1);
  const KneeCurve fast = measure_knee_curve(cheap, DType::kFp32, 1);
  ASSERT_TRUE(base.knee90_bytes && base.knee95_bytes);
  ASSERT_TRUE(fast.knee90_bytes && fast.knee95_bytes);
  EXPECT_LE(*fast.knee90_bytes, *base.knee90_bytes);
  EXPECT_LE(*fast.knee95_bytes, *base.knee95_bytes);
  // ... and on the way there every run length is at least as efficient.
  for (size_t i = 0; i < base.points.size(); ++i)
    EXPECT_GE(fast.points[i].efficiency, base.points[i].efficiency - 1e-9);
}

// Bursts that straddle GM granules only add cost; runs that are granule multiples straddle none.
TEST(ContiguityKnee, PackedBurstsAreNeverFasterThanGranuleAlignedOnes) {
  const Hardware hw = default_hw();
  const KneeCurve aligned = measure_knee_curve(hw, DType::kFp16, 1);
  const KneeCurve packed = measure_knee_curve(hw, DType::kFp16, 1, 0, KneeBursts::kPacked);
  ASSERT_EQ(aligned.points.size(), packed.points.size());
  bool some_slower = false;
  for (size_t i = 0; i < aligned.points.size(); ++i) {
    const int64_t c = aligned.points[i].contiguous_bytes;
    EXPECT_LE(packed.points[i].gbps, aligned.points[i].gbps * (1 + 1e-9)) << c << " B";
    if (c % hw.dma.gm_granule_bytes == 0) {
      EXPECT_NEAR(packed.points[i].gbps, aligned.points[i].gbps, 1e-9 * aligned.points[i].gbps)
          << c << " B";
    }
    some_slower |= packed.points[i].gbps < aligned.points[i].gbps * (1 - 1e-3);
  }
  EXPECT_TRUE(some_slower);
  ASSERT_TRUE(aligned.knee90_bytes && packed.knee90_bytes);
  EXPECT_GE(*packed.knee90_bytes, *aligned.knee90_bytes);
}

TEST(ContiguityKnee, ResultDoesNotDependOnThreadCount) {
  const Hardware hw = default_hw();
  const int all = static_cast<int>(hw.cores.aiv);
  const KneeCurve one = measure_knee_curve(hw, DType::kBf16, all, 1);
  const KneeCurve many = measure_knee_curve(hw, DType::kBf16, all, 2);
  ASSERT_EQ(one.points.size(), many.points.size());
  for (size_t i = 0; i < one.points.size(); ++i) {
    EXPECT_EQ(one.points[i].contiguous_bytes, many.points[i].contiguous_bytes);
    EXPECT_EQ(one.points[i].gbps, many.points[i].gbps);
  }
  EXPECT_EQ(one.knee90_bytes, many.knee90_bytes);
  EXPECT_EQ(one.knee95_bytes, many.knee95_bytes);
}

TEST(ContiguityKnee, RejectsCoreCountsTheMachineDoesNotHave) {
  const Hardware hw = default_hw();
  EXPECT_THROW(measure_knee_curve(hw, DType::kFp32, 0), Error);
  EXPECT_THROW(measure_knee_curve(hw, DType::kFp32, static_cast<int>(hw.cores.aiv) + 1), Error);
}

}  // namespace
}  // namespace tilesim
