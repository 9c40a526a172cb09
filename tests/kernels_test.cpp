// kernels/: task graphs a hand count gives, and input validation.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <array>

#include "kernels/cube/matmul_plan.hpp"
#include "kernels/families/families.hpp"
#include "kernels/lower/diagnostics.hpp"
#include "kernels/lowering.hpp"
#include "kernels/tiling/kind_cache.hpp"
#include "kernels/tiling/tile_rules.hpp"
#include "model/dma_cost.hpp"
#include "model/error.hpp"
#include "model/task_cost.hpp"
#include "model/vector_cost.hpp"
#include "sim/simulator.hpp"
#include "test_support.hpp"
#include "tools/formats/sweep_config.hpp"

namespace tilesim {
namespace {

using test::default_hw;

// Hand counts are of the tile-chain graph: packing into program-subgraph tasks is off unless a
// test turns it on.
KernelSpec spec(const std::string& op, Dims shape, Dims tile, DType dt = DType::kFp32) {
  KernelSpec s;
  s.max_tasks_per_psg = 0;
  s.op = op;
  s.shape = std::move(shape);
  s.tile = std::move(tile);
  s.dtype = dt;
  return s;
}

std::string lower_error(const KernelSpec& s) {
  try {
    lower_kernel(s, default_hw());
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Kernels, AddPyptoHandCount) {
  KernelSpec s = spec("add", {100, 1000}, {8, 256});
  s.loop_count = 4;  // chunks of 25 rows: tiles 8,8,8,1 rows x 256,256,256,232 cols
  const LoweredKernel k = lower_kernel(s, default_hw());
  EXPECT_EQ(k.graph.tasks.size(), 4u * 4 * 4);
  EXPECT_EQ(k.graph.num_roots(), 4);
  double read = 0, write = 0, elems = 0;
  for (const auto& t : k.graph.tasks) {
    const auto& st = k.graph.kinds[static_cast<size_t>(t.kind)].steps.front();
    for (const auto& l : st.loads) read += static_cast<double>(l.bytes());
    for (const auto& w : st.stores) write += static_cast<double>(w.bytes());
    for (const auto& v : st.vec) elems += static_cast<double>(v.batch * v.rows * v.cols);
  }
  EXPECT_EQ(read, 2.0 * 100 * 1000 * 4);
  EXPECT_EQ(write, 100.0 * 1000 * 4);
  EXPECT_EQ(elems, 100.0 * 1000);
  // auto_tiles is per loop body (the rulebook's limit is what loop chunking reduces): a chunk of
  // 25 rows is 4 x 4 tiles; the whole op would be 13 x 4.
  EXPECT_EQ(k.diag.auto_tiles, 4 * 4);
  EXPECT_EQ(k.diag.contiguous_bytes, 1024);
}

TEST(Kernels, ElementwiseL2BypassAndBankConflictFreeAreKernelOptions) {
  KernelSpec s = spec("add", {64, 1024}, {16, 1024}, DType::kFp16);
  const auto flags = [](const LoweredKernel& k) {
    int bypass_reads = 0, bypass_writes = 0, free_ops = 0;
    for (int32_t t = 0; t < static_cast<int32_t>(k.graph.tasks.size()); ++t)
      for (const Access* a = k.graph.access_begin(t); a != k.graph.access_end(t); ++a)
        (a->write ? bypass_writes : bypass_reads) += a->bypass_l2;
    for (const auto& kind : k.graph.kinds)
      for (const auto& st : kind.steps)
        for (const auto& v : st.vec) free_ops += !v.bank_conflict;
    return std::array<int, 3>{bypass_reads, bypass_writes, free_ops};
  };
  EXPECT_EQ(flags(lower_kernel(s, default_hw())), (std::array<int, 3>{0, 0, 0}));
  s.params = {{"l2_bypass_inputs", true}, {"bank_conflict_free", true}};
  const LoweredKernel k = lower_kernel(s, default_hw());
  // 4 tiles, 2 bypassing input reads each; the output still allocates; one add per kind.
  EXPECT_EQ(flags(k), (std::array<int, 3>{8, 0, static_cast<int>(k.graph.kinds.size())}));
  s.op = "relu";
  s.params = {{"bank_conflict_free", true}};
  EXPECT_NE(test::error_of([&] { lower_kernel(s, default_hw()); }).find("bank_conflict_free"),
            std::string::npos);  // a unary op has one source: the option is refused
}

TEST(Kernels, AscendCPartitionSplitsTilesEvenly) {
  KernelSpec s = spec("copy_in", {12288, 12288}, {64, 1024}, DType::kFp16);
  s.partition = PartitionStyle::kAscendC;
  s.cores = 48;
  const LoweredKernel k = lower_kernel(s, default_hw());
  ASSERT_EQ(k.graph.tasks.size(), 48u);
  for (const auto& t : k.graph.tasks) {
    const auto& kind = k.graph.kinds[static_cast<size_t>(t.kind)];
    ASSERT_EQ(kind.steps.size(), 1u);
    EXPECT_EQ(kind.steps[0].repeat, 48);  // 192 row blocks x 12 col blocks / 48 cores
    EXPECT_EQ(kind.steps[0].loads[0].bursts, 64);
    EXPECT_EQ(kind.steps[0].loads[0].burst_bytes, 2048);
  }
}

TEST(Kernels, BadInputIsOneClearError) {
  EXPECT_NE(lower_error(spec("softmaxx", {16, 16}, {16, 16})).find("unknown op 'softmaxx'"),
            std::string::npos);
  EXPECT_NE(lower_error(spec("add", {16, 16}, {16})).find("rank"), std::string::npos);
  const std::string mis = lower_error(spec("add", {16, 100}, {1, 7}));
  EXPECT_NE(mis.find("misaligned"), std::string::npos) << mis;
  EXPECT_NE(mis.find("multiple of 8 elements"), std::string::npos) << mis;
  const std::string ub = lower_error(spec("add", {64, 16384}, {4, 16384}));
  EXPECT_NE(ub.find("needs"), std::string::npos) << ub;
  EXPECT_NE(ub.find("has 196608 B"), std::string::npos) << ub;
  KernelSpec loop = spec("add", {4, 64}, {1, 64});
  loop.loop_count = 5;
  EXPECT_NE(lower_error(loop).find("loop_count 5 exceeds"), std::string::npos);
}

// Sums over every task of the graph: GM bytes read and written, and elements touched by vector
// ops (an elementwise op touches batch*rows*cols, a reduction reads as many).
struct Totals {
  double read = 0, write = 0, vec_elems = 0, cube_fractals = 0;
};
Totals totals(const LoweredKernel& k) {
  Totals t;
  for (const auto& task : k.graph.tasks)
    for (const auto& st : k.graph.kinds[static_cast<size_t>(task.kind)].steps) {
      const auto r = static_cast<double>(st.repeat);
      for (const auto& l : st.loads) t.read += r * static_cast<double>(l.bytes());
      for (const auto& w : st.stores) t.write += r * static_cast<double>(w.bytes());
      for (const auto& v : st.vec)
        t.vec_elems += r * static_cast<double>(v.batch * v.rows * v.cols);
      for (const auto& c : st.cube)
        t.cube_fractals +=
            r * static_cast<double>(((c.m + 15) / 16) * ((c.k + 15) / 16) * ((c.n + 15) / 16));
    }
  return t;
}

KernelSpec spmd(const std::string& op, Dims shape, Dims tile, std::vector<int> dims, int64_t grid) {
  KernelSpec s = spec(op, std::move(shape), std::move(tile));
  s.dims = std::move(dims);
  s.partition = PartitionStyle::kSpmd;
  s.grid = grid;
  return s;
}

// partition.source "triton": the Triton-Ascend compiler's UB plan. div (131072, 16) fp16 by a
// (1, 16) row in (sm, 16) sub-tiles: x and the 32 B divisor row, doubled by multibuffer; the
// divisor read in place along the rows (InlineOTFBroadcast) and z written over x, which dies at
// the div (PlanMemory's in-place reuse): 2 x (sm x 32 B + 32 B). sm = 1024 fits in 65600 B,
// where the board refused it ("ub overflow": the triton dataset's known miss, docs/triton.md);
// the Ascend C plan (written buffers, x, y and z each) fits 1024 at depth 2 in 131136 B.
TEST(Kernels, TritonUbPlanDoublesEveryLiveTensorWithoutFallback) {
  auto div = [](int64_t sm, bool triton) {
    KernelSpec s = spmd("div", {131072, 16}, {sm, 16}, {}, 40);
    s.dtype = DType::kFp16;
    s.params["broadcast"] = {1, 16};
    s.triton = triton;
    return s;
  };
  EXPECT_EQ(lower_kernel(div(1024, true), default_hw()).diag.ub_bytes, 2 * (32768 + 32));
  EXPECT_EQ(lower_kernel(div(512, true), default_hw()).diag.ub_bytes, 2 * (16384 + 32));
  const LoweredKernel ascendc = lower_kernel(div(1024, false), default_hw());
  EXPECT_EQ(ascendc.diag.ub_bytes, 2 * (2 * 32768 + 32));
  EXPECT_EQ(ascendc.diag.buffer_depth, 2);
}

// A Triton masked load of a partial sub-tile fills its whole UB buffer with the load's `other`
// before MTE2 copies the valid part (AscendNPU-IR LoadOp::decomposeOperation: hivm vbrc, then
// the load; triton-ascend performance_guidelines.md). An add (16, 1000) fp32 block in (16, 128)
// sub-tiles: 7 full sub-tiles (one step, no fill) and a 104-wide edge whose two loads each fill
// 16 x 128 elements first; the Ascend C source (DataCopyPad, no fill) has none. The task's vector
// busy grows by the two fills exactly; and in a one-iteration pipeline the copy waits for the
// fill: fill + load + latency + add + store + latency.
TEST(Kernels, TritonMaskedEdgeFillsItsLoadBuffersFirst) {
  const Hardware& hw = default_hw();
  auto add = [](bool triton) {
    KernelSpec s = spmd("add", {16, 1000}, {16, 128}, {}, 1);
    s.block = {16, 1000};
    s.triton = triton;
    return s;
  };
  const LoweredKernel t = lower_kernel(add(true), hw);
  const auto& steps = t.graph.kinds.at(0).steps;
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_EQ(steps[0].repeat, 7);
  EXPECT_TRUE(steps[0].load_fill.empty());
  ASSERT_EQ(steps[1].load_fill.size(), 2u);
  for (const VecOp& f : steps[1].load_fill) {
    EXPECT_EQ(f.cls, VecClass::kSimple);
    EXPECT_EQ(f.rows * f.cols * f.batch, 16 * 128);
    EXPECT_FALSE(f.bank_conflict);  // a VBrc reads nothing from UB
  }
  const LoweredKernel a = lower_kernel(add(false), hw);
  for (const TileStep& st : a.graph.kinds.at(0).steps) EXPECT_TRUE(st.load_fill.empty());
  TaskKind unfilled = t.graph.kinds.at(0);
  unfilled.steps[1].load_fill.clear();
  const double fill = vector_cost(steps[1].load_fill[0], hw).cycles;
  EXPECT_NEAR(cost_task_kind(t.graph.kinds.at(0), hw).vec_busy,
              cost_task_kind(unfilled, hw).vec_busy + 2 * fill, 1e-9);
  // One iteration: nothing overlaps, so each stage adds.
  TaskKind one = t.graph.kinds.at(0);
  one.compiler_multibuffer = false;
  one.steps = {steps[1]};
  const TileStep& st = one.steps[0];
  double load = 0, vec = 0;
  for (const DmaOp& op : st.loads) load += dma_occupancy_cycles(op, hw);
  for (const VecOp& op : st.vec) vec += vector_cost(op, hw).cycles;
  EXPECT_NEAR(cost_task_kind(one, hw).cycles,
              2 * fill + load + dma_latency_cycles(DmaDir::kRead, hw) + vec +
                  dma_occupancy_cycles(st.stores.at(0), hw) +
                  dma_latency_cycles(DmaDir::kWrite, hw),
              1e-9);
}

// The compiler multi-buffers a loop's body only (AscendNPU-IR MarkMultiBuffer): a Triton program
// that owns one (12, 1024) fp32 sub-tile, divided by a (1, 1024) row read in place, z written
// over x, has no loop and plans x and the 4 KiB row once: 49152 + 4096 = 53248 B. Looping over
// two sub-tiles (half the grid) doubles them: 106496 B.
TEST(Kernels, TritonMultiBuffersOnlyALoopedBody) {
  auto div = [](int64_t grid) {
    KernelSpec s = spmd("div", {480, 1024}, {12, 1024}, {}, grid);
    s.params["broadcast"] = {1, 1024};
    s.triton = true;
    return s;
  };
  const LoweredKernel once = lower_kernel(div(40), default_hw());
  EXPECT_EQ(once.diag.ub_bytes, 49152 + 4096);
  EXPECT_EQ(once.diag.buffer_depth, 1);
  const LoweredKernel looped = lower_kernel(div(20), default_hw());
  EXPECT_EQ(looped.diag.ub_bytes, 2 * (49152 + 4096));
  EXPECT_EQ(looped.diag.buffer_depth, 2);
}

// spmd elementwise: `grid` blocks share the tiles evenly; the hardware places them (unpinned).
TEST(Kernels, SpmdElementwiseBlocksShareTiles) {
  const KernelSpec s = spmd("add", {100, 1000}, {8, 256}, {}, 48);  // 13 x 4 = 52 tiles
  const LoweredKernel k = lower_kernel(s, default_hw());
  EXPECT_EQ(k.graph.runtime, RuntimeStyle::kSpmd);
  ASSERT_EQ(k.graph.tasks.size(), 48u);
  int64_t tiles = 0;
  for (const auto& t : k.graph.tasks) {
    EXPECT_EQ(t.pinned_core, -1);
    for (const auto& st : k.graph.kinds[static_cast<size_t>(t.kind)].steps) tiles += st.repeat;
  }
  EXPECT_EQ(tiles, 52);
  // A grid past the work: blocks 0..51 own a tile each, block 52 owns nothing and only starts.
  const LoweredKernel over = lower_kernel(spmd("add", {100, 1000}, {8, 256}, {}, 53), default_hw());
  ASSERT_EQ(over.graph.tasks.size(), 53u);
  const auto& last = over.graph.kinds[static_cast<size_t>(over.graph.tasks.back().kind)];
  EXPECT_TRUE(last.steps.empty());
  EXPECT_EQ(over.graph.access_begin(52), over.graph.access_end(52));
  EXPECT_EQ(lower_error(spmd("add", {100, 1000}, {8, 256}, {}, max_tasks() + 1)),
            fmt::format("add: partition.grid {} launches more blocks than the task limit {} (the "
                        "CLI's --max-tasks raises it), on 52 tiles",
                        max_tasks() + 1, max_tasks()));
}

// Empty blocks cost their start: a grid of 48 on 40 cores runs 8 idle blocks in a second wave
// behind the 40 that own work, each a block start (scheduler.block_start_ns) after its core frees.
TEST(Kernels, SpmdBlocksPastTheWorkCostTheirStart) {
  const Hardware hw = test::default_hw();
  KernelSpec s = spmd("amax", {16, 16}, {1, 16}, {1}, 16);
  s.block = {1, 16};
  const LoweredKernel fit = lower_kernel(s, hw);
  const double exact = simulate(fit.graph, hw).last_end;
  s.grid = 48;
  const LoweredKernel over = lower_kernel(s, hw);
  EXPECT_EQ(over.graph.tasks.size(), 48u);
  int idle = 0;
  for (const auto& t : over.graph.tasks)
    idle += over.graph.kinds[static_cast<size_t>(t.kind)].steps.empty();
  EXPECT_EQ(idle, 32);
  // The idle blocks' wave ends after the busy one: at least one block start later.
  EXPECT_GE(simulate(over.graph, hw).last_end,
            exact + hw.ns_to_cycles(hw.scheduler.block_start_ns) - 1e-9);
}

// spmd softmax, one segment per row: each block is one task repeating the fused row step over
// its 2 or 3 rows (100 rows over 48 blocks); every row is read and written once.
TEST(Kernels, SpmdSoftmaxBlocksOwnWholeRows) {
  const LoweredKernel k =
      lower_kernel(spmd("softmax", {100, 4096}, {1, 4096}, {1}, 48), default_hw());
  EXPECT_EQ(k.graph.runtime, RuntimeStyle::kSpmd);
  ASSERT_EQ(k.graph.tasks.size(), 48u);
  int64_t rows = 0;
  for (const auto& t : k.graph.tasks) {
    EXPECT_EQ(t.pinned_core, -1);
    const auto& kind = k.graph.kinds[static_cast<size_t>(t.kind)];
    ASSERT_EQ(kind.steps.size(), 1u);
    EXPECT_GE(kind.steps[0].repeat, 2);
    EXPECT_LE(kind.steps[0].repeat, 3);
    rows += kind.steps[0].repeat;
  }
  EXPECT_EQ(rows, 100);
  // PyPTO's tile limits do not bind an spmd kernel: 4096 row tiles exceed max_auto_tiles.
  EXPECT_TRUE(k.diag.limit_violations.empty());
  KernelSpec pypto = spec("softmax", {4096, 4096}, {1, 4096});
  pypto.dims = {1};
  EXPECT_FALSE(rule_figures(pypto, default_hw()).limit_violations.empty());
  pypto.partition = PartitionStyle::kSpmd;
  pypto.grid = 48;
  EXPECT_TRUE(rule_figures(pypto, default_hw()).limit_violations.empty());
  const Totals t = totals(k);
  EXPECT_EQ(t.read, 100.0 * 4096 * 4);
  EXPECT_EQ(t.write, 100.0 * 4096 * 4);
}

// spmd softmax over split rows: a block accumulates each row's 2 sub-tiles in UB, then re-reads
// them for the output (16 rows over 5 blocks: 3, 3, 3, 3, 4).
TEST(Kernels, SpmdSoftmaxSplitRowsAccumulateInTheBlock) {
  const LoweredKernel k =
      lower_kernel(spmd("softmax", {16, 16384}, {1, 8192}, {1}, 5), default_hw());
  ASSERT_EQ(k.graph.tasks.size(), 5u);
  const Totals t = totals(k);
  EXPECT_EQ(t.read, 2 * 16.0 * 16384 * 4);
  EXPECT_EQ(t.write, 16.0 * 16384 * 4);
  EXPECT_EQ(k.diag.reduction_segments, 2);
}

// spmd sum over a middle dim: 16 output row tiles (whole 256-wide rows, 4 segments each) over 8
// blocks; the reduced output is written once.
TEST(Kernels, SpmdSumHandCount) {
  const LoweredKernel k =
      lower_kernel(spmd("sum", {16, 64, 256}, {1, 16, 256}, {1}, 8), default_hw());
  ASSERT_EQ(k.graph.tasks.size(), 8u);
  EXPECT_EQ(k.graph.num_edges(), 0);
  const Totals t = totals(k);
  EXPECT_EQ(t.read, 16.0 * 64 * 256 * 4);
  EXPECT_EQ(t.write, 16.0 * 256 * 4);
}

// spmd sum with more blocks than row tiles: 16 rows of 4 sub-tiles over 32 blocks, so each block
// holds half a row and adds its partial into the output atomically (32 one-element stores).
TEST(Kernels, SpmdSumSplitRowsAccumulateAtomically) {
  const LoweredKernel k = lower_kernel(spmd("sum", {16, 256}, {1, 64}, {1}, 32), default_hw());
  ASSERT_EQ(k.graph.tasks.size(), 32u);
  for (const auto& t : k.graph.tasks) {
    const auto& steps = k.graph.kinds[static_cast<size_t>(t.kind)].steps;
    ASSERT_FALSE(steps.empty());
    EXPECT_TRUE(steps.back().accumulates);
  }
  const Totals t = totals(k);
  EXPECT_EQ(t.read, 16.0 * 256 * 4);
  EXPECT_EQ(t.write, 32.0 * 4);
  // 48 blocks over 64 sub-tiles: runs of 1 or 2 cross row boundaries; every sub-tile read once.
  EXPECT_EQ(totals(lower_kernel(spmd("sum", {16, 256}, {1, 64}, {1}, 48), default_hw())).read,
            16.0 * 256 * 4);
}

// The tasks of each launch of a graph.
std::vector<std::vector<int32_t>> by_launch(const LoweredKernel& k) {
  std::vector<std::vector<int32_t>> l(static_cast<size_t>(k.graph.num_launches()));
  for (size_t i = 0; i < k.graph.tasks.size(); ++i)
    l[static_cast<size_t>(k.graph.tasks[i].launch)].push_back(static_cast<int32_t>(i));
  return l;
}

// spmd layernorm, whole rows that fit one sub-tile: one launch, each row read and written once.
TEST(Kernels, SpmdNormWholeRowsFuseOneSubTile) {
  const LoweredKernel k =
      lower_kernel(spmd("layernorm", {96, 4096}, {1, 4096}, {1}, 48), default_hw());
  ASSERT_EQ(k.graph.tasks.size(), 48u);
  EXPECT_EQ(k.graph.num_launches(), 1);
  const Totals t = totals(k);
  EXPECT_EQ(t.read, 96.0 * 4096 * 4);
  EXPECT_EQ(t.write, 96.0 * 4096 * 4);
}

// spmd layernorm, whole rows of 4 sub-tiles: statistics, then normalise re-reading GM.
TEST(Kernels, SpmdNormWholeRowsReadTwice) {
  const LoweredKernel k =
      lower_kernel(spmd("layernorm", {16, 16384}, {1, 4096}, {1}, 8), default_hw());
  ASSERT_EQ(k.graph.tasks.size(), 8u);
  EXPECT_EQ(k.graph.num_launches(), 1);
  const Totals t = totals(k);
  EXPECT_EQ(t.read, 2 * 16.0 * 16384 * 4);
  EXPECT_EQ(t.write, 16.0 * 16384 * 4);
}

// spmd rmsnorm with rows split over blocks (4 rows of 4 sub-tiles over 8 blocks: half a row
// each): launch 0 adds each half's sum of squares into the row's statistic atomically (4 B),
// launch 1 reads it back (4 B) and normalises the half, re-reading it.
TEST(Kernels, SpmdNormSplitRowsFinishInASecondLaunch) {
  const LoweredKernel k = lower_kernel(spmd("rmsnorm", {4, 4096}, {1, 1024}, {1}, 8), default_hw());
  const auto launches = by_launch(k);
  ASSERT_EQ(launches.size(), 2u);
  ASSERT_EQ(launches[0].size(), 8u);
  ASSERT_EQ(launches[1].size(), 8u);
  EXPECT_EQ(k.graph.num_edges(), 0);
  for (const int32_t t : launches[0])
    EXPECT_TRUE(k.graph.kinds[static_cast<size_t>(k.graph.tasks[static_cast<size_t>(t)].kind)]
                    .steps.back()
                    .accumulates);
  EXPECT_EQ(k.diag.launches, 2);
  const Totals t = totals(k);
  EXPECT_EQ(t.read, 2 * 4.0 * 4096 * 4 + 8 * 4);
  EXPECT_EQ(t.write, 4.0 * 4096 * 4 + 8 * 4);
  // params.spmd_rows "split" shares sub-tiles even when blocks could hold whole rows: over 3
  // blocks (runs of 5, 5 and 6 of the 16 sub-tiles) rows split, so two launches.
  KernelSpec split = spmd("rmsnorm", {4, 4096}, {1, 1024}, {1}, 3);
  split.params["spmd_rows"] = "split";
  EXPECT_EQ(lower_kernel(split, default_hw()).graph.num_launches(), 2);
  // Over 4 blocks each run of 4 sub-tiles is one whole row. Whether a row splits is read from
  // the plan's blocks (splits_rows), not from the mode, so no part is left to combine and one
  // launch normalises each row in its block (statistics, then a re-read): the input read twice,
  // written once, no statistics in GM.
  split.grid = 4;
  const LoweredKernel whole = lower_kernel(split, default_hw());
  EXPECT_EQ(whole.graph.num_launches(), 1);
  EXPECT_EQ(whole.graph.tasks.size(), 4u);
  EXPECT_EQ(totals(whole).read, 2 * 4.0 * 4096 * 4);
  EXPECT_EQ(totals(whole).write, 4.0 * 4096 * 4);
}

// spmd groupnorm split: (2, 4, 16, 64) in 2 groups is 4 rows of 2 channels x 16 x 64, walked in
// 4 (1, 1, 8, 64) sub-tiles each; 8 blocks hold half a row. Launch 0 adds each half's (sum, sum
// of squares) (8 B) atomically, launch 1 reads them back and normalises the half.
TEST(Kernels, SpmdGroupnormSplitRowsHandCount) {
  KernelSpec s = spmd("groupnorm", {2, 4, 16, 64}, {1, 1, 8, 64}, {}, 8);
  s.params["groups"] = 2;
  const LoweredKernel k = lower_kernel(s, default_hw());
  const auto launches = by_launch(k);
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0].size(), 8u);
  EXPECT_EQ(launches[1].size(), 8u);
  const Totals t = totals(k);
  EXPECT_EQ(t.read, 2 * 2.0 * 4 * 16 * 64 * 4 + 8 * 8);
  EXPECT_EQ(t.write, 2.0 * 4 * 16 * 64 * 4 + 8 * 8);
  // 4 blocks: whole groups by default, one launch, each group read twice (4 sub-tiles).
  s.grid = 4;
  const LoweredKernel w = lower_kernel(s, default_hw());
  EXPECT_EQ(w.graph.num_launches(), 1);
  EXPECT_EQ(w.graph.tasks.size(), 4u);
  EXPECT_EQ(totals(w).read, 2 * 2.0 * 4 * 16 * 64 * 4);
}

// spmd softmax with rows split over blocks: (max, sum of exp) do not add, so each half row leaves
// its 2 statistics (8 B) in GM; launch 1 reads both halves' (16 B), merges them and writes.
TEST(Kernels, SpmdSoftmaxSplitRowsMergeInASecondLaunch) {
  const LoweredKernel k = lower_kernel(spmd("softmax", {4, 4096}, {1, 1024}, {1}, 8), default_hw());
  const auto launches = by_launch(k);
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0].size(), 8u);
  EXPECT_EQ(launches[1].size(), 8u);
  const Totals t = totals(k);
  EXPECT_EQ(t.read, 2 * 4.0 * 4096 * 4 + 8 * 16);
  EXPECT_EQ(t.write, 4.0 * 4096 * 4 + 8 * 8);
}

