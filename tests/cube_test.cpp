// The cube core's pipes and the cube kernels: closed forms for MTE2 (GM -> L1 ND2NZ), MTE1,
// the mmad and the fixpipe; the L0 pipeline's depth; L1 residency, split K, B layouts; the L2
// model's stack distance and co-readers; PyPTO's cube merge cap.
#include <gtest/gtest.h>

#include "kernels/cube/matmul_plan.hpp"
#include "kernels/families/families.hpp"
#include "kernels/functional/functional.hpp"
#include "kernels/lower/task_packing.hpp"
#include "kernels/lowering.hpp"
#include "kernels/tiling/tile_rules.hpp"
#include "model/cube_cost.hpp"
#include "model/dma_cost.hpp"
#include "model/task_cost.hpp"
#include "sim/l2_residency.hpp"
#include "sim/metrics.hpp"
#include "sim/simulator.hpp"
#include "test_support.hpp"

namespace tilesim {
namespace {

using test::default_hw;

KernelSpec matmul(Dims shape, Dims tile, int64_t grid = 0) {
  KernelSpec s;
  s.op = "matmul";
  s.shape = std::move(shape);
  s.tile = std::move(tile);
  s.dtype = DType::kFp16;
  if (grid > 0) {
    s.partition = PartitionStyle::kSpmd;
    s.grid = grid;
  }
  return s;
}

// The matmul family's tile program run tile by tile with Eigen (its split-K slices added): C.
Eigen::ArrayXd family_matmul(const KernelSpec& s, const NdArray& a, const NdArray& b) {
  const Program p = find_family("matmul")->program(s, default_hw());
  return execute_program_tiled(p, {a, b}).tensors[2].data;
}

// The spmd plan of an spmd matmul spec as its stage builds it (kernels/lower/program/
// matmul_stage.cpp, spmd_plan): catlass's defaults where the spec gives no param.
SpmdMatmulPlan spmd_plan(const KernelSpec& s) {
  SpmdMatmulPlan p;
  p.m = s.shape[0];
  p.k = s.shape[1];
  p.n = s.shape[2];
  p.m1 = s.tile[0];
  p.k1 = s.tile[1];
  p.n1 = s.tile[2];
  const auto sw = param_ints(s, "swizzle");
  p.swizzle_offset = sw[0];
  p.swizzle_direction = sw[1];
  p.tiles_m = ceil_div(p.m, p.m1);
  p.tiles_n = ceil_div(p.n, p.n1);
  p.grid = s.grid;
  if (has_param(s, "l2_block")) {
    p.l2_block_m = param_ints(s, "l2_block")[0];
    p.l2_block_n = param_ints(s, "l2_block")[1];
  }
  p.split_k = param_int(s, "split_k");
  p.contiguous = param_string(s, "assignment") == "contiguous";
  return p;
}

// How much of K the blocks' work covers of each C element: 1 everywhere when each C tile is
// handed out once and its slices cut K exactly.
Eigen::ArrayXd k_coverage(const SpmdMatmulPlan& p) {
  Eigen::ArrayXd c = Eigen::ArrayXd::Zero(p.m * p.n);
  for (const auto& list : spmd_matmul_work(p))
    for (const MatmulWork& w : list)
      for (int64_t i = w.m0; i < w.m0 + w.mext; ++i)
        c.segment(i * p.n + w.n0, w.next) += static_cast<double>(w.kext) / static_cast<double>(p.k);
  return c;
}

double read_bytes(const LoweredKernel& k) {
  double b = 0;
  for (const auto& t : k.graph.tasks)
    for (const auto& st : k.graph.kinds[static_cast<size_t>(t.kind)].steps)
      for (const auto& l : st.loads) b += static_cast<double>(st.repeat * l.bytes());
  return b;
}

Metrics run(const KernelSpec& s, const Hardware& hw) {
  const LoweredKernel k = lower_kernel(s, hw);
  return compute_metrics(k.graph, simulate(k.graph, hw), hw);
}

// mmad: ceil(m/16) ceil(k/16) ceil(n/16) fractals at the dtype's rate, + the block overhead.
TEST(CubePipes, MmadByFractalAndDtype) {
  const Hardware hw = default_hw();
  const double over = hw.cube.block_overhead_cycles;
  EXPECT_DOUBLE_EQ(cube_cycles({DType::kFp16, 128, 64, 256}, hw), 8 * 4 * 16 + over);
  EXPECT_DOUBLE_EQ(cube_cycles({DType::kBf16, 128, 64, 256}, hw), 8 * 4 * 16 + over);
  EXPECT_DOUBLE_EQ(cube_cycles({DType::kInt8, 128, 64, 256}, hw), 512 * 0.5 + over);
  EXPECT_DOUBLE_EQ(cube_cycles({DType::kFp32, 128, 64, 256}, hw), 512 * 4.0 + over);
  EXPECT_DOUBLE_EQ(cube_cycles({DType::kFp16, 17, 16, 16}, hw), 2 + over);  // a ragged m
}

// MTE1: per operand loaded, issue + bytes / its L0 rate; a reused L0A tile costs nothing.
TEST(CubePipes, Mte1LoadsByOperandRate) {
  const Hardware hw = default_hw();
  const double i = hw.cube.mte1_issue_cycles;
  CubeOp op{DType::kFp16, 128, 64, 256, 128 * 64 * 2, 64 * 256 * 2};
  EXPECT_DOUBLE_EQ(mte1_cycles(op, hw), i + 16384 / 256.0 + i + 32768 / 128.0);
  op.l0a_bytes = 0;
  EXPECT_DOUBLE_EQ(mte1_cycles(op, hw), i + 32768 / 128.0);
}

// The L0 pipeline: with two L0 buffers n equal tiles cost n max(t1, tm) in a running task plus
// min(t1, tm) once (the fill); with one buffer n (t1 + tm).
TEST(CubePipes, L0PipelineOverlapsOnlyAsDeepAsItsBuffers) {
  const Hardware hw = default_hw();
  const CubeOp op{DType::kFp16, 128, 64, 256, 128 * 64 * 2, 64 * 256 * 2};
  const double t1 = mte1_cycles(op, hw), tm = cube_cycles(op, hw);
  const std::vector<CubeOp> four(4, op);
  const CubeStage two = cube_stage(four, 2, hw);
  EXPECT_NEAR(two.cycles, 4 * std::max(t1, tm), 1e-9);
  EXPECT_NEAR(two.fill, std::min(t1, tm), 1e-9);
  EXPECT_NEAR(two.mte1_busy, 4 * t1, 1e-9);
  EXPECT_NEAR(two.mmad_busy, 4 * tm, 1e-9);
  const CubeStage one = cube_stage(four, 1, hw);
  EXPECT_NEAR(one.cycles, 4 * (t1 + tm), 1e-9);
  EXPECT_EQ(one.fill, 0);
}

// MTE2 GM -> L1 ND2NZ: issue + max(rows x dma.l1.nd2nz_row_cycles, bytes / dma.l1.nd2nz), the
// conversion and the transfer of strided rows as two stages of one pipeline; a plain copy (zN
// column blocks): issue + bursts x burst + bytes / dma.l1.peak, its long bursts at the per-core
// rate; the fixpipe: issue + rows x burst + max(L0C bytes / its L0C rate, out bytes / its out
// rate).
TEST(CubePipes, Nd2nzAndFixpipeClosedForms) {
  const Hardware hw = default_hw();
  DmaOp nd;
  nd.path = DmaPath::kL1Nd2nz;
  nd.bursts = 64;
  nd.burst_bytes = 128;  // 128 B rows: the conversion paces the copy
  const double rows = 64 * hw.dma.l1.nd2nz_row_cycles;
  ASSERT_GT(rows, 8192 / hw.dma.l1.nd2nz_bytes_per_cycle);
  EXPECT_DOUBLE_EQ(dma_occupancy_cycles(nd, hw), hw.dma.read.issue_cycles + rows);
  nd.burst_bytes = 1024;  // 1 KiB rows: the bytes do, the rows cost nothing more
  ASSERT_LT(rows, 65536 / hw.dma.l1.nd2nz_bytes_per_cycle);
  EXPECT_DOUBLE_EQ(dma_occupancy_cycles(nd, hw),
                   hw.dma.read.issue_cycles + 65536 / hw.dma.l1.nd2nz_bytes_per_cycle);
  DmaOp zn;  // the same 64 KiB as zN: 16 column blocks of 128 rows x 32 B
  zn.path = DmaPath::kL1;
  zn.bursts = 16;
  zn.burst_bytes = 128 * 32;
  EXPECT_DOUBLE_EQ(dma_occupancy_cycles(zn, hw), hw.dma.read.issue_cycles +
                                                     16 * hw.dma.read.burst_cycles +
                                                     65536 / hw.dma.l1.peak_bytes_per_cycle);
  // On the 910B1 the plain copy streams at the vendor's 87 B/cycle, the ND2NZ rows at the fitted
  // rate below it.
  EXPECT_DOUBLE_EQ(hw.dma.l1.peak_bytes_per_cycle, 87.0);
  EXPECT_LT(hw.dma.l1.nd2nz_bytes_per_cycle, hw.dma.l1.peak_bytes_per_cycle);
  DmaOp fix;
  fix.dir = DmaDir::kWrite;
  fix.path = DmaPath::kFixpipe;
  fix.bursts = 128;
  fix.burst_bytes = 256 * 2;  // fp16 rows out of an fp32 accumulator
  fix.src_bytes = 128 * 256 * 4;
  // The slowest of its stages, no per-row constant: on the 910B1 the GM write (87 B/cycle).
  EXPECT_DOUBLE_EQ(
      dma_occupancy_cycles(fix, hw),
      hw.dma.write.issue_cycles + std::max({131072 / hw.cube.fixpipe_l0c_bytes_per_cycle,
                                            65536 / hw.cube.fixpipe_out_bytes_per_cycle,
                                            65536 / hw.cube.fixpipe_gm_bytes_per_cycle}));
  EXPECT_NEAR(dma_occupancy_cycles(fix, hw) - hw.dma.write.issue_cycles, 65536.0 / 87, 1e-9);
}

// copy_in with params.dest "l1": the calibration's GM -> L1 kernel, one ND2NZ copy per tile on
// the cube cores.
TEST(CubePipes, CopyInToL1RunsOnTheCubeCoresAsNd2nz) {
  KernelSpec s;
  s.op = "copy_in";
  s.shape = {1024, 1024};
  s.tile = {64, 64};
  s.dtype = DType::kFp16;
  s.partition = PartitionStyle::kAscendC;
  s.cores = 4;
  s.params["dest"] = "l1";
  const LoweredKernel k = lower_kernel(s, default_hw());
  ASSERT_EQ(k.graph.tasks.size(), 4u);
  const TaskKind& kind = k.graph.kinds[static_cast<size_t>(k.graph.tasks[0].kind)];
  EXPECT_EQ(kind.core, CoreType::kAic);
  EXPECT_EQ(kind.steps[0].loads[0].path, DmaPath::kL1Nd2nz);
  EXPECT_EQ(kind.steps[0].loads[0].bursts, 64);
  EXPECT_EQ(kind.buffers[0].space, MemSpace::kL1);
  s.cores = 30;
  EXPECT_THROW(lower_kernel(s, default_hw()), Error);  // 24 AIC
}

// Tiny L0 tiles make MTE1 the bottleneck: each 16^3 mmad is one fractal, but its two loads pay
// their issue costs.
TEST(CubeKernels, TinyL0TilesAreMte1Bound) {
  KernelSpec s = matmul({128, 256, 256}, {128, 256, 256}, 1);
  s.params["l0_tile"] = {16, 16, 16};
  const Hardware hw = default_hw();
  const LoweredKernel k = lower_kernel(s, hw);
  const TaskCost c = cost_task_kind(k.graph.kinds[0], hw);
  EXPECT_GT(c.mte1_busy, 1.3 * c.cube_busy);
  // The run is at least its MTE1 time, and the mmads alone would take a fraction of it.
  EXPECT_GE(c.cycles, c.mte1_busy);
  KernelSpec big = s;
  big.params["l0_tile"] = {128, 256, 64};
  const TaskCost b = cost_task_kind(lower_kernel(big, hw).graph.kinds[0], hw);
  EXPECT_LT(b.mte1_busy, b.cube_busy);
  EXPECT_LT(b.cycles, c.cycles);
}

// A resident in L1 across the C tiles that share it: four tiles of one tile row read A once.
// A tile [32, 256] is twice a B tile [256, 16], so the operand bytes halve: 4 (a + b) = 12 b
// without, a + 4 b = 6 b with.
TEST(CubeKernels, L1ResidencyHalvesTheOperandTraffic) {
  KernelSpec s = matmul({32, 256, 64}, {32, 256, 16}, 1);
  s.params["l0_tile"] = {32, 16, 64};
  const double without = read_bytes(lower_kernel(s, default_hw()));
  s.params["l1_resident"] = "a";
  const LoweredKernel k = lower_kernel(s, default_hw());
  EXPECT_EQ(without, 4.0 * (32 * 256 + 256 * 16) * 2);
  EXPECT_EQ(read_bytes(k), without / 2);
  // The panel is held once in L1: A_panel 32 x 256 x 2 B, no rotating A buffer.
  EXPECT_EQ(k.graph.kinds.back().buffers[0].name, "A_panel");
  // pypto: PyPTO's L1 reuse merges the tiles sharing A into one task.
  KernelSpec p = matmul({32, 256, 64}, {32, 256, 16});
  p.params["l1_resident"] = "a";
  p.params["l1_reuse"] = 4;
  p.params["k_l1"] = 256;
  p.max_tasks_per_psg = 0;
  const LoweredKernel pk = lower_kernel(p, default_hw());
  EXPECT_EQ(pk.graph.tasks.size(), 1u);
  EXPECT_EQ(read_bytes(pk), without / 2);
  // A panel that does not fit L1 is a capacity error naming it.
  KernelSpec over = matmul({128, 4096, 64}, {128, 256, 16}, 1);
  over.params["l0_tile"] = {128, 16, 64};
  over.params["l1_resident"] = "a";
  EXPECT_THROW(lower_kernel(over, default_hw()), Error);
}

// An MTE2-bound matmul streaming cold operands from HBM slows when HBM halves; one whose
// operands stay in L2 does not move.
TEST(CubeKernels, HalvingHbmSlowsAnMte2BoundMatmul) {
  Hardware hw = default_hw();
  // 24 tiles, each streaming its own 4 MiB A panel from HBM (B, 2 MiB, is shared in L2).
  KernelSpec stream = matmul({24 * 256, 8192, 128}, {256, 256, 128}, 24);
  stream.params["l0_tile"] = {256, 128, 64};
  const double full = run(stream, hw).kernel_time_us;
  Hardware half = hw;
  half.gm.hbm_bandwidth_gbps /= 2;
  half.gm.hbm_write_bandwidth_gbps /= 2;
  const double slow = run(stream, half).kernel_time_us;
  EXPECT_GT(slow / full, 1.1);
  KernelSpec warm = matmul({512, 512, 512}, {128, 256, 256}, 8);
  const LoweredKernel k = lower_kernel(warm, hw);
  SimOptions opt;
  opt.l2_start = L2Start::kWarm;
  const double a = compute_metrics(k.graph, simulate(k.graph, hw, opt), hw).gen_time_us;
  const double b = compute_metrics(k.graph, simulate(k.graph, half, opt), half).gen_time_us;
  EXPECT_NEAR(b / a, 1.0, 0.01);
}

// Split K: each C tile is split_k pieces of work over K slices of whole k1 steps; atomics need
// an fp32 / int32 output; the vector merge is a second launch of AIV tasks. The functional
// proof adds the partials.
TEST(CubeKernels, SplitKSlicesCombineAtomicallyOrByASecondLaunch) {
  EXPECT_EQ(split_k_range(1000, 256, 3, 0), std::make_pair(int64_t{0}, int64_t{256}));
  EXPECT_EQ(split_k_range(1000, 256, 3, 2), std::make_pair(int64_t{512}, int64_t{488}));
  KernelSpec s = matmul({64, 512, 64}, {64, 128, 64}, 4);
  s.params["l0_tile"] = {64, 64, 64};
  s.params["split_k"] = 4;
  EXPECT_THROW(lower_kernel(s, default_hw()), Error);  // fp16 output cannot add atomically
  s.params["out_dtype"] = "fp32";
  const LoweredKernel a = lower_kernel(s, default_hw());
  EXPECT_EQ(a.graph.tasks.size(), 4u);
  EXPECT_TRUE(a.graph.kinds[0].steps.back().stores[0].atomic);
  s.params.erase("out_dtype");
  s.params["split_k_merge"] = "vector";
  const LoweredKernel v = lower_kernel(s, default_hw());
  EXPECT_EQ(v.graph.num_launches(), 2);
  EXPECT_EQ(v.graph.tasks.size(), 5u);
  KernelSpec over = s;
  over.params["split_k"] = 5;  // 512 / 128 = 4 k steps
  try {
    lower_kernel(over, default_hw());
    ADD_FAILURE() << "split_k 5 over 4 k steps lowered";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "matmul: params.split_k 5 exceeds the 4 k steps of 512 (k1 = 128): a slice holds "
              "whole k steps (use a split_k of at most 4)");
  }
  // pypto: the same slices, the merge a task after its slices' cube tasks.
  KernelSpec pp = matmul({64, 512, 64}, {64, 128, 64});
  pp.params["split_k"] = 4;
  pp.params["split_k_merge"] = "vector";
  pp.max_tasks_per_psg = 0;
  const LoweredKernel pv = lower_kernel(pp, default_hw());
  EXPECT_EQ(pv.graph.tasks.size(), 5u);
  EXPECT_EQ(pv.graph.indegree(4), 4);
  const Eigen::ArrayXd got = family_matmul(pp, NdArray{{64, 512}, Eigen::ArrayXd::Ones(64 * 512)},
                                           NdArray{{512, 64}, Eigen::ArrayXd::Ones(512 * 64)});
  EXPECT_DOUBLE_EQ(got.minCoeff(), 512);
  EXPECT_DOUBLE_EQ(got.maxCoeff(), 512);
  // Eigen: the slices sum to A @ B, and the blocks' slices cover each element's K once.
  NdArray A{{64, 512}, Eigen::ArrayXd::Random(64 * 512)},
      B{{512, 64}, Eigen::ArrayXd::Random(512 * 64)};
  using Mat = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
  const Mat want =
      Eigen::Map<const Mat>(A.data.data(), 64, 512) * Eigen::Map<const Mat>(B.data.data(), 512, 64);
  EXPECT_LT((family_matmul(s, A, B) - Eigen::Map<const Eigen::ArrayXd>(want.data(), want.size()))
                .abs()
                .maxCoeff(),
            1e-9);
  EXPECT_LT((k_coverage(spmd_plan(s)) - 1.0).abs().maxCoeff(), 1e-12);
}

// L2 blocks (ragged at both edges) and both assignments hand out every C tile exactly once, and
// a block's contiguous run stays inside it: the blocks' work covers each element once.
TEST(CubeKernels, L2BlocksAndAssignmentsCoverEveryTileOnce) {
  for (const char* assign : {"strided", "contiguous"}) {
    KernelSpec s = matmul({7 * 32, 64, 5 * 32}, {32, 64, 32}, 6);
    s.params["l0_tile"] = {32, 32, 32};
    s.params["l2_block"] = {3, 2};
    s.params["swizzle"] = {2, 1};
    s.params["assignment"] = assign;
    lower_kernel(s, default_hw());
    const SpmdMatmulPlan p = spmd_plan(s);
    EXPECT_LT((k_coverage(p) - 1.0).abs().maxCoeff(), 1e-12) << assign;
    // The first L2 block is the 3 x 2 tiles at the origin: loop indices 0..5.
    for (int64_t i = 0; i < 6; ++i) {
      const MatmulTile t = spmd_matmul_tile(p, i);
      EXPECT_LT(t.m0, 3 * 32);
      EXPECT_LT(t.n0, 2 * 32);
    }
  }
}

// B's layout: row-major B is an ND2NZ copy of k1 rows, column-major of n1 rows, zN a plain copy
// of n1 / 16 contiguous k1 x 32 B blocks. A row stride of 65536 elements or more falls back to a
// copy per row (catlass STRIDE_LIMIT).
TEST(CubeKernels, BLayoutsAndTheStrideLimit) {
  KernelSpec s = matmul({128, 256, 256}, {128, 256, 256}, 1);
  auto b_load = [&](const char* layout) {
    s.params["b_layout"] = layout;
    const LoweredKernel k = lower_kernel(s, default_hw());
    return k.graph.kinds[0].steps[0].loads[1];
  };
  const DmaOp row = b_load("row_major"), col = b_load("column_major"), nz = b_load("nz");
  EXPECT_EQ(row.path, DmaPath::kL1Nd2nz);
  EXPECT_EQ(row.bursts, 256);  // k1 rows of n1 x 2 B
  EXPECT_EQ(col.bursts, 256);  // n1 rows of k1 x 2 B
  EXPECT_EQ(nz.path, DmaPath::kL1);
  EXPECT_EQ(nz.bursts, 16);
  EXPECT_EQ(nz.burst_bytes, 256 * 32);
  KernelSpec wide = matmul({16, 65536, 16}, {16, 256, 16}, 1);
  wide.params["l0_tile"] = {16, 16, 64};
  const LoweredKernel k = lower_kernel(wide, default_hw());
  EXPECT_EQ(k.graph.kinds[0].steps[0].loads.size(), 16u + 1u);  // A: 16 rows one by one; B: one
}

// catlass's ENABLE_SHUFFLE_K: block b walks its K loop from k tile b mod (k tiles), wrapping. With
// 8 k tiles of 256 on 4 blocks, block 2's first A load is k tile 2, its last k tile 1; without,
// every block starts at k tile 0. All four blocks share A's one row panel (m = 16): in step they
// read each of its k tiles together and queue for its lines (l2.same_line_request_ns); shuffled,
// no two read one A tile at once, so the kernel is faster by the queue it no longer pays.
TEST(CubeKernels, ShuffleKStartsEachBlocksKLoopAtItsIndex) {
  KernelSpec s = matmul({16, 2048, 1024}, {16, 256, 256}, 4);
  s.params["l0_tile"] = {16, 256, 64};
  s.params["b_layout"] = "nz";
  const auto first_a_rows = [&](bool shuffle) {
    s.params["shuffle_k"] = shuffle;
    const LoweredKernel k = lower_kernel(s, default_hw());
    std::vector<uint64_t> first;
    for (size_t t = 0; t < k.graph.tasks.size(); ++t)
      first.push_back(k.graph.access_begin(static_cast<int32_t>(t))->block);
    return std::pair{first, k.graph.tasks.size()};
  };
  const auto [plain, n_plain] = first_a_rows(false);
  const auto [shuffled, n_shuffled] = first_a_rows(true);
  ASSERT_EQ(n_plain, 4u);
  ASSERT_EQ(n_shuffled, 4u);
  for (size_t b = 1; b < 4; ++b) {
    EXPECT_EQ(plain[b], plain[0]);        // every block starts on A's k tile 0
    EXPECT_NE(shuffled[b], shuffled[0]);  // each on its own
  }
  EXPECT_EQ(shuffled[0], plain[0]);  // block 0 starts at k tile 0 either way
  Hardware hw = default_hw();
  hw.l2.same_line_request_ns = 2.0;  // a queue that dominates: the gain is the queue
  s.params["shuffle_k"] = false;
  const double in_step = run(s, hw).kernel_time_us;
  s.params["shuffle_k"] = true;
  const double shuffled_time = run(s, hw).kernel_time_us;
  EXPECT_LT(shuffled_time, in_step);
  s.partition = PartitionStyle::kPypto;
  s.grid = 0;
  s.params.erase("l0_tile");
  EXPECT_THROW(lower_kernel(s, default_hw()), Error);  // a catlass block option
}

// int8 operands: half the fp16 mmad time per fractal, an int32 accumulator written as int32
// unless the fixpipe dequantises (out_dtype fp16).
TEST(CubeKernels, Int8OperandsAndTheFixpipesOutput) {
  KernelSpec s = matmul({128, 256, 256}, {128, 256, 256}, 1);
  s.dtype = DType::kInt8;
  s.params["l0_tile"] = {128, 256, 64};
  const Hardware hw = default_hw();
  const LoweredKernel k = lower_kernel(s, hw);
  const auto& st = k.graph.kinds[0].steps.back();
  EXPECT_EQ(st.stores[0].burst_bytes, 256 * 4);
  EXPECT_EQ(st.stores[0].src_bytes, 128 * 256 * 4);
  s.params["out_dtype"] = "fp16";
  EXPECT_EQ(lower_kernel(s, hw).graph.kinds[0].steps.back().stores[0].burst_bytes, 256 * 2);
  KernelSpec f = s;
  f.dtype = DType::kFp16;
  const TaskCost i8 = cost_task_kind(k.graph.kinds[0], hw);
  const TaskCost f16 = cost_task_kind(lower_kernel(f, hw).graph.kinds[0], hw);
  EXPECT_LT(i8.cube_busy, f16.cube_busy * 0.6);
}

// LRU stack distance: a block re-read after other blocks were read many times hits when the
// distinct bytes in between fit L2, however much traffic passed.
TEST(L2StackDistance, RepeatedReadsOfOneBlockCountOnce) {
  TaskGraph g;
  g.add_psg("t");
  TaskKind k;
  const int32_t kind = g.add_kind(k);
  for (int i = 0; i < 6; ++i) g.add_task(kind, 0);
  g.add_access(0, {1, 1000, false});                              // A
  for (int i = 1; i < 5; ++i) g.add_access(i, {2, 1000, false});  // B four times: 4000 B moved
  g.add_access(5, {1, 1000, false});  // A again: 1000 distinct B between
  g.finalize();
  L2Residency l2(g, 1500);
  for (int i = 0; i < 5; ++i) l2.on_start(i);
  EXPECT_DOUBLE_EQ(l2.on_start(5)->read_hbm, 0);  // a hit
  L2Residency small(g, 900);
  for (int i = 0; i < 5; ++i) small.on_start(i);
  EXPECT_DOUBLE_EQ(small.on_start(5)->read_hbm, 1);  // 1000 distinct bytes > 900: a miss
}

// Co-readers: tasks reading the same block within the time they spend on it share its L2 line;
// a later reader of a block another task is still fetching from HBM waits for that fetch (no
// hit) without fetching it again.
TEST(L2StackDistance, CoReadersShareTheFetchAndCountEachOther) {
  TaskGraph g;
  g.add_psg("t");
  TaskKind k;
  const int32_t kind = g.add_kind(k);
  for (int i = 0; i < 3; ++i) {
    g.add_task(kind, 0);
    g.add_access(i, {7, 1000, false});
  }
  g.finalize();
  L2Residency l2(g, 1e6);
  const auto first = l2.on_start(0, 0, 100);
  EXPECT_DOUBLE_EQ(first->read_hbm, 1);
  EXPECT_DOUBLE_EQ(first->shared_read, 0);
  const auto second = l2.on_start(1, 10, 100);  // within the first's 100 cycles on the block
  EXPECT_DOUBLE_EQ(second->read_hbm, 0);
  EXPECT_DOUBLE_EQ(second->read_hit, 0);
  EXPECT_DOUBLE_EQ(second->shared_read, 1);
  EXPECT_DOUBLE_EQ(second->queued_reads, 2);  // itself behind the first
  const auto late = l2.on_start(2, 500, 100);
  EXPECT_DOUBLE_EQ(late->read_hit, 1);
  EXPECT_DOUBLE_EQ(late->shared_read, 0);
}

// A reader of a block L2 holds spends its all-hit run on it, so only readers within that (shorter)
// window are its co-readers; a block still to be fetched is read over the all-miss run.
TEST(L2StackDistance, AHitReadersWindowIsItsHitRun) {
  TaskGraph g;
  g.add_psg("t");
  TaskKind k;
  const int32_t kind = g.add_kind(k);
  for (int i = 0; i < 4; ++i) {
    g.add_task(kind, 0);
    g.add_access(i, {7, 1000, false});
  }
  g.finalize();
  L2Residency l2(g, 1e6);
  EXPECT_DOUBLE_EQ(l2.on_start(0, 0, 100, 20)->read_hbm, 1);  // the fetch: window 100
  EXPECT_DOUBLE_EQ(l2.on_start(1, 500, 100, 20)->shared_read, 0);
  // 30 cycles after task 1: within its miss run (100) but past its hit run (20).
  const auto apart = l2.on_start(2, 530, 100, 20);
  EXPECT_DOUBLE_EQ(apart->read_hit, 1);
  EXPECT_DOUBLE_EQ(apart->shared_read, 0);
  const auto together = l2.on_start(3, 540, 100, 20);  // 10 cycles after task 2
  EXPECT_DOUBLE_EQ(together->shared_read, 1);
  EXPECT_DOUBLE_EQ(together->queued_reads, 2);
}

// PyPTO's cube merge: heavy cube chains stay tasks of their own (6144^3: 4.5 MiB of copy-ins per
// C tile > mg_copyin_upper_bound 1 MiB); light ones pack up to the cap.
TEST(CubeKernels, CubeMergeIsCappedByCopyInBytes) {
  KernelSpec big = matmul({6144, 6144, 6144}, {128, 64, 256});
  big.params["k_l1"] = 256;
  EXPECT_EQ(lower_kernel(big, default_hw()).graph.tasks.size(), 1152u);
  // 64 x 256 x 2 + 256 x 64 x 2 = 64 KiB per chain: 16 per packed task, so 64 chains pack into
  // max(24 cores, 64 / 16) = 24 tasks.
  KernelSpec light = matmul({1024, 256, 256}, {64, 256, 64});
  EXPECT_EQ(lower_kernel(light, default_hw()).graph.tasks.size(), 24u);
  const LoweredKernel raw = [&] {
    KernelSpec s = light;
    s.max_tasks_per_psg = 0;
    return lower_kernel(s, default_hw());
  }();
  const int64_t caps[2] = {48, 1};
  EXPECT_EQ(pack_tasks(raw.graph, caps, 1 << 20).tasks.size(), 4u);  // 64 chains / 16
}

}  // namespace
}  // namespace tilesim
