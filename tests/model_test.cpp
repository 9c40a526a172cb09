// model/: cost functions, capacity checks, the in-task pipeline (hardware files: hardware_test).
#include <gtest/gtest.h>
#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string_view>

#include <nlohmann/json.hpp>

#include "kernels/spec/kernel_spec.hpp"
#include "kernels/tiling/merge_modes.hpp"
#include "model/dma_cost.hpp"
#include "model/enum_names.hpp"
#include "model/error.hpp"
#include "model/json_reader.hpp"
#include "model/recycling_allocator.hpp"
#include "model/task_cost.hpp"
#include "model/task_graph.hpp"
#include "model/task_overlap.hpp"
#include "model/tile_geometry.hpp"
#include "model/ub_budget.hpp"
#include "model/vector_cost.hpp"
#include "sim/simulator.hpp"
#include "test_support.hpp"
#include "tools/analyses/rules.hpp"
#include "tools/formats/run_config.hpp"

namespace tilesim {
namespace {

using test::default_hw;

TEST(DmaCost, InstructionFormula) {
  const Hardware hw = default_hw();
  const DmaOp op{DmaDir::kRead, 64, 2048, 0};
  EXPECT_DOUBLE_EQ(dma_occupancy_cycles(op, hw),
                   hw.dma.read.issue_cycles + 64 * hw.dma.read.burst_cycles +
                       64.0 * 2048 / hw.dma.read.peak_bytes_per_cycle);
}

TEST(DmaCost, EfficiencyRisesWithContiguousBytesAndSaturates) {
  const Hardware hw = default_hw();
  double prev = 0;
  for (int64_t bytes = 32; bytes <= 65536; bytes *= 2) {
    const double eff = dma_efficiency(DmaOp{DmaDir::kRead, 64, bytes, 0}, hw);
    EXPECT_GT(eff, prev);
    EXPECT_LT(eff, 1.0);
    prev = eff;
  }
  EXPECT_GT(prev, 0.95);
  EXPECT_LT(dma_efficiency(DmaOp{DmaDir::kRead, 64, 128, 0}, hw), 0.6);
}

TEST(TileGeometry, FullRowsMergeIntoOneBurst) {
  const DmaOp full = block_dma(DmaDir::kRead, {8192, 8192}, {0, 0}, {2, 8192}, DType::kFp16, 512);
  EXPECT_EQ(full.bursts, 1);
  EXPECT_EQ(full.burst_bytes, 32768);
  const DmaOp part =
      block_dma(DmaDir::kRead, {64, 256, 256}, {0, 0, 0}, {1, 16, 256}, DType::kFp32, 512);
  EXPECT_EQ(part.bursts, 1);  // (1,16,256) covers full rows of 256: one 16 KiB run
  const DmaOp strided =
      block_dma(DmaDir::kRead, {16, 256, 256}, {0, 0, 0}, {1, 256, 64}, DType::kFp32, 512);
  EXPECT_EQ(strided.bursts, 256);
  EXPECT_EQ(strided.burst_bytes, 256);
  EXPECT_EQ(strided.extra_granules, 0);
}

TEST(TileGeometry, MisalignedRowsStraddleGranules) {
  // 12287 fp16 per row: rows start 2 B earlier each time, so most 2048 B bursts touch 5 granules.
  const DmaOp op = block_dma(DmaDir::kRead, {12288, 12287}, {0, 0}, {64, 1024}, DType::kFp16, 512);
  EXPECT_EQ(op.bursts, 64);
  EXPECT_EQ(op.extra_granules, 63);  // only row 0 starts on a granule
  const DmaOp aligned =
      block_dma(DmaDir::kRead, {12288, 12288}, {0, 0}, {64, 1024}, DType::kFp16, 512);
  EXPECT_EQ(aligned.extra_granules, 0);
}

// The straddled granules counted burst by burst, as block_dma once did: the reference its
// one-period count must equal.
int64_t extra_granules_row_by_row(const Dims& shape, const Dims& origin, const Dims& extent,
                                  DType dtype, int64_t granule) {
  const size_t r = shape.size();
  const int64_t bytes = dtype_bytes(dtype);
  size_t d = r - 1;
  int64_t run = extent[d];
  while (d > 0 && extent[d] == shape[d]) {
    --d;
    run *= extent[d];
  }
  const int64_t burst = run * bytes, bursts = product(extent) / run;
  Dims stride(r, 1);
  for (size_t i = r - 1; i-- > 0;) stride[i] = stride[i + 1] * shape[i + 1];
  int64_t base = 0;
  for (size_t i = 0; i < r; ++i) base += origin[i] * stride[i];
  int64_t extra = 0;
  Dims idx(d, 0);
  for (int64_t b = 0; b < bursts; ++b) {
    int64_t addr = base;
    for (size_t i = 0; i < d; ++i) addr += idx[i] * stride[i];
    const int64_t start = (addr * bytes) % granule;
    extra += ceil_div(start + burst, granule) - ceil_div(burst, granule);
    for (size_t i = d; i-- > 0;) {
      if (++idx[i] < extent[i]) break;
      idx[i] = 0;
    }
  }
  return extra;
}

TEST(TileGeometry, OnePeriodOfBurstStartsCountsWhatEveryBurstDoes) {
  std::mt19937_64 rng(51);
  const auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  const std::array<DType, 3> dtypes = {DType::kFp16, DType::kFp32, DType::kInt8};
  const std::array<int64_t, 6> granules = {1, 32, 96, 128, 500, 512};
  for (int trial = 0; trial < 3000; ++trial) {
    const auto rank = static_cast<size_t>(pick(1, 4));
    Dims shape(rank), origin(rank), extent(rank);
    for (size_t i = 0; i < rank; ++i) {
      shape[i] = pick(1, i + 1 == rank ? 3000 : 70);
      extent[i] = pick(1, shape[i]);
      if (pick(0, 3) == 0) extent[i] = shape[i];  // full dims merge into the run
      origin[i] = pick(0, shape[i] - extent[i]);
    }
    const DType dt = dtypes[static_cast<size_t>(pick(0, 2))];
    const int64_t granule = granules[static_cast<size_t>(pick(0, 5))];
    const DmaOp op = block_dma(DmaDir::kRead, shape, origin, extent, dt, granule);
    ASSERT_EQ(op.extra_granules, extra_granules_row_by_row(shape, origin, extent, dt, granule))
        << "trial " << trial << " rank " << rank << " granule " << granule;
  }
  // Many rows: periods repeat whole and in part (12287 fp16 = 24574 B: period 256 at 512 B).
  for (const int64_t rows : {1, 255, 256, 257, 1000, 4096})
    EXPECT_EQ(block_dma(DmaDir::kRead, {12288, 12287}, {3, 5}, {rows, 1024}, DType::kFp16, 512)
                  .extra_granules,
              extra_granules_row_by_row({12288, 12287}, {3, 5}, {rows, 1024}, DType::kFp16, 512));
}

TEST(TileGeometry, RaggedTailsAreExact) {
  const TileGrid g({10, 100}, {4, 64});
  EXPECT_EQ(g.count(), 6);
  EXPECT_EQ(g.extent(5), (Dims{2, 36}));
  EXPECT_EQ(auto_tiles({16, 64, 256, 256}, {1, 16, 1, 256}), 16 * 4 * 256);
  EXPECT_EQ(contiguous_bytes({1, 256, 64}, DType::kFp32), 256);
}

// pto-isa's 910B3 calibration (include/pto/costmodel/a2a3/cce_costmodel/
// cce_costmodel_vector_compute.hpp): fp32 vexp 2.00 x repeat + 31 cycles, vln 2.00 x repeat + 33,
// vdiv 4.03 x repeat + 31, vrsqrt 1.07 x repeat + 24. A hand count: an instruction's issue and
// latency, then each repeat at its class's rate; exp, ln and rsqrt read one source, so the bank
// conflict flag does not move them.
TEST(VectorCost, PtoIsaCalibratedClasses) {
  const Hardware hw = default_hw();
  EXPECT_DOUBLE_EQ(hw.vector.exp_ln.cycles_per_repeat, 2.00);
  EXPECT_DOUBLE_EQ(hw.vector.div.cycles_per_repeat, 4.03);
  EXPECT_DOUBLE_EQ(hw.vector.rsqrt.cycles_per_repeat, 1.07);
  const double fixed = hw.vector.issue_cycles + hw.vector.exp_ln.latency_cycles;
  // An exp over 128 repeats of 64 fp32 (pto-isa's longest timed run: 287 cycles on the board).
  for (bool conflict : {true, false}) {
    VecOp exp{VecClass::kExpLn, DType::kFp32, 1, 1, 64 * 128};
    exp.bank_conflict = conflict;
    const VecCost c = vector_cost(exp, hw);
    EXPECT_EQ(c.instructions, 1);
    EXPECT_EQ(c.repeats, 128);
    EXPECT_DOUBLE_EQ(c.cycles, 128 * 2.00 + fixed);
  }
  // 2.00 x 128 + 22.9: within 3% of the board's 287 (the fixed part is the model's issue and
  // latency, not pto-isa's 31).
  EXPECT_NEAR(128 * 2.00 + fixed, 287, 0.03 * 287);
  // Past vector.max_repeats (255) an exp is two instructions, each paying the fixed part.
  const VecCost two = vector_cost(VecOp{VecClass::kExpLn, DType::kFp16, 1, 1, 128 * 300}, hw);
  EXPECT_EQ(two.instructions, 2);
  EXPECT_DOUBLE_EQ(two.cycles, 300 * 2.00 + 2 * fixed);
  // A div over 128 repeats, its sources in one bank group (the default).
  EXPECT_DOUBLE_EQ(vector_cost(VecOp{VecClass::kDiv, DType::kFp32, 1, 1, 64 * 128}, hw).cycles,
                   128 * 4.03 + hw.vector.issue_cycles + hw.vector.div.latency_cycles);
  // An rsqrt over 128 repeats.
  VecOp rsqrt{VecClass::kRsqrt, DType::kFp32, 1, 1, 64 * 128};
  rsqrt.bank_conflict = false;
  EXPECT_DOUBLE_EQ(vector_cost(rsqrt, hw).cycles,
                   128 * 1.07 + hw.vector.issue_cycles + hw.vector.rsqrt.latency_cycles);
}

// A scatter write: a repeat's 8 blocks of 32 B land s blocks apart, block i in UB bank group
// (i x s) mod 16; a beat writes one block per group, so the repeat takes the most blocks of one
// group in beats, each past the first at vector.bank_conflict_cycles_per_repeat (asc-devkit
// bank_conflict_nd2nz: the compact NZ layout of a 144-row tile puts all 8 in group 0; 145 spreads
// them over 8 groups).
TEST(VectorCost, ScatterWritesQueueInTheirBankGroups) {
  const Hardware hw = default_hw();
  ASSERT_EQ(hw.vector.bank_groups, 16);
  EXPECT_EQ(ub_write_beats(0, hw), 1);
  EXPECT_EQ(ub_write_beats(1, hw), 1);
  EXPECT_EQ(ub_write_beats(2, hw), 1);    // groups 0, 2, ..., 14
  EXPECT_EQ(ub_write_beats(4, hw), 2);    // 0, 4, 8, 12 twice
  EXPECT_EQ(ub_write_beats(8, hw), 4);    // 0, 8 four times each
  EXPECT_EQ(ub_write_beats(144, hw), 8);  // 144 = 9 x 16: all in group 0
  EXPECT_EQ(ub_write_beats(145, hw), 1);  // 0, 1, ..., 7
  EXPECT_EQ(ub_write_beats(128 + 8, hw), 4);
  // A Copy of 144 x 128 fp16 (144 repeats of 8 C0 blocks): one source, so the conflict-free rate,
  // plus 7 beats a repeat when compact.
  VecOp copy{VecClass::kSimple, DType::kFp16, 1, 1, 144 * 128};
  copy.bank_conflict = false;
  const double spread = vector_cost(copy, hw).cycles;
  copy.dst_block_stride = 145;
  EXPECT_DOUBLE_EQ(vector_cost(copy, hw).cycles, spread);
  copy.dst_block_stride = 144;
  EXPECT_DOUBLE_EQ(vector_cost(copy, hw).cycles,
                   spread + 144 * 7 * hw.vector.bank_conflict_cycles_per_repeat);
}

TEST(VectorCost, ElementwiseAndReductions) {
  const Hardware hw = default_hw();
  // 4096 fp16 = 32 repeats in one instruction.
  const VecCost add = vector_cost(VecOp{VecClass::kSimple, DType::kFp16, 1, 1, 4096}, hw);
  EXPECT_EQ(add.instructions, 1);
  EXPECT_DOUBLE_EQ(add.cycles, hw.vector.issue_cycles + hw.vector.simple.latency_cycles +
                                   32 * hw.vector.simple.cycles_per_repeat);
  // Sources in different bank groups (VecOp::bank_conflict false): each repeat reads both at
  // once, vector.bank_conflict_cycles_per_repeat less (2.18 -> 1.18, the add study's case 6).
  VecOp free_add{VecClass::kSimple, DType::kFp16, 1, 1, 4096};
  free_add.bank_conflict = false;
  EXPECT_DOUBLE_EQ(vector_cost(free_add, hw).cycles,
                   add.cycles - 32 * hw.vector.bank_conflict_cycles_per_repeat);
  EXPECT_DOUBLE_EQ(hw.vector.simple.cycles_per_repeat - hw.vector.bank_conflict_cycles_per_repeat,
                   1.18);
  // The complex class's rate (sqrt, reciprocal) is a multiple of the conflicted add's: without the
  // conflict it is the same multiple of the conflict-free add's (4.36 -> 2.36 cycles a repeat).
  VecOp free_sqrt{VecClass::kComplex, DType::kFp16, 1, 1, 4096};
  const double sqrt_cycles = vector_cost(free_sqrt, hw).cycles;
  free_sqrt.bank_conflict = false;
  const double ratio = 1.18 / hw.vector.simple.cycles_per_repeat;
  EXPECT_NEAR(vector_cost(free_sqrt, hw).cycles,
              sqrt_cycles - 32 * hw.vector.complex.cycles_per_repeat * (1 - ratio), 1e-9);
  EXPECT_NEAR(hw.vector.complex.cycles_per_repeat * ratio, 2.36, 1e-12);
  // div, timed by pto-isa beside its conflicted add, scales the same way (4.03 -> 2.18).
  VecOp div{VecClass::kDiv, DType::kFp32, 1, 1, 64 * 32};
  const double div_cycles = vector_cost(div, hw).cycles;
  div.bank_conflict = false;
  EXPECT_NEAR(vector_cost(div, hw).cycles,
              div_cycles - 32 * hw.vector.div.cycles_per_repeat * (1 - ratio), 1e-9);
  // 255-repeat limit splits long ops.
  EXPECT_EQ(vector_cost(VecOp{VecClass::kSimple, DType::kFp32, 1, 1, 64 * 256}, hw).instructions,
            2);
  // Last-axis reduce of 16 rows x 256 fp32: 4 repeats per row -> halving 2+1 per row, then 16
  // reduce repeats.
  const VecCost last = vector_cost(VecOp{VecClass::kReduceLast, DType::kFp32, 1, 16, 256}, hw);
  EXPECT_EQ(last.repeats, 16 * 3 + 16);
  EXPECT_EQ(last.instructions, 3);
  // Non-last reduce of 16 rows x 256 fp32: 15 pairwise combines of 4 repeats in 4 tree levels.
  const VecCost rows = vector_cost(VecOp{VecClass::kReduceRows, DType::kFp32, 1, 16, 256}, hw);
  EXPECT_EQ(rows.repeats, 15 * 4);
  EXPECT_EQ(rows.instructions, 4);
  EXPECT_LT(rows.cycles, last.cycles);  // reducing across rows is cheaper than in-row
  // The same rows by block reduces (pto-isa TROWSUM on a [32, 256] fp32 tile): one pass over the
  // 128 repeats leaves 32 values a row (one per 32 B block), a pass over the packed 32 x 32 (16
  // repeats) leaves 4, one over 32 x 4 (2 repeats) leaves 1: 3 instructions, 146 repeats.
  VecOp by_blocks{VecClass::kReduceLast, DType::kFp32, 1, 32, 256};
  by_blocks.block_reduce = true;
  const VecCost blocks = vector_cost(by_blocks, hw);
  EXPECT_EQ(blocks.instructions, 3);
  EXPECT_EQ(blocks.repeats, 128 + 16 + 2);
  EXPECT_DOUBLE_EQ(blocks.cycles, 3 * (hw.vector.issue_cycles + hw.vector.reduce.latency_cycles) +
                                      146 * hw.vector.block_reduce_cycles_per_repeat);
  EXPECT_LT(blocks.cycles,
            vector_cost(VecOp{VecClass::kReduceLast, DType::kFp32, 1, 32, 256}, hw).cycles);
  // A scan (cumsum) of 7 dependent steps over 3 x 256 fp32: 21 instructions of 4 repeats each,
  // each paying its issue and latency (no step starts before the previous one ends).
  const VecCost scan = vector_cost(VecOp{VecClass::kScan, DType::kFp32, 3, 7, 256}, hw);
  const VecCost one = vector_cost(VecOp{VecClass::kSimple, DType::kFp32, 1, 1, 256}, hw);
  EXPECT_EQ(scan.instructions, 21);
  EXPECT_EQ(scan.repeats, 21 * 4);
  EXPECT_DOUBLE_EQ(scan.cycles, 21 * one.cycles);
  // An integer compare and select on the scalar unit (a Triton tl.where on offsets): no vector
  // instruction, scalar.index_compare_cycles_per_element for each of 2 x 4 x 512 elements.
  const VecCost scalar = vector_cost(VecOp{VecClass::kScalarElement, DType::kFp32, 2, 4, 512}, hw);
  EXPECT_EQ(scalar.instructions, 0);
  EXPECT_EQ(scalar.repeats, 0);
  EXPECT_DOUBLE_EQ(scalar.cycles, 4096 * hw.scalar.index_compare_cycles_per_element);
  EXPECT_GT(hw.scalar.index_compare_cycles_per_element, 0);
}

TaskKind streaming_kind(int64_t repeat, int depth, int64_t tile_bytes) {
  TaskKind k;
  k.label = "t";
  k.buffer_count = depth;
  TileStep st;
  st.loads.push_back(DmaOp{DmaDir::kRead, 1, tile_bytes, 0});
  st.vec.push_back(VecOp{VecClass::kSimple, DType::kFp32, 1, 1, tile_bytes / 4});
  st.stores.push_back(DmaOp{DmaDir::kWrite, 1, tile_bytes, 0});
  st.repeat = repeat;
  k.steps.push_back(st);
  k.buffers = {{"in", tile_bytes, BufferRole::kInput, MemSpace::kUb},
               {"out", tile_bytes, BufferRole::kOutput, MemSpace::kUb}};
  return k;
}

TEST(TaskCost, SingleBufferSerialisesLoadAndCompute) {
  const Hardware hw = default_hw();
  const int64_t bytes = 8192;
  const double load =
      dma_occupancy_cycles(DmaOp{DmaDir::kRead, 1, bytes, 0}, hw) + hw.dma.read.latency_cycles;
  const double vec =
      vector_cost(VecOp{VecClass::kSimple, DType::kFp32, 1, 1, bytes / 4}, hw).cycles;
  const double store =
      dma_occupancy_cycles(DmaOp{DmaDir::kWrite, 1, bytes, 0}, hw) + hw.dma.write.latency_cycles;
  const int64_t n = 100;
  const TaskCost c = cost_task_kind(streaming_kind(n, 1, bytes), hw);
  ASSERT_EQ(c.depth, 1);
  // Depth 1: iteration i+1 loads after compute i; the store hides under the next load.
  ASSERT_LT(store, load);
  EXPECT_NEAR(c.cycles, n * (load + vec) + store, 1e-6);
  EXPECT_NEAR(c.mte2_busy, n * load, 1e-6);
}

TEST(TaskCost, DoubleBufferingOverlapsToTheSlowestPipe) {
  const Hardware hw = default_hw();
  const int64_t bytes = 8192;
  const double load_occ = dma_occupancy_cycles(DmaOp{DmaDir::kRead, 1, bytes, 0}, hw);
  const int64_t n = 1000;
  const TaskCost c = cost_task_kind(streaming_kind(n, 2, bytes), hw);
  ASSERT_EQ(c.depth, 2);
  // Steady state: one load occupancy per iteration (the bottleneck), plus fill and drain.
  EXPECT_NEAR(c.cycles / n, load_occ, 0.05 * load_occ);
  EXPECT_LT(c.cycles, cost_task_kind(streaming_kind(n, 1, bytes), hw).cycles * 0.8);
}

// N tasks of `run` on one core whose pipes carry from task to task (model/task_overlap.hpp),
// each started at its earliest: the end of the last.
double loop_on_pipes(const StagedRun& run, int64_t n, OverlapRoom room = {}) {
  PipeClock clock;
  double end = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double start = earliest_start(clock, run, room);
    const PipedRun r = run_on_pipes(clock, start, run, room);
    clock = r.after;
    end = std::max(end, start + r.cycles);
  }
  return end;
}

// A core's consecutive tasks overlap (model/task_overlap.hpp): N one-iteration tasks, each
// started when the load pipe is free and each later stage waiting for its own pipe, run in
// fill + N x the slowest stage + drain: the loads' occupancy L here, so the loop ends
// one task's run (N - 1) L after the first starts; that is the run of the same N iterations
// inside one task at depth 4, where the buffers do not bind.
TEST(TaskOverlap, LoopOfTasksRunsInFillPlusNSlowestStagesPlusDrain) {
  const Hardware hw = default_hw();
  const int64_t bytes = 8192;
  const double load_occ = dma_occupancy_cycles(DmaOp{DmaDir::kRead, 1, bytes, 0}, hw);
  const TaskCost one = cost_task_kind(streaming_kind(1, 4, bytes), hw);
  EXPECT_NEAR(one.stages.load_done, load_occ, 1e-9);
  EXPECT_NEAR(one.stages.compute_start, load_occ + hw.dma.read.latency_cycles, 1e-9);
  const StagedRun r1{one.cycles, one.stages};
  const PipedRun first = run_on_pipes({}, 0, r1);
  EXPECT_NEAR(earliest_start(first.after, r1), load_occ, 1e-9);  // loads are the slowest stage
  const int64_t n = 64;
  const double loop = one.cycles + static_cast<double>(n - 1) * load_occ;
  EXPECT_NEAR(loop_on_pipes(r1, n), loop, 1e-6);
  EXPECT_NEAR(loop, cost_task_kind(streaming_kind(n, 4, bytes), hw).cycles, 1e-6);
  // Compute-bound: a task whose vector work C outlasts its load still loads once the load pipe
  // is free, its compute waiting for the one before: the loop takes a compute stage per task.
  TaskKind heavy = streaming_kind(1, 4, bytes);
  for (int i = 0; i < 8; ++i) heavy.steps[0].vec.push_back(heavy.steps[0].vec[0]);
  const TaskCost h = cost_task_kind(heavy, hw);
  ASSERT_GT(h.vec_busy, load_occ);
  const StagedRun rh{h.cycles, h.stages};
  const PipedRun h0 = run_on_pipes({}, 0, rh);
  EXPECT_NEAR(earliest_start(h0.after, rh), load_occ, 1e-9);
  const PipedRun h1 = run_on_pipes(h0.after, load_occ, rh);
  EXPECT_NEAR(h1.wait, h.vec_busy - load_occ, 1e-9);  // its compute waits for the one before
  EXPECT_NEAR(load_occ + h1.cycles, h.cycles + h.vec_busy, 1e-9);
  EXPECT_NEAR(loop_on_pipes(rh, n), h.cycles + static_cast<double>(n - 1) * h.vec_busy, 1e-6);
  // Capacity: beside a task's 2 x 16 KiB (one copy each) the 192 KiB UB holds another 16 KiB
  // input and output; beside 2 x 80 KiB neither. Without room for its inputs the next task's
  // loads wait for the previous compute to end: a loop of L + C per task, then the stores.
  const OverlapRoom room =
      overlap_room(streaming_kind(1, 2, bytes), streaming_kind(1, 2, bytes), hw);
  EXPECT_TRUE(room.inputs && room.outputs);
  const TaskKind big = streaming_kind(1, 2, 80 * 1024);
  const OverlapRoom none = overlap_room(big, big, hw);
  EXPECT_FALSE(none.inputs || none.outputs);
  EXPECT_NEAR(earliest_start(first.after, r1, {false, true}), one.stages.compute_done, 1e-9);
  EXPECT_NEAR(loop_on_pipes(r1, n, {false, true}),
              static_cast<double>(n - 1) * one.stages.compute_done + one.cycles, 1e-6);
}

// One iteration of stages L, C, S on an idle machine, each pipe taking its work in turn.
StagedRun three_stages(double l, double c, double s) {
  return {l + c + s, PipeStages{l, l, l + c, l + c, l + c + s, 0, l, l + c + s}};
}

// Each pipe carries its own free time: after a task of long compute, the next one's copy-in
// runs at once, its compute and stores wait for their pipes and its run stretches by that wait;
// the load pipe is then free for the task after, whose copy-in also runs under that compute.
// A (L 100, C 500, S 100) then two B (100 each): B1 loads at 100, computes 600-700 (a wait of
// 400) and stores 700-800; B2 loads at 200, computes 700-800, stores 800-900. Shifted as a whole
// (its loads held back until its compute could follow them) B2 would load at 600, not 200. A
// task without loads starts when its compute pipe is free; without room for its outputs its
// compute waits for the stores before.
TEST(TaskOverlap, EachPipeCarriesItsFreeTime) {
  const StagedRun a = three_stages(100, 500, 100), b = three_stages(100, 100, 100);
  const PipedRun ra = run_on_pipes({}, 0, a);
  EXPECT_DOUBLE_EQ(ra.cycles, 700);
  EXPECT_DOUBLE_EQ(earliest_start(ra.after, b), 100);
  const PipedRun rb1 = run_on_pipes(ra.after, 100, b);
  EXPECT_DOUBLE_EQ(rb1.wait, 400);
  EXPECT_DOUBLE_EQ(100 + rb1.cycles, 800);
  EXPECT_DOUBLE_EQ(rb1.after.load, 200);
  EXPECT_DOUBLE_EQ(rb1.after.compute, 700);
  EXPECT_DOUBLE_EQ(rb1.after.store, 800);
  EXPECT_DOUBLE_EQ(earliest_start(rb1.after, b), 200);
  const PipedRun rb2 = run_on_pipes(rb1.after, 200, b);
  EXPECT_DOUBLE_EQ(200 + rb2.cycles, 900);
  // No loads: the task starts with its compute.
  const StagedRun compute_only{100, PipeStages{0, 0, 100, 100, 100, 0, 0, 100}};
  EXPECT_DOUBLE_EQ(earliest_start(ra.after, compute_only), 600);
  // No room for B's outputs beside A's buffers: B's compute waits for A's stores (700).
  const PipedRun full = run_on_pipes(ra.after, 100, b, {true, false});
  EXPECT_DOUBLE_EQ(full.after.compute, 800);
  EXPECT_DOUBLE_EQ(100 + full.cycles, 900);
}

// Reads that hit L2 shorten a task's loads, not its compute: its pipe offsets interpolate between
// the all-miss and all-hit runs by its hit share (staged_run_at_read_hit), not by the whole run's
// ratio. One iteration of loads L, compute C = 300, stores S = 200, L = 400 missing and 100
// hitting: runs of 900 and 600. At half its reads hitting, L = 250, the run 750, and a loop of
// such tasks takes a compute stage (300) per task: max(250, 300, 200). The whole run's ratio
// would have scaled the all-miss offsets (the loads' 400) to 400 x 750 / 900 = 333.3 a task.
TEST(TaskOverlap, HitsShortenTheLoadsNotTheCompute) {
  TaskCost c;
  c.cycles = 900;
  c.hit_cycles = 600;
  c.stages = {400, 400, 700, 700, 900, 0, 400, 900};
  c.hit_stages = PipeStages{100, 100, 400, 400, 600, 0, 100, 600};
  const StagedRun half = staged_run_at_read_hit(c, 0.5);
  EXPECT_DOUBLE_EQ(half.cycles, 750);
  EXPECT_DOUBLE_EQ(half.stages.load_done, 250);
  EXPECT_DOUBLE_EQ(half.stages.compute_done, 550);
  EXPECT_DOUBLE_EQ(half.stages.store_done, 750);
  EXPECT_DOUBLE_EQ(loop_on_pipes(half, 10), 750 + 9 * 300);
  EXPECT_DOUBLE_EQ(loop_on_pipes(staged_run_at_read_hit(c, 1), 10), 600 + 9 * 300);
  // All missing: the all-miss offsets, the loads binding.
  EXPECT_DOUBLE_EQ(loop_on_pipes(staged_run_at_read_hit(c, 0), 10), 900 + 9 * 400);
  // Hit offsets not known: the all-miss offsets scaled to the run (750 / 900).
  c.hit_stages.reset();
  const StagedRun scaled = staged_run_at_read_hit(c, 0.5);
  EXPECT_DOUBLE_EQ(scaled.cycles, 750);
  EXPECT_DOUBLE_EQ(scaled.stages.load_done, 400 * 750.0 / 900);
  EXPECT_NEAR(loop_on_pipes(scaled, 10), 750 + 9 * 400 * 750.0 / 900, 1e-9);
}

// Depth 1: load i+1 and store i both wait for compute i, so they leave together: no load is in
// flight when a store begins (sim/dma_attribution.hpp: in turn).
TEST(TaskCost, SingleBufferLoadsMeetStoresInTurn) {
  const Hardware hw = default_hw();
  const TaskCost c = cost_task_kind(streaming_kind(100, 1, 8192), hw);
  ASSERT_EQ(c.depth, 1);
  ASSERT_GT(c.mte3_busy, 0);
  EXPECT_EQ(c.mixed_share, 0);
}

// Depth 2 with loads back to back (period Lo): store i begins V after load i's data lands, and
// load i+1, issued when load i's occupancy ended, is in flight until its own data lands: store
// i meets it for min(S, Lo - V) of its S = So + Sl cycles. The last store meets no load.
TEST(TaskCost, DoubleBufferMixesLoadsWithStores) {
  const Hardware base = default_hw();
  const int64_t bytes = 8192, n = 1000;
  const double lo = dma_occupancy_cycles(DmaOp{DmaDir::kRead, 1, bytes, 0}, base);
  const double ll = base.dma.read.latency_cycles;
  const double v =
      vector_cost(VecOp{VecClass::kSimple, DType::kFp32, 1, 1, bytes / 4}, base).cycles;
  const double so = dma_occupancy_cycles(DmaOp{DmaDir::kWrite, 1, bytes, 0}, base);
  // The regime of the closed form: loads bound the period and stores never queue.
  ASSERT_GT(lo, ll + v);
  ASSERT_LT(so, lo - v);
  // Store latencies for a store met in full, and in part (the longest store of the regime:
  // compute i+2 needs store i's buffer back).
  for (const double sl : {(lo - v - so) / 2, 2 * lo - v - so}) {
    Hardware hw = base;
    hw.dma.write.latency_cycles = sl;
    const TaskCost c = cost_task_kind(streaming_kind(n, 2, bytes), hw);
    ASSERT_EQ(c.depth, 2);
    const double s = so + sl;
    EXPECT_NEAR(c.mte3_busy, (n - 1) * std::min(s, lo) + s, 1e-9 * c.mte3_busy) << sl;
    EXPECT_NEAR(c.mixed_share, (n - 1) * std::min(s, lo - v) / c.mte3_busy, 1e-9) << sl;
  }
}

// A Triton-compiled kind pays kernel.triton_op_cycles per body operation per iteration on top of
// the same pipeline: the streaming kind has 3 (load, add, store), so 100 iterations add 300 x it.
TEST(TaskCost, TritonLoopsPayPerOperationPerIteration) {
  Hardware hw = default_hw();
  hw.kernel.triton_op_cycles = 44;
  TaskKind k = streaming_kind(100, 2, 8192);
  const TaskCost ascendc = cost_task_kind(k, hw);
  k.compiler_multibuffer = true;
  const TaskCost triton = cost_task_kind(k, hw);
  EXPECT_NEAR(triton.cycles - ascendc.cycles, 300 * 44.0, 1e-6);
  EXPECT_NEAR(triton.hit_cycles - ascendc.hit_cycles, 300 * 44.0, 1e-6);
  EXPECT_DOUBLE_EQ(triton.mte2_busy, ascendc.mte2_busy);  // the pipes' work is unchanged
}

TEST(TaskCost, PeriodicJumpMatchesExplicitIterations) {
  const Hardware hw = default_hw();
  for (int depth : {1, 2, 3}) {
    TaskKind jumped = streaming_kind(5000, depth, 4096);
    TaskKind explicit_steps = jumped;
    explicit_steps.steps.assign(5000, jumped.steps.front());
    for (auto& s : explicit_steps.steps) s.repeat = 1;
    const TaskCost a = cost_task_kind(jumped, hw), b = cost_task_kind(explicit_steps, hw);
    EXPECT_NEAR(a.cycles, b.cycles, 1e-6 * b.cycles) << "depth " << depth;
    EXPECT_NEAR(a.mte2_busy, b.mte2_busy, 1e-6 * b.mte2_busy);
    EXPECT_NEAR(a.mte3_busy, b.mte3_busy, 1e-6 * b.mte3_busy);
    EXPECT_NEAR(a.mixed_share, b.mixed_share, 1e-6);
  }
}

TEST(UbBudget, FallsBackToSingleBufferThenReportsOverflow) {
  const Hardware hw = default_hw();
  TaskKind k = streaming_kind(1, 2, 64 * 1024);  // 2 x 64 KiB x 2 copies = 256 KiB > 192 KiB
  EXPECT_EQ(plan_buffers(k, hw).depth, 1);
  k = streaming_kind(1, 2, 128 * 1024);
  try {
    plan_buffers(k, hw);
    FAIL() << "expected an overflow";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("needs 262144 B, has 196608 B"), std::string::npos) << msg;
    EXPECT_NE(msg.find("in 131072 B"), std::string::npos) << msg;
  }
}