// spmd cross_entropy, whole rows: 64 row tiles of (64, 10) over 32 blocks, each folding its 128
// per-sample losses into the mean with one atomic 4 B add; logits and int32 targets read once.
TEST(Kernels, SpmdLossWholeRowsFoldIntoTheMean) {
  const LoweredKernel k =
      lower_kernel(spmd("cross_entropy", {4096, 10}, {64, 16}, {}, 32), default_hw());
  ASSERT_EQ(k.graph.tasks.size(), 32u);
  EXPECT_EQ(k.graph.num_launches(), 1);
  for (const auto& task : k.graph.tasks)
    EXPECT_TRUE(k.graph.kinds[static_cast<size_t>(task.kind)].steps.back().accumulates);
  const Totals t = totals(k);
  EXPECT_EQ(t.read, 4096.0 * 10 * 4 + 4096.0 * 4);
  EXPECT_EQ(t.write, 32.0 * 4);
}

// spmd triplet_margin with rows split: 8 rows of 2 sub-tiles over 16 blocks, a, p and n read
// once. Its two distances need the whole sample (square roots): launch 0 adds each half's 2 sums
// (2 x 4 B) into the row's sums atomically; launch 1 (the finalize's, all 16 blocks started, 8
// with a row) reads a row's 2 sums (8 B), finishes it and adds it into the mean (4 B, X13).
TEST(Kernels, SpmdLossSplitRowsFinishInASecondLaunch) {
  const LoweredKernel k =
      lower_kernel(spmd("triplet_margin", {8, 2048}, {1, 1024}, {}, 16), default_hw());
  const auto launches = by_launch(k);
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0].size(), 16u);
  EXPECT_EQ(launches[1].size(), 16u);
  const Totals t = totals(k);
  EXPECT_EQ(t.read, 3 * 8.0 * 2048 * 4 + 8 * 8);
  EXPECT_EQ(t.write, 16.0 * 8 + 8 * 4);
  // mse's per-sample value is a scaled sum: each block adds its half's share into the mean
  // directly, in one launch.
  const LoweredKernel m = lower_kernel(spmd("mse", {8, 2048}, {1, 1024}, {}, 16), default_hw());
  ASSERT_EQ(m.graph.tasks.size(), 16u);
  EXPECT_EQ(m.graph.num_launches(), 1);
  EXPECT_EQ(totals(m).read, 2 * 8.0 * 2048 * 4);
  EXPECT_EQ(totals(m).write, 16.0 * 4);
}

// What the spmd partition does not model is one clear error naming it.
TEST(Kernels, SpmdRejectionsNameWhatIsNotModelled) {
  EXPECT_EQ(lower_kernel(spmd("sum", {16, 256}, {1, 64}, {1}, 65), default_hw()).graph.tasks.size(),
            65u);  // the 65th block owns nothing
  KernelSpec tree = spmd("sum", {16, 256}, {1, 64}, {1}, 4);
  tree.params["merge"] = "tree";
  EXPECT_EQ(lower_error(tree),
            "sum: params.merge: an spmd block accumulates its rows in UB (in_task); \"tree\" "
            "merges across tasks, which needs the pypto partition (allowed under spmd: auto, "
            "in_task)");
  KernelSpec chained = spmd("mean", {4, 6, 10, 16}, {1, 2, 4, 16}, {2, 3}, 4);
  chained.params["multi_dim"] = "chained";
  EXPECT_EQ(lower_error(chained),
            "mean: a chained reduction runs 2 phases, one launch each; an spmd launch runs one "
            "(use params.multi_dim = \"merged\" or the pypto partition)");
  KernelSpec whole = spmd("layernorm", {16, 256}, {1, 256}, {1}, 17);
  whole.params["spmd_rows"] = "whole";
  EXPECT_EQ(lower_error(whole), "");  // whole rows: the 17th block owns none and only starts
  KernelSpec pypto = spec("layernorm", {16, 256}, {1, 256});
  pypto.dims = {1};
  pypto.params["spmd_rows"] = "split";
  EXPECT_EQ(lower_error(pypto),
            "layernorm: params.spmd_rows applies to the spmd partition (this run is pypto); leave "
            "it out");
  KernelSpec t2 = spmd("mse", {16, 256}, {1, 256}, {}, 4);
  t2.params["phase2_tile"] = {16};
  EXPECT_EQ(lower_error(t2),
            "mse: params.phase2_tile tiles the pypto batch-mean phase; under spmd each block folds "
            "the rows it finishes (leave it out)");
  KernelSpec asc = spec("sum", {16, 256}, {1, 256});
  asc.dims = {1};
  asc.partition = PartitionStyle::kAscendC;
  EXPECT_EQ(lower_error(asc),
            "sum: the ascendc partition is modelled for copy_in and elementwise ops; a reducing "
            "op takes pypto or spmd");
  KernelSpec loop = spmd("sum", {16, 256}, {1, 256}, {1}, 4);
  loop.loop_count = 2;
  EXPECT_NE(lower_error(loop).find("loop_count 2 applies to the pypto partition"),
            std::string::npos);
  // A sub-tile that does not fit UB: the capacity error with its numbers.
  const std::string ub = lower_error(spmd("sum", {8, 65536}, {1, 65536}, {1}, 8));
  EXPECT_NE(ub.find("needs "), std::string::npos) << ub;
  EXPECT_NE(ub.find("has 196608 B"), std::string::npos) << ub;
}