// Every loader parses through JsonReader::parse_file: a directory, nesting deeper than
// kMaxJsonDepth (a 120 KB file of brackets once crashed every command), a key given twice and a
// number beyond double range are each one error naming the file.
TEST(JsonReader, ParseFileRefusesDirectoriesDeepNestingRepeatedKeysAndHugeNumbers) {
  const auto dir = std::filesystem::temp_directory_path();
  const auto write = [&](const std::string& name, const std::string& text) {
    const auto f = dir / ("tilesim_json_" + std::to_string(getpid()) + "_" + name);
    std::ofstream(f) << text;
    return f;
  };
  const auto error = [](const std::filesystem::path& f) {
    try {
      JsonReader::parse_file(f, "run config");
    } catch (const Error& e) {
      const std::string what = e.what();
      return what.substr(what.find(": ") + 2);
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(error(dir), "not a regular file (a run config is a JSON file)");
  const auto deep =
      write("deep.json", "{\"a\": " + std::string(60000, '[') + std::string(60000, ']') + "}");
  EXPECT_EQ(error(deep), "run config nests deeper than 64 levels (allowed: at most 64)");
  const auto ok = write("ok.json", "{\"a\": " + std::string(63, '[') + std::string(63, ']') + "}");
  EXPECT_EQ(error(ok), "(accepted)");
  // A document that is no object (a trace given as a config) is refused before it is parsed.
  const auto array = write("array.json", std::string(64, '[') + std::string(64, ']'));
  EXPECT_EQ(error(array), "128 bytes is not a run config (expected a JSON object, got an array)");
  const auto dup = write("dup.json", R"({"op": "relu", "x": {"a": 1, "a": 2}})");
  EXPECT_EQ(error(dup), "run config: key \"a\" appears twice in one object (each key once)");
  const auto same = write("same.json", R"({"a": {"k": 1}, "b": {"k": 2}})");
  EXPECT_EQ(error(same), "(accepted)");  // the same key in two objects is fine
  const auto huge = write("huge.json", R"({"x": 1e999})");
  EXPECT_EQ(error(huge).substr(0, 46), "a number in the run config is out of range: [j");
  for (const auto& f : {deep, ok, dup, same, huge}) std::filesystem::remove(f);
}

TEST(JsonReader, NamesFileKeyPathAndAllowedValuesInEveryRejection) {
  const auto doc = nlohmann::json::parse(
      R"({"a": {"n": 5, "s": "x", "list": [1, 2, -3]}, "f": 0.5, "b": true})");
  const JsonReader r(doc, "cfg.json");
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(r.at("a").at("n").integer(1, 8), 5);
  EXPECT_EQ(message([&] { r.at("a").at("n").integer(6, 8); }),
            "cfg.json: a.n: out of range: 5 (allowed 6..8)");
  EXPECT_EQ(message([&] { r.at("a").at("missing"); }), "cfg.json: a.missing: missing");
  EXPECT_EQ(message([&] { r.at("a").fail_at("grid", "missing: the number of blocks"); }),
            "cfg.json: a.grid: missing: the number of blocks");
  EXPECT_EQ(message([&] { r.check_keys({"a", "f"}); }), "cfg.json: b: unknown key (allowed: a, f)");
  EXPECT_EQ(message([&] {
              r.at("a").at("s").one_of({"y", "z"});
            }),
            "cfg.json: a.s: \"x\" is not allowed (allowed: y, z)");
  EXPECT_EQ(message([&] { r.at("a").at("list").positive_ints(); }),
            "cfg.json: a.list: expected a non-empty array of positive integers, got [1,2,-3]");
  EXPECT_EQ(r.at("a").at("list").items()[2].path(), "a.list[2]");
  EXPECT_DOUBLE_EQ(r.number_or("f", 1.0, 0, 1), 0.5);
  EXPECT_EQ(r.integer_or("absent", 7), 7);
  EXPECT_TRUE(r.at("b").boolean());
  try {
    r.at("a").with_kind(ErrorKind::kParams).at("s").integer();
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kParams);
  }
}

// Each enum's name table (model/enum_names.hpp) holds every enumerator once (they count from 0),
// each under its own name, and reads back both ways.
template <class E, size_t N>
void expect_whole_table(const std::array<EnumName<E>, N>& table, const char* what) {
  std::set<int> values;
  std::set<std::string_view> names;
  for (const auto& row : table) {
    values.insert(static_cast<int>(row.value));
    names.insert(row.name);
    EXPECT_EQ(enum_named(table, row.name), row.value) << what << " " << row.name;
    EXPECT_EQ(std::string_view(enum_name(table, row.value)), row.name) << what;
  }
  EXPECT_EQ(values.size(), N) << what;
  EXPECT_EQ(names.size(), N) << what;
  EXPECT_EQ(*values.begin(), 0) << what;
  EXPECT_EQ(*values.rbegin(), static_cast<int>(N) - 1) << what;
  EXPECT_EQ(enum_named(table, "no such name"), std::nullopt) << what;
}

TEST(EnumNames, EveryTableHoldsEachEnumeratorOnceUnderItsOwnName) {
  expect_whole_table(kReadyOrderNames, "ReadyOrder");
  expect_whole_table(kL2StartNames, "L2Start");
  expect_whole_table(kMergeModeNames, "MergeMode");
  expect_whole_table(kPartitionNames, "PartitionStyle");
  expect_whole_table(kCoreTypeNames, "CoreType");
  expect_whole_table(kVecClassNames, "VecClass");
  expect_whole_table(kDmaPathNames, "DmaPath");
  expect_whole_table(kMemSpaceNames, "MemSpace");
  expect_whole_table(kZoneNames, "Zone");
  expect_whole_table(kZoneLabels, "Zone labels");
  expect_whole_table(kVerdictNames, "Verdict");
  expect_whole_table(kDTypeNames, "DType");
  expect_whole_table(kErrorKindNames, "ErrorKind");
}

// A ready-queue policy outside the table is refused, naming the policies there are (a third
// policy once would have parsed silently as FIFO).
TEST(EnumNames, AnUnknownReadyOrderListsTheKnownOnes) {
  try {
    run_config_from_json(nlohmann::json::parse(R"({"op": "add", "shape": [64, 64], "tile": [8, 64],
                                                  "runtime": {"ready_order": "lifo"}})"),
                         "c.json");
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "c.json: runtime.ready_order: \"lifo\" is not allowed (allowed: oldest_root_first, "
              "fifo)");
  }
}

}  // namespace

// Accesses added in task order go straight into the final lists; one out of order turns the lists
// so far back into pairs. Either way each task's accesses come out in the order they were added:
// checked on random streams against a plain bucketing, with every task's own count.
TEST(TaskGraph, AccessesComeOutByTaskInTheOrderAddedWhateverTheOrderTheyCameIn) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int tasks = 1 + static_cast<int>(rng() % 12);
    TaskGraph g;
    g.add_kind(TaskKind{});
    for (int t = 0; t < tasks; ++t) g.add_task(0, 0);
    std::vector<std::vector<uint64_t>> expected(static_cast<size_t>(tasks));
    const bool in_order = trial % 2 == 0;
    int task = 0;
    uint64_t block = 0;
    for (int i = 0, n = static_cast<int>(rng() % 40); i < n; ++i) {
      task = in_order ? std::min(tasks - 1, task + static_cast<int>(rng() % 2))
                      : static_cast<int>(rng() % static_cast<unsigned>(tasks));
      g.add_access(task, Access{++block, 64, false, false});
      expected[static_cast<size_t>(task)].push_back(block);
    }
    g.finalize();
    for (int t = 0; t < tasks; ++t) {
      std::vector<uint64_t> got;
      for (const Access* a = g.access_begin(t); a != g.access_end(t); ++a) got.push_back(a->block);
      EXPECT_EQ(got, expected[static_cast<size_t>(t)]) << "trial " << trial << " task " << t;
    }
  }
  TaskGraph bad;
  bad.add_kind(TaskKind{});
  bad.add_task(0, 0);
  bad.add_access(3, Access{1, 64, false, false});
  EXPECT_THROW(bad.finalize(), InternalError);
}