TEST(Kernels, SoftmaxSplitRowHandCount) {
  KernelSpec s = spec("softmax", {16, 16384}, {1, 8192});
  s.dims = {1};
  s.params["merge"] = "tree";
  const LoweredKernel k = lower_kernel(s, default_hw());
  // 16 rows x (2 partials + 1 merge + 2 output tiles).
  EXPECT_EQ(k.graph.tasks.size(), 80u);
  EXPECT_EQ(k.diag.reduction_segments, 2);
  const Totals t = totals(k);
  const double x = 16.0 * 16384 * 4;
  // Input read twice; (max, sum) stats of 8 B: 32 partial writes, 16 merges read 2 and write 1,
  // 32 output tiles read 1.
  EXPECT_EQ(t.read, 2 * x + 16 * 2 * 8 + 32 * 8);
  EXPECT_EQ(t.write, x + 32 * 8 + 16 * 8);
  // Partial: max, x - max, exp, sum over 8192; merge: 8 ops + finalize 1 on one element;
  // output: x - max, exp, * 1/s over 8192.
  EXPECT_EQ(t.vec_elems, 32 * 4 * 8192 + 16 * (8 + 1) + 32 * 3 * 8192);
}

TEST(Kernels, AtomicMaxHandCount) {
  KernelSpec s = spec("amax", {16, 256, 256}, {1, 16, 256});
  s.dims = {1};
  const LoweredKernel k = lower_kernel(s, default_hw());
  // 16 output rows x 16 segments, each accumulating its partial max atomically: no merge tasks.
  EXPECT_EQ(k.graph.tasks.size(), 256u);
  EXPECT_EQ(k.graph.num_edges(), 0);
  const Totals t = totals(k);
  EXPECT_EQ(t.read, 16.0 * 256 * 256 * 4);
  EXPECT_EQ(t.write, 256.0 * 256 * 4);  // every partial writes its 256-element row
  EXPECT_EQ(t.vec_elems, 256.0 * 16 * 256);
}

TEST(Kernels, PackingKeepsTheWorkAndBoundsTasksPerRoot) {
  KernelSpec s = spec("amax", {16, 256, 256}, {1, 16, 256});
  s.dims = {1};
  const Totals chains = totals(lower_kernel(s, default_hw()));
  s.max_tasks_per_psg = -1;  // default: one task per core per PSG and root function
  const LoweredKernel packed = lower_kernel(s, default_hw());
  EXPECT_EQ(packed.graph.tasks.size(), 48u);  // 256 chains over 48 AIV cores: 5 or 6 each
  const Totals t = totals(packed);
  EXPECT_EQ(t.read, chains.read);
  // Each output row's 16 segments fall into exactly 3 packed tasks; a task keeps its running
  // maximum in UB (one 256-element fold per segment after its first) and stores it once.
  EXPECT_EQ(chains.write, 256.0 * 256 * 4);
  EXPECT_EQ(t.write, 48.0 * 256 * 4);
  EXPECT_EQ(t.vec_elems, chains.vec_elems + (256.0 - 48) * 256);
  // The L2 model sees what is stored: a partial kept in UB for the next member leaves the
  // task's GM accesses too, so its write accesses add up to its stores (one per task) and its
  // reads stay every segment's.
  double read_acc = 0, write_acc = 0;
  for (int32_t i = 0; i < static_cast<int32_t>(packed.graph.tasks.size()); ++i)
    for (const Access* a = packed.graph.access_begin(i); a != packed.graph.access_end(i); ++a)
      (a->write ? write_acc : read_acc) += static_cast<double>(a->bytes);
  EXPECT_EQ(write_acc, t.write);
  EXPECT_EQ(read_acc, t.read);
  s.loop_count = 4;  // 4 root functions of 64 chains
  EXPECT_EQ(lower_kernel(s, default_hw()).graph.tasks.size(), 4u * 48);
  // Dependencies survive packing: a softmax's output tasks still wait for its merges.
  KernelSpec sm = spec("softmax", {64, 4096}, {1, 1024});
  sm.dims = {1};
  sm.max_tasks_per_psg = 8;
  sm.params["merge"] = "tree";
  const LoweredKernel p = lower_kernel(sm, default_hw());
  EXPECT_EQ(p.graph.tasks.size(), 8u * 3);
  EXPECT_GT(p.graph.num_edges(), 0);
}

TEST(Kernels, GroupNormHandCount) {
  KernelSpec s = spec("groupnorm", {2, 8, 4, 64}, {1, 2, 2, 64});
  s.params["groups"] = 2;
  const LoweredKernel k = lower_kernel(s, default_hw());
  // View (4 rows of (n, g), 4 channels, 4, 64): per row 2 x 2 segments; atomic statistics, one
  // finalize task per row, then one output task per segment.
  EXPECT_EQ(k.graph.tasks.size(), 4u * (4 + 1 + 4));
  EXPECT_EQ(k.graph.num_edges(), 4 * (4 + 4));
  const Totals t = totals(k);
  const double x = 2.0 * 8 * 4 * 64 * 4;
  // Input twice; stats (sum, sumsq) 8 B: 16 partial writes, 4 finalize reads and writes,
  // 16 output tiles read them.
  EXPECT_EQ(t.read, 2 * x + 4 * 8 + 16 * 8);
  EXPECT_EQ(t.write, x + 16 * 8 + 4 * 8);
}

TEST(Kernels, MatmulHandCount) {
  KernelSpec s = spec("matmul", {256, 128, 256}, {128, 64, 128}, DType::kFp16);
  s.loop_count = 2;  // BASIC_BATCH 128
  const LoweredKernel k = lower_kernel(s, default_hw());
  EXPECT_EQ(k.graph.tasks.size(), 4u);  // 2 loop bodies x (1 m tile x 2 n tiles)
  EXPECT_EQ(k.graph.num_roots(), 2);
  const Totals t = totals(k);
  EXPECT_EQ(t.read, 4.0 * (128 * 128 * 2 + 128 * 128 * 2));  // A and B blocks over 2 k steps
  EXPECT_EQ(t.write, 256.0 * 256 * 2);
  EXPECT_EQ(t.cube_fractals, 4.0 * 2 * (8 * 4 * 8));
}

ErrorKind lower_kind(const KernelSpec& s);