// A large block a thread frees is the next one it gets of that size class; a small one, or one
// past what a thread keeps, goes back to operator delete. Vectors over the allocator keep their
// contents through growth as std::vector does.
TEST(RecyclingAllocator, AThreadGetsBackTheLargeBlocksItFreed) {
  namespace rb = recycled_blocks;
  EXPECT_EQ(rb::size_class(1), rb::kMinBytes);
  EXPECT_EQ(rb::size_class(rb::kMinBytes + 1), 2 * rb::kMinBytes);
  void* a = rb::take(rb::kMinBytes);
  rb::give(a, rb::kMinBytes);
  void* b = rb::take(2 * rb::kMinBytes);  // `a` is kept, but in another size class
  EXPECT_NE(b, a);
  EXPECT_EQ(rb::take(rb::kMinBytes), a);  // kept, and handed back for its own class
  rb::give(b, 2 * rb::kMinBytes);
  rb::give(a, rb::kMinBytes);
  // Past what a thread keeps: freed at once (under ASan, a block kept and never freed would leak).
  void* huge = rb::take(2 * rb::kMaxHeldBytes);
  rb::give(huge, 2 * rb::kMaxHeldBytes);
  RecycledVector<int64_t> v;
  for (int64_t i = 0; i < 100000; ++i) v.push_back(i * 3);
  int64_t sum = 0;
  for (const int64_t x : v) sum += x;
  EXPECT_EQ(sum, 3 * (int64_t{99999} * 100000 / 2));
  const int64_t* data = v.data();
  const size_t capacity = v.capacity();
  RecycledVector<int64_t>().swap(v);  // frees v's block
  RecycledVector<int64_t> w;
  w.reserve(capacity);
  EXPECT_EQ(w.data(), data);  // the same block, on the same thread
}

}  // namespace tilesim