// spmd matmul (catlass's basic matmul): C [300, 200] in l1 [128, 128] tiles = 3 x 2 tiles
// (ragged: 44 rows, 72 columns) over 4 blocks, swizzle [2, 0]: loop indices 0..5 are the tiles
// (0,0) (1,0) (0,1) (1,1) | (2,1) (2,0) (the second band of one tile row walks back), and block b
// takes indices b and b + 4. One task per tile, a block's second tile continuing its first.
TEST(Kernels, SpmdMatmulHandCount) {
  KernelSpec s = spmd("matmul", {300, 96, 200}, {128, 64, 128}, {}, 4);
  s.dtype = DType::kFp16;
  s.params["l0_tile"] = {64, 128, 32};
  s.params["swizzle"] = {2, 0};
  const LoweredKernel k = lower_kernel(s, default_hw());
  EXPECT_EQ(k.graph.runtime, RuntimeStyle::kSpmd);
  ASSERT_EQ(k.graph.tasks.size(), 6u);
  // Task order: block 0 (idx 0, 4), block 1 (idx 1, 5), block 2 (idx 2), block 3 (idx 3).
  const std::vector<std::pair<int64_t, int64_t>> tiles = {{0, 0}, {2, 1}, {1, 0},
                                                          {2, 0}, {0, 1}, {1, 1}};
  const std::vector<bool> continues = {false, true, false, true, false, false};
  int64_t mmads = 0;
  for (size_t i = 0; i < 6; ++i) {
    const Task& t = k.graph.tasks[i];
    EXPECT_EQ(t.pinned_core, -1);
    EXPECT_EQ(t.continues_block, continues[i]) << i;
    EXPECT_EQ(k.graph.kinds[static_cast<size_t>(t.kind)].core, CoreType::kAic);
    // 2 k steps: A and B blocks per step, then the C tile written once.
    ASSERT_EQ(
        k.graph.access_end(static_cast<int32_t>(i)) - k.graph.access_begin(static_cast<int32_t>(i)),
        5);
    const Access& c = *(k.graph.access_end(static_cast<int32_t>(i)) - 1);
    EXPECT_TRUE(c.write);
    // C is the program's tensor 2 (A 0, B 1).
    EXPECT_EQ(c.block, block_key(2, {tiles[i].first * 128, tiles[i].second * 128})) << i;
    for (const auto& st : k.graph.kinds[static_cast<size_t>(t.kind)].steps)
      mmads += st.repeat * static_cast<int64_t>(st.cube.size());
  }
  // Tiles of one tile row read the same A blocks, whichever block runs them (task 0: (0,0) on
  // block 0, task 4: (0,1) on block 2), so the L2 model sees the reuse the swizzle creates.
  EXPECT_EQ(k.graph.access_begin(0)->block, block_key(0, {0, 0}));
  EXPECT_EQ(k.graph.access_begin(4)->block, block_key(0, {0, 0}));
  EXPECT_EQ((k.graph.access_begin(4) + 1)->block, block_key(1, {0, 128}));
  const Totals t = totals(k);
  // Every tile reads its A rows and B columns over all of k: tile rows sum to 2 x 300, tile
  // columns to 3 x 200.
  EXPECT_EQ(t.read, (2.0 * 300 * 96 + 3.0 * 200 * 96) * 2);
  EXPECT_EQ(t.write, 300.0 * 200 * 2);
  // Fractals: ceil(mext/16) x 96/16 x ceil(next/16), m: 8 + 8 + 3, n: 8 + 5.
  EXPECT_EQ(t.cube_fractals, (8.0 + 8 + 3) * 6 * (8 + 5));
  // mmads: m parts (2, 2, 1 per tile row) x k parts (64: 2, 32: 1) x one n part, per tile column.
  EXPECT_EQ(mmads, (2 + 2 + 1) * 3 * 1 * 2);
  EXPECT_EQ(k.diag.reduction_segments, 2);
}

// GemmIdentityBlockSwizzle<2, 1> on 3 x 3 C tiles: bands of 2 tile columns walked row by row,
// the last band (1 column) bottom-up.
TEST(Kernels, SpmdMatmulSwizzleBandsOfColumns) {
  SpmdMatmulPlan p;
  p.m = p.n = 3 * 32;
  p.m1 = p.n1 = 32;
  p.tiles_m = p.tiles_n = 3;
  p.swizzle_offset = 2;
  p.swizzle_direction = 1;
  const std::vector<std::pair<int64_t, int64_t>> want = {{0, 0}, {0, 1}, {1, 0}, {1, 1}, {2, 0},
                                                         {2, 1}, {2, 2}, {1, 2}, {0, 2}};
  for (int64_t i = 0; i < 9; ++i) {
    const MatmulTile t = spmd_matmul_tile(p, i);
    EXPECT_EQ(std::make_pair(t.m0 / 32, t.n0 / 32), want[static_cast<size_t>(i)]) << i;
  }
}

// catlass's default tiling (l1 [128, 256, 256], l0 [128, 256, 64]) fills L1 (2 x (64 + 128)
// KiB), L0B (2 x 32 KiB) and L0C (128 KiB fp32) exactly; one step more is a capacity error at
// the requested buffer depth.
TEST(Kernels, SpmdMatmulCapacityAndAlignment) {
  auto mm = [](Dims tile, std::vector<int64_t> l0) {
    KernelSpec s = spmd("matmul", {1024, 1024, 1024}, std::move(tile), {}, 8);
    s.dtype = DType::kFp16;
    s.params["l0_tile"] = l0;
    return s;
  };
  EXPECT_EQ(lower_error(mm({128, 256, 256}, {128, 256, 64})), "");
  EXPECT_EQ(lower_error(mm({128, 512, 256}, {128, 256, 64})),
            "matmul: L1 overflow with tile (128, 512, 256), params.l0_tile [128, 256, 64] at "
            "buffer_count 2: needs 786432 B, has 524288 B (buffers: A 131072 B x 2, B 262144 B "
            "x 2)");
  EXPECT_EQ(lower_error(mm({128, 256, 256}, {128, 256, 128})),
            "matmul: L0B overflow with tile (128, 256, 256), params.l0_tile [128, 256, 128] at "
            "buffer_count 2: needs 131072 B, has 65536 B (buffers: B0 65536 B x 2)");
  EXPECT_EQ(lower_error(mm({256, 128, 256}, {128, 256, 64})),
            "matmul: L0C overflow with tile (256, 128, 256), params.l0_tile [128, 256, 64] at "
            "buffer_count 2: needs 262144 B, has 131072 B (buffers: C0 262144 B)");
  EXPECT_EQ(lower_kind(mm({128, 512, 256}, {128, 256, 64})), ErrorKind::kCapacity);
  EXPECT_EQ(lower_error(mm({128, 256, 256}, {128, 256, 40})),
            "matmul: params.l0_tile [128, 256, 40] is misaligned: 40 is not a multiple of the "
            "cube fractal 16 (cube.fractal)");
  EXPECT_EQ(lower_kind(mm({120, 256, 256}, {128, 256, 64})), ErrorKind::kAlignment);
  KernelSpec l1 = mm({128, 256, 256}, {128, 256, 64});
  l1.params["l1_tile"] = {128, 256, 128};
  EXPECT_EQ(lower_error(l1),
            "matmul: params.l1_tile [128, 256, 128] disagrees with tile (128, 256, 256): under the "
            "spmd partition tile is the L1 tile [m1, k1, n1], so l1_tile must be [128, 256, 256] "
            "(or left out)");
  l1.params["l1_tile"] = {128, 256, 256};
  EXPECT_EQ(lower_error(l1), "");
  KernelSpec sw = mm({128, 256, 256}, {128, 256, 64});
  sw.params["swizzle"] = {3, 2};
  EXPECT_EQ(lower_kind(sw), ErrorKind::kParams);
  KernelSpec grid = mm({128, 256, 256}, {128, 256, 64});
  grid.grid = 33;                                               // 8 x 4 C tiles
  const LoweredKernel idle = lower_kernel(grid, default_hw());  // one AIC block past the tiles
  ASSERT_EQ(idle.graph.tasks.size(), 33u);
  const TaskKind& last = idle.graph.kinds[static_cast<size_t>(idle.graph.tasks.back().kind)];
  EXPECT_TRUE(last.steps.empty());
  EXPECT_EQ(last.core, CoreType::kAic);
}

// Work the machine could never hold is refused before anything is allocated, with sizes
// computed so they cannot wrap: a 2^62-row tensor once passed as 0 tasks at 0 us, a
// (2^32, 2^32, 8) tile divided by zero, and a (1, 8) tile over (65536, 65536) lowered for minutes.
TEST(Kernels, HugeWorkIsRefusedBeforeLowering) {
  auto error = [](const nlohmann::json& doc) {
    try {
      kernel_spec_from_json(doc, "w.json", {});
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kLimits);
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_EQ(error({{"op", "relu"}, {"shape", {int64_t{1} << 62, 8}}, {"tile", {1, 8}}}),
            "w.json: shape: (4611686018427387904, 8) fp32 is over 1099511627776 B (1 TiB), more "
            "than any device holds");
  const int64_t big = int64_t{1} << 32;
  EXPECT_EQ(error({{"op", "relu"}, {"shape", {64, 64, 8}}, {"tile", {big, big, 8}}}),
            "w.json: tile: (4294967296, 4294967296, 8) fp32 is over 1099511627776 B (1 TiB), "
            "more than any device holds");
  EXPECT_EQ(error({{"op", "relu"}, {"shape", {65536, 65536}}, {"tile", {1, 8}}}),
            "w.json: tile: (1, 8) over shape (65536, 65536) implies 5.37e+08 tasks (sub-tiles); "
            "the limit is 1.68e+07; raise it with --max-tasks or use a larger tile");
  EXPECT_EQ(error({{"op", "relu"}, {"shape", {4096, 4096}}, {"tile", {1, 1}}}), "(accepted)");
  // A matmul's shape [m, k, n] is its iteration space: its tensors are A, B and C.
  EXPECT_EQ(error({{"op", "matmul"},
                   {"shape", {16384, 16384, 16384}},
                   {"dtype", "fp16"},
                   {"tile", {128, 64, 256}}}),
            "(accepted)");
  // Tile-like params are bounded too (a phase-2 tile of 2^62 once modelled 2.7 years).
  try {
    kernel_spec_from_json({{"op", "cross_entropy"},
                           {"shape", {4096, 10}},
                           {"dim", 1},
                           {"tile", {8, 16}},
                           {"params", {{"phase2_tile", {int64_t{1} << 62}}}}},
                          "w.json", {});
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "w.json: params.phase2_tile[0]: out of range: 4611686018427387904 (allowed "
              "1..16777216)");
  }
  // Specs built in code are checked by lower_kernel too.
  EXPECT_NE(lower_error(spec("relu", {65536, 65536}, {1, 8})).find("implies 5.37e+08 tasks"),
            std::string::npos);
  // --max-tasks raises the limit (process-wide): the same spec is accepted, and counted exactly.
  set_max_tasks(int64_t{1} << 30);
  EXPECT_EQ(error({{"op", "relu"}, {"shape", {65536, 65536}}, {"tile", {1, 8}}}), "(accepted)");
  set_max_tasks(kDefaultMaxTasks);
  EXPECT_EQ(implied_subtiles(spec("relu", {65536, 65536}, {1, 8})), int64_t{1} << 29);
  EXPECT_EQ(implied_subtiles(spec("relu", {int64_t{1} << 40, int64_t{1} << 40}, {1, 1})),
            int64_t{1} << 62);  // saturated, never wrapped
}

TEST(Kernels, LossPhasesHandCount) {
  KernelSpec s = spec("cross_entropy", {4096, 10}, {256, 16});
  s.params["phase2_tile"] = {1024};
  const LoweredKernel k = lower_kernel(s, default_hw());
  // Phase 1: 16 row blocks, one segment each; phase 2: 4 atomic partial means of 1024 values.
  EXPECT_EQ(k.graph.tasks.size(), 16u + 4);
  EXPECT_EQ(k.graph.num_edges(), 16);  // each phase-2 segment waits for its 4 row blocks
  EXPECT_EQ(k.diag.tile_exceeds_shape, std::vector<int>{1});
}

TEST(Kernels, BadKernelInput) {
  const auto hw = default_hw();
  KernelSpec g = spec("groupnorm", {2, 10, 4, 64}, {1, 2, 2, 64});
  g.params["groups"] = 3;
  EXPECT_NE(lower_error(g).find("params.groups 3 does not divide the 10 channels"),
            std::string::npos);
  KernelSpec sm = spec("softmax", {4, 64}, {1, 64});
  sm.dims = {0, 1};
  EXPECT_NE(lower_error(sm).find("exactly one dim"), std::string::npos);
  KernelSpec p = spec("sum", {4, 64}, {1, 64});
  p.dims = {1};
  p.params["mege"] = "tree";
  EXPECT_NE(lower_error(p).find(
                "sum: params.mege: unknown param for sum (allowed: merge, multi_dim, spmd_rows)"),
            std::string::npos);
  KernelSpec at = spec("softmax", {4, 64}, {1, 32});
  at.dims = {1};
  at.params["merge"] = "atomic";
  EXPECT_NE(lower_error(at).find("\"atomic\" needs"), std::string::npos);
  try {
    kernel_spec_from_json(
        nlohmann::json::parse(R"({"op": "sum", "shape": [4, 64], "tile": [1, 64], "dim": 2})"),
        "x.json", {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("dim: 2 is out of range for a rank-2 shape"),
              std::string::npos)
        << e.what();
  }
}

TEST(Kernels, LimitsAreReportedNotEnforced) {
  const LoweredKernel k = lower_kernel(spec("add", {4096, 4096}, {1, 32768 / 4}), default_hw());
  ASSERT_EQ(k.diag.limit_violations.size(), 1u);
  EXPECT_NE(k.diag.limit_violations[0].find("auto_tiles"), std::string::npos);
  const LoweredKernel big = lower_kernel(spec("add", {128, 4096}, {1, 16384}), default_hw());
  EXPECT_EQ(big.diag.tile_exceeds_shape, std::vector<int>{1});
}

// The prod(tile) <= 16384 limit counts a cube tile's operand tiles A[tm, tk] and B[tk, tn], not
// m * k * n (kernels/cube/cube_task.hpp says why): the rule-2 matmul sweep's (128, 64, 256) is
// within it (B = 64 * 256 = 16384), while an operand over 16384 elements is still flagged.
TEST(Kernels, MatmulLimitCountsTheOperandTiles) {
  const auto hw = default_hw();
  const SweepConfig cfg =
      load_sweep_config(test::source_path("configs/sweeps/rule2_matmul_16384_loops.json"));
  const auto candidates = expand_candidates(cfg, hw);
  ASSERT_EQ(candidates.size(), 8u);
  for (const auto& c : candidates) {
    const RuleFigures f = rule_figures(candidate_spec(cfg, c), hw);
    EXPECT_EQ(f.prod_tile, 16384) << "loop " << c.loop_count;
    for (const auto& v : f.limit_violations)  // only auto_tiles, at loop counts 1 and 2
      EXPECT_EQ(v.find("auto_tiles"), 0u) << v;
  }
  const KernelSpec wide_a = spec("matmul", {4096, 1024, 1024}, {256, 128, 64}, DType::kFp16);
  EXPECT_EQ(rule_figures(wide_a, hw).limit_violations,
            std::vector<std::string>{"largest operand tile = 32768 > limits.max_tile_elements = "
                                     "16384"});
  const KernelSpec wide_b = spec("matmul", {4096, 1024, 1024}, {16, 128, 256}, DType::kFp16);
  EXPECT_EQ(rule_figures(wide_b, hw).prod_tile, 32768);
  // A vector tile still counts prod(tile).
  EXPECT_EQ(rule_figures(spec("add", {4096, 4096}, {2, 16384}), hw).limit_violations.at(0),
            "prod(tile) = 32768 > limits.max_tile_elements = 16384");
}

ErrorKind lower_kind(const KernelSpec& s) {
  try {
    lower_kernel(s, default_hw());
  } catch (const Error& e) {
    return e.kind();
  }
  ADD_FAILURE() << s.op << " " << format_dims(s.tile) << " lowered";
  return ErrorKind::kInput;
}

// Each rejection carries its class where it is thrown (a sweep files rejections by kind).
TEST(Kernels, BlockRangesTileTheWorkExactlyEvenForHugeCounts) {
  // 10 units over 4 blocks: 2, 3, 2, 3 (floor(n*b/G) boundaries), contiguous and complete.
  int64_t next = 0;
  for (int64_t b = 0; b < 4; ++b) {
    const BlockRange r = block_range(10, 4, b);
    EXPECT_EQ(r.begin, next);
    next = r.end;
  }
  EXPECT_EQ(next, 10);
  // units * b would overflow int64 here; the range must still be exact.
  const int64_t units = int64_t{1} << 61, grid = 1 << 20;
  const BlockRange last = block_range(units, grid, grid - 1);
  EXPECT_EQ(last.end, units);
  EXPECT_EQ(last.begin, units - units / grid);
}

TEST(Kernels, RejectionsCarryTheirKind) {
  EXPECT_EQ(lower_kind(spec("add", {16, 65536}, {1, 65536})), ErrorKind::kCapacity);  // UB
  EXPECT_EQ(lower_kind(spec("matmul", {512, 512, 512}, {256, 256, 16}, DType::kFp16)),
            ErrorKind::kCapacity);  // L0A: 256 x 256 x 2 B > 64 KiB
  EXPECT_EQ(lower_kind(spec("add", {16, 64}, {1, 12})), ErrorKind::kAlignment);
  EXPECT_EQ(lower_kind(spec("add", {16, 64}, {64})), ErrorKind::kInput);  // rank mismatch
  KernelSpec loops = spec("add", {4, 64}, {1, 64});
  loops.loop_count = 8;
  EXPECT_EQ(lower_kind(loops), ErrorKind::kLimits);
  KernelSpec reducing = spec("softmax", {4, 64}, {1, 64});
  reducing.dims = {1};
  reducing.partition = PartitionStyle::kAscendC;
  EXPECT_EQ(lower_kind(reducing), ErrorKind::kLimits);
  KernelSpec groups = spec("groupnorm", {2, 10, 4, 64}, {1, 2, 2, 64});
  groups.params["groups"] = 3;
  EXPECT_EQ(lower_kind(groups), ErrorKind::kParams);
  KernelSpec phase2 = spec("mse", {128, 64}, {4, 64});
  phase2.params["phase2_tile"] = {12};
  EXPECT_EQ(lower_kind(phase2), ErrorKind::kAlignment);
  try {
    lower_kernel(phase2, default_hw());
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "mse: params.phase2_tile (12) is misaligned: last dim 12 x 4 B = 48 B is not a "
              "multiple of 32 B (use a multiple of 8 elements)");
  }
  Hardware wide = default_hw();  // the alignment comes from the hardware, not the kernel
  wide.ub.align_bytes = 64;
  phase2.params["phase2_tile"] = {8};
  EXPECT_THROW(lower_kernel(phase2, wide), Error);
  EXPECT_NO_THROW(lower_kernel(phase2, default_hw()));
  EXPECT_EQ(lower_kind(spec("softmaxx", {4, 64}, {1, 64})), ErrorKind::kInput);
  try {
    kernel_spec_from_json(
        nlohmann::json::parse(
            R"({"op": "add", "shape": [2, 2, 2, 2, 2, 8], "tile": [1, 1, 1, 1, 1, 8]})"),
        "r.json", {});
    ADD_FAILURE() << "rank 6 loaded";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "r.json: shape: at most 5 dims are supported");
    EXPECT_EQ(e.kind(), ErrorKind::kLimits);
  }
}

// kernel_spec_from_json: each rejection names the file and the key path.
TEST(Kernels, KernelSpecRejectionsNameFileAndKey) {
  auto error = [](const std::string& extra) {
    try {
      kernel_spec_from_json(
          nlohmann::json::parse(R"({"op": "add", "shape": [16, 64], "tile": [1, 64])" + extra +
                                "}"),
          "r.json", {"hardware"});
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(error(R"(, "partition": {"cores": 2})"),
            "r.json: partition.style: missing (allowed: pypto, ascendc, spmd)");
  EXPECT_EQ(error(R"(, "partition": "simd")"),
            "r.json: partition: unknown style 'simd' (allowed: pypto, ascendc, spmd)");
  EXPECT_EQ(error(R"(, "partition": "spmd")"),
            "r.json: partition: the spmd style needs its grid: {\"style\": \"spmd\", \"grid\": "
            "G}");
  EXPECT_EQ(
      error(R"(, "partition": {"style": "spmd"})"),
      "r.json: partition.grid: missing (the number of blocks the spmd launch starts, >= 1; it may "
      "be omitted when partition.block gives each block's region)");
  EXPECT_EQ(error(R"(, "partition": {"style": "ascendc", "grid": 4})"),
            "r.json: partition.grid: applies to the spmd style only (style is 'ascendc')");
  EXPECT_EQ(
      error(R"(, "partition": {"style": "spmd", "grid": 4, "cores": 4})"),
      "r.json: partition.cores: applies to the ascendc style; an spmd launch states its grid");
  EXPECT_EQ(error(R"(, "partition": {"style": "spmd", "grid": 40})"), "");
  // Block regions: [16, 64] cut by [5, 64] is 4 regions; the grid defaults to them.
  EXPECT_EQ(error(R"(, "partition": {"style": "spmd", "block": [5, 64]})"), "");
  // A fifth block owns no region: it launches and returns, as on a board.
  EXPECT_EQ(error(R"(, "partition": {"style": "spmd", "grid": 5, "block": [5, 64]})"), "");
  EXPECT_EQ(error(R"(, "partition": {"style": "spmd", "block": [64]})"),
            "r.json: partition.block: block (64) has rank 1 but shape (16, 64) has rank 2 (one "
            "region extent per dim)");
  EXPECT_EQ(error(R"(, "params": {"broadcast": [16]})"),
            "r.json: params.broadcast: (16) does not broadcast to shape (16, 64) (allowed: numpy "
            "rules, right-aligned, each dim 1 or the shape's, e.g. (64), (1, 64) or (16, 1))");
  EXPECT_EQ(error(R"(, "params": {"broadcast": [1, 64]})"), "");
  EXPECT_EQ(error(R"(, "params": {"broadcast": [64]})"), "");  // right-aligned: a row
  EXPECT_EQ(error(R"(, "partition": {"style": "pypto", "block": [5, 64]})"),
            "r.json: partition.block: applies to the spmd style only (style is 'pypto')");
  EXPECT_EQ(error(R"(, "loop_axis": 2)"), "r.json: loop_axis: out of range: 2 (allowed 0..1)");
  EXPECT_EQ(error(R"(, "buffer_count": 9)"),
            "r.json: buffer_count: out of range: 9 (allowed 1..8)");
  EXPECT_EQ(error(R"(, "dtype": "fp8")"),
            "r.json: dtype: unknown dtype 'fp8' (allowed: fp32, fp16, bf16, int32)");
  // The dtypes are the op record's (kernels/ops/op_table.cpp): add takes the float types only.
  EXPECT_EQ(error(R"(, "dtype": "int8")"),
            "r.json: dtype: add does not take int8 (allowed: fp32, fp16, bf16, int32)");
  EXPECT_EQ(error(R"(, "tiel": 1)"),
            "r.json: tiel: unknown key (allowed: buffer_count, dim, dtype, loop_axis, loop_count, "
            "op, params, partition, shape, tile, hardware)");
}

// spmd block regions, the Triton amin reference: [4194304] fp32 cut into 16 regions of 262144,
// each walked in 16 sub-tiles of 16384 (one 64 KiB burst each). The regions split the reduced
// dim, so each block's partial min lands by one atomic 4 B write.
TEST(Kernels, SpmdBlockRegionsSplitTheReducedDim) {
  KernelSpec s = spmd("amin", {4194304}, {16384}, {0}, 16);
  s.block = {262144};
  const LoweredKernel k = lower_kernel(s, default_hw());
  ASSERT_EQ(k.graph.tasks.size(), 16u);
  for (const auto& t : k.graph.tasks) {
    const auto& steps = k.graph.kinds[static_cast<size_t>(t.kind)].steps;
    int64_t subtiles = 0;  // 16 sub-tile steps (equal ones counted by repeat), then the fold
    for (size_t i = 0; i + 1 < steps.size(); ++i) {
      ASSERT_EQ(steps[i].loads.size(), 1u);
      EXPECT_EQ(steps[i].loads[0].bursts, 1);
      EXPECT_EQ(steps[i].loads[0].burst_bytes, 16384 * 4);
      subtiles += steps[i].repeat;
    }
    EXPECT_EQ(subtiles, 16);
    EXPECT_TRUE(steps.back().accumulates);
    EXPECT_EQ(steps.back().stores.at(0).bytes(), 4);
  }
  const Totals t = totals(k);
  EXPECT_EQ(t.read, 4194304.0 * 4);
  EXPECT_EQ(t.write, 16.0 * 4);
  // UB: the input sub-tile double-buffered and the 4 B output (32 B aligned, two copies), which
  // holds the running minimum.
  EXPECT_EQ(k.diag.ub_bytes, 2 * 65536 + 2 * 32);
  // Fewer blocks than regions: blocks own runs of regions (5, 5, 6), one in-UB accumulation
  // each, since neighbouring regions of one row merge.
  s.grid = 3;
  const LoweredKernel k3 = lower_kernel(s, default_hw());
  ASSERT_EQ(k3.graph.tasks.size(), 3u);
  int64_t first = 0;
  for (const auto& st : k3.graph.kinds[static_cast<size_t>(k3.graph.tasks[0].kind)].steps)
    first += st.loads.empty() ? 0 : st.repeat;
  EXPECT_EQ(first, 5 * 16);
  EXPECT_EQ(totals(k3).write, 3.0 * 4);
  s.grid = 0;
  EXPECT_EQ(lower_error(s), "amin: partition.grid 0: an spmd launch starts at least 1 block");
  s.grid = 17;
  EXPECT_EQ(lower_kernel(s, default_hw()).graph.tasks.size(), 17u);
}

// The second Triton reference: [2048, 262144] fp32, block [8, 262144] (whole rows), sub-tile
// [8, 2048]: 256 blocks, each 128 sub-tiles of 8 bursts x 8 KiB, and one 32 B output store.
TEST(Kernels, SpmdBlockRegionsOfWholeRows) {
  KernelSpec s = spmd("amin", {2048, 262144}, {8, 2048}, {1}, 256);
  s.block = {8, 262144};
  const LoweredKernel k = lower_kernel(s, default_hw());
  ASSERT_EQ(k.graph.tasks.size(), 256u);
  const auto& steps = k.graph.kinds[static_cast<size_t>(k.graph.tasks[0].kind)].steps;
  int64_t loads = 0;
  for (const auto& st : steps) {
    EXPECT_FALSE(st.accumulates);
    for (const auto& l : st.loads) {
      EXPECT_EQ(l.bursts, 8);
      EXPECT_EQ(l.burst_bytes, 8192);
      loads += st.repeat;
    }
  }
  EXPECT_EQ(loads, 128);
  const Totals t = totals(k);
  EXPECT_EQ(t.read, 2048.0 * 262144 * 4);
  EXPECT_EQ(t.write, 2048.0 * 4);
  // Block regions cutting the rows softmax reduces: (1, 8192) regions, 2 per row, 32 blocks of
  // 2 sub-tiles. As with spmd_rows "split" (SpmdSoftmaxSplitRowsMergeInASecondLaunch), each
  // region leaves its (max, sum of exp) (8 B) in GM in launch 0; in launch 1 it reads both of its
  // row's slots (16 B), re-reads its 8192 elements and writes them.
  KernelSpec sm = spmd("softmax", {16, 16384}, {1, 4096}, {1}, 32);
  sm.block = {1, 8192};
  const LoweredKernel ks = lower_kernel(sm, default_hw());
  const auto launches = by_launch(ks);
  ASSERT_EQ(launches.size(), 2u);
  EXPECT_EQ(launches[0].size(), 32u);
  EXPECT_EQ(launches[1].size(), 32u);
  const Totals ts = totals(ks);
  EXPECT_EQ(ts.read, 2 * 16.0 * 16384 * 4 + 32 * 16);
  EXPECT_EQ(ts.write, 16.0 * 16384 * 4 + 32 * 8);
  // The regions decide which rows split: params.spmd_rows is refused with a block.
  KernelSpec whole = spmd("amin", {2048, 262144}, {8, 2048}, {1}, 256);
  whole.block = {8, 262144};
  whole.params["spmd_rows"] = "whole";
  EXPECT_EQ(lower_error(whole),
            "amin: params.spmd_rows \"whole\": with partition.block the block regions decide "
            "which rows split (leave it out)");
}

// Elementwise over block regions: [100, 1000] cut by [64, 600] into 2 x 2 ragged regions, each
// walked in [8, 256] sub-tiles clipped at its edge (8 x 3 + 5 x 3 + 8 x 2 + 5 x 2 = 65 sub-tiles,
// columns 256, 256, 88 | 256, 144); every element is read twice and written once.
TEST(Kernels, SpmdElementwiseBlockRegions) {
  KernelSpec s = spmd("add", {100, 1000}, {8, 256}, {}, 4);
  s.block = {64, 600};
  const LoweredKernel k = lower_kernel(s, default_hw());
  ASSERT_EQ(k.graph.tasks.size(), 4u);
  int64_t subtiles = 0;
  for (const auto& t : k.graph.tasks)
    for (const auto& st : k.graph.kinds[static_cast<size_t>(t.kind)].steps) subtiles += st.repeat;
  EXPECT_EQ(subtiles, 8 * 3 + 5 * 3 + 8 * 2 + 5 * 2);
  const Totals t = totals(k);
  EXPECT_EQ(t.read, 2 * 100.0 * 1000 * 4);
  EXPECT_EQ(t.write, 100.0 * 1000 * 4);
  EXPECT_EQ(t.vec_elems, 100.0 * 1000);
}

// Unaligned spmd sub-tiles are padded copies (DataCopyPad, a Triton masked load) that cost the
// GM granules their rows touch and their UB padding. Hand counts of the first tile:
//  - (4, 1639) fp32 of (4, 3278), which the pypto partition rejects: 4 bursts of 6556 B at GM
//    offsets 0, 13112, 26224, 39336 (mod 512: 0, 312, 112, 424), so rows 1-3 straddle one extra
//    512 B granule each; each UB row rounds up to 6560 B (4 pad bytes);
//  - a Triton block of 412 B rows, (16, 103) fp32 of (16, 206): row r starts at 824 r mod 512 and
//    straddles a second granule when that start is above 100: rows 1-4, 6-9 and 11-14 (12 extra
//    granules); each UB row rounds up to 416 B.
TEST(Kernels, SpmdUnalignedSubTileIsAPaddedCopy) {
  const Hardware& hw = default_hw();
  struct Case {
    Dims shape, tile;
    int64_t rows, row_bytes, extra;
  };
  for (const Case& c :
       {Case{{4, 3278}, {4, 1639}, 4, 6556, 3}, Case{{16, 206}, {16, 103}, 16, 412, 12}}) {
    SCOPED_TRACE(format_dims(c.tile));
    const LoweredKernel k = lower_kernel(spmd("copy_in", c.shape, c.tile, {}, 2), hw);
    const DmaOp& op = k.graph.kinds.at(0).steps.at(0).loads.at(0);
    EXPECT_EQ(op.bursts, c.rows);
    EXPECT_EQ(op.burst_bytes, c.row_bytes);
    EXPECT_EQ(op.extra_granules, c.extra);
    EXPECT_TRUE(op.padded);
    EXPECT_EQ(dma_pad_bytes(op, hw), c.rows * 4);
    EXPECT_DOUBLE_EQ(dma_gm_bytes(op, hw),
                     static_cast<double>(c.rows * c.row_bytes + c.extra * 512));
    EXPECT_DOUBLE_EQ(dma_occupancy_cycles(op, hw),
                     hw.dma.read.issue_cycles +
                         static_cast<double>(c.rows) * hw.dma.read.burst_cycles +
                         static_cast<double>(c.rows * c.row_bytes + c.extra * 512 + c.rows * 4) /
                             hw.dma.read.peak_bytes_per_cycle);
  }
  // The first case's UB: padded rows, double-buffered.
  EXPECT_EQ(lower_kernel(spmd("copy_in", {4, 3278}, {4, 1639}, {}, 2), hw).diag.ub_bytes,
            2 * 4 * 6560);
  // A block region (1639) of fp32 over (65536): 40 regions, the last 1615 wide (6460 B).
  KernelSpec amin = spmd("amin", {65536}, {1639}, {0}, 40);
  amin.block = {1639};
  const LoweredKernel a = lower_kernel(amin, hw);
  ASSERT_EQ(a.graph.tasks.size(), 40u);
  EXPECT_EQ(totals(a).read, 65536.0 * 4);
  const auto& last = a.graph.kinds[static_cast<size_t>(a.graph.tasks.back().kind)].steps[0];
  EXPECT_EQ(last.loads.at(0).burst_bytes, (65536 - 39 * 1639) * 4);
  EXPECT_TRUE(last.loads.at(0).padded);
  // The pypto partition keeps rejecting the tile.
  EXPECT_EQ(lower_error(spec("copy_in", {4, 1639}, {4, 1639})),
            "copy_in: tile (4, 1639) is misaligned: last dim 1639 x 4 B = 6556 B is not a multiple "
            "of 32 B (use a multiple of 8 elements)");
}

// HARDWARE.md's unaligned read: fp16 (12288, 12287) in (64, 1024) tiles on 48 blocks moves
// 1.249x the aligned width's GM bytes (every row starts unaligned, so most bursts straddle one
// more 512 B granule), against a measured 1 / (1 - 0.216) = 1.276x slowdown.
TEST(Kernels, UnalignedRowWidthCostsExtraGranules) {
  auto gm = [](int64_t n) {
    KernelSpec s = spmd("copy_in", {12288, n}, {64, 1024}, {}, 48);
    s.dtype = DType::kFp16;
    s.block = {256, n};
    double bytes = 0;
    const LoweredKernel k = lower_kernel(s, default_hw());
    for (const auto& t : k.graph.tasks)
      for (const auto& st : k.graph.kinds[static_cast<size_t>(t.kind)].steps)
        for (const auto& l : st.loads)
          bytes += static_cast<double>(st.repeat) * dma_gm_bytes(l, default_hw());
    return bytes;
  };
  EXPECT_NEAR(gm(12287) / gm(12288), 1.249, 0.001);
}

// Broadcast operands, the Triton-Ascend div reference: (131072, 16) fp16 / (131072, 1). A (512,
// 16) tile reads x as one 16 KiB burst and its 512 divisors as one 1 KiB burst; Brcb spreads them
// to 512 UB blocks of 16 fp16, then one div runs over the tile (32 B rows pack into repeats).
TEST(Kernels, BroadcastColumnHandCount) {
  const Hardware& hw = default_hw();
  KernelSpec s = spmd("div", {131072, 16}, {512, 16}, {}, 48);
  s.dtype = DType::kFp16;
  s.params["broadcast"] = {131072, 1};
  const LoweredKernel k = lower_kernel(s, hw);
  const TileStep& st = k.graph.kinds.at(0).steps.at(0);
  ASSERT_EQ(st.loads.size(), 2u);
  EXPECT_EQ(st.loads[0].bursts, 1);
  EXPECT_EQ(st.loads[0].burst_bytes, 512 * 16 * 2);
  EXPECT_EQ(st.loads[1].bursts, 1);
  EXPECT_EQ(st.loads[1].burst_bytes, 512 * 2);
  ASSERT_EQ(st.vec.size(), 2u);
  EXPECT_EQ(st.vec[0].cls, VecClass::kSimple);  // Brcb
  EXPECT_EQ(st.vec[0].cols, 512 * 16);
  EXPECT_EQ(st.vec[1].cls, VecClass::kDiv);  // div
  EXPECT_EQ(st.vec[1].cols, 512 * 16);
  const Totals t = totals(k);
  EXPECT_EQ(t.read, 131072.0 * 16 * 2 + 131072.0 * 2);
  EXPECT_EQ(t.write, 131072.0 * 16 * 2);
  // UB: x and z (16 KiB each) and the 1 KiB column double-buffered, the Brcb blocks once.
  EXPECT_EQ(k.diag.ub_bytes, 2 * (16384 + 1024 + 16384) + 512 * 32);
  // The akg sub reference: (2048, 131072) fp16 - (2048, 1), 40 programs of 52 rows walked in
  // (1, 16384) sub-tiles; each re-reads its row's scalar (a padded 2 B copy).
  KernelSpec sub = spmd("sub", {2048, 131072}, {1, 16384}, {}, 40);
  sub.dtype = DType::kFp16;
  sub.block = {52, 131072};
  sub.params["broadcast"] = {2048, 1};
  const LoweredKernel ks = lower_kernel(sub, hw);
  const Totals ts = totals(ks);
  EXPECT_EQ(ts.read, 2048.0 * 131072 * 2 + 2048.0 * 8 * 2);
  const DmaOp& y = ks.graph.kinds.at(0).steps.at(0).loads.at(1);
  EXPECT_EQ(y.burst_bytes, 2);
  EXPECT_EQ(dma_pad_bytes(y, hw), 30);
}

// A row operand (1, 4096) fp32 under the pypto partition: each (8, 1024) tile reads one 4 KiB
// row and runs the add once per tile row (rows longer than a repeat), reusing the row.
TEST(Kernels, BroadcastRowHandCount) {
  KernelSpec s = spec("add", {64, 4096}, {8, 1024});
  s.params["broadcast"] = {1, 4096};
  const LoweredKernel k = lower_kernel(s, default_hw());
  ASSERT_EQ(k.graph.tasks.size(), 8u * 4);
  const TileStep& st = k.graph.kinds.at(0).steps.at(0);
  EXPECT_EQ(st.loads.at(1).bursts, 1);
  EXPECT_EQ(st.loads.at(1).burst_bytes, 4096);
  ASSERT_EQ(st.vec.size(), 8u);
  for (const auto& v : st.vec) EXPECT_EQ(v.cols, 1024);
  EXPECT_EQ(totals(k).read, 64.0 * 4096 * 4 + 32 * 4096.0);
  EXPECT_EQ(k.diag.ub_bytes, 2 * (32768 + 4096 + 32768));
  KernelSpec bad = s;
  bad.params["broadcast"] = {64, 2};
  EXPECT_EQ(lower_error(bad),
            "add: params.broadcast: (64, 2) does not broadcast to shape (64, 4096) (allowed: numpy "
            "rules, right-aligned, each dim 1 or the shape's, e.g. (4096), (1, 4096) or (64, 1))");
  // The row as numpy writes it, (4096), lowers as (1, 4096) does.
  KernelSpec row = s;
  row.params["broadcast"] = {4096};
  const LoweredKernel r = lower_kernel(row, default_hw());
  EXPECT_EQ(totals(r).read, totals(k).read);
  EXPECT_EQ(r.diag.ub_bytes, k.diag.ub_bytes);
}

// Kinds share an id exactly when their work is the same: a label is not work; a vector op's bank
// conflict, the compiler's multibuffering and a step's repeat are. append_step folds a step into
// the last one when their work is the same.
TEST(KindCache, KindsShareAnIdExactlyWhenTheirWorkIsTheSame) {
  TaskKind a;
  a.label = "a";
  TileStep st;
  st.loads.push_back(DmaOp{DmaDir::kRead, 16, 512});
  st.vec.push_back(VecOp{VecClass::kSimple, DType::kFp32, 1, 16, 128});
  st.stores.push_back(DmaOp{DmaDir::kWrite, 16, 512});
  a.steps = {st};
  a.buffers = {{"x", 8192, BufferRole::kInput, MemSpace::kUb}};
  TaskGraph g;
  KindCache cache;
  const int id = cache.get(g, a);
  TaskKind renamed = a;
  renamed.label = "b";
  renamed.buffers[0].name = "y";
  EXPECT_EQ(cache.get(g, renamed), id);
  TaskKind clear = a;
  clear.steps[0].vec[0].bank_conflict = false;
  TaskKind compiled = a;
  compiled.compiler_multibuffer = true;
  TaskKind twice = a;
  append_step(twice, st);
  ASSERT_EQ(twice.steps.size(), 1u);
  EXPECT_EQ(twice.steps[0].repeat, 2);
  const int c = cache.get(g, clear), m = cache.get(g, compiled), t = cache.get(g, twice);
  EXPECT_NE(c, id);
  EXPECT_NE(m, id);
  EXPECT_NE(t, id);
  EXPECT_EQ(g.kinds.size(), 4u);
  EXPECT_EQ(cache.get(g, a), id);  // after others: found by its work, not as the last asked
  EXPECT_TRUE(same_kind_work(a, renamed));
  EXPECT_FALSE(same_step_work(st, clear.steps[0]));
}

}  // namespace
}  // namespace tilesim
