// A matmul stage under spmd, catlass's basic matmul (hicann/catlass include/catlass/gemm/kernel/
// basic_matmul.hpp): partition.grid blocks on the AIC cores share the C tiles (each batch's in
// swizzle order, inside L2 blocks when given; strided or in contiguous runs); a block's pieces run
// back to back on its core (Task::continues_block), each recording its GM blocks so blocks reading
// the same panel close in time hit L2. A resident panel stays while the block's next piece shares
// it. A split K merged on the AIV is a second launch, a block per C tile.
#include <fmt/format.h>

#include <algorithm>

#include "kernels/lower/program/matmul_stage.hpp"

namespace tilesim {

namespace {

SpmdMatmulPlan spmd_plan(const MatmulStage& m) {
  const Dims& shape = m.run.s.shape;
  const MatmulOptions& o = m.o;
  return {.m = shape[m.r - 3],
          .k = m.k,
          .n = shape[m.r - 1],
          .m1 = m.t.m1,
          .n1 = m.t.n1,
          .k1 = m.t.k1,
          .swizzle_offset = o.swizzle.empty() ? 0 : o.swizzle[0],
          .swizzle_direction = o.swizzle.empty() ? 0 : o.swizzle[1],
          .tiles_m = m.tiles_m,
          .tiles_n = m.tiles_n,
          .grid = m.cx.spec().grid,
          .l2_block_m = o.l2_block.empty() ? 0 : o.l2_block[0],
          .l2_block_n = o.l2_block.empty() ? 0 : o.l2_block[1],
          .split_k = o.split_k,
          .batches = m.run.grid.count() / (m.tiles_m * m.tiles_n),
          .contiguous = !o.strided};
}

// The grid index of the C tile a piece of work computes.
int64_t index_of(const MatmulStage& m, const MatmulWork& w) {
  return m.index(w.batch, w.m0 / m.t.m1, w.n0 / m.t.n1);
}

// The second launch: one AIV block per C tile sums its partials and writes C.
void merge_launch(MatmulStage& m, const SpmdMatmulPlan& p) {
  TaskGraph& g = m.cx.graph();
  for (int64_t idx = 0; idx < p.tiles(); ++idx) {
    const MatmulTile c = spmd_matmul_tile(p, idx);
    const MatmulWork w{c.m0, c.mext, c.n0, c.next, 0, p.k, 0, c.batch};
    const int64_t i = index_of(m, w);
    std::vector<Access> acc;
    const TaskKind e = m.merge_kind(w, m.tensors(m.run.grid.block(i)), acc);
    const int32_t task = g.add_task(m.cx.kind_id(m.run.s, e), 0, -1, m.cx.launch());
    for (const Access& a : acc) g.add_access(task, a);
    for (auto& pr : m.run.stores) pr.tasks[static_cast<size_t>(i)] = {task};
  }
  m.cx.end_mixed_launch();
}

}  // namespace

void lower_spmd_matmul(MatmulStage& m) {
  LoweringContext& cx = m.cx;
  TaskGraph& g = cx.graph();
  const SpmdMatmulPlan p = spmd_plan(m);
  const int64_t items = p.tiles() * p.split_k;
  const std::vector<std::vector<MatmulWork>> blocks = spmd_matmul_work(p);
  for (size_t b = 0; b < blocks.size(); ++b) {
    const MatmulWork* prev = nullptr;
    for (const MatmulWork& piece : blocks[b]) {
      MatmulWork w = piece;
      if (m.o.shuffle_k) w.k_first = static_cast<int64_t>(b) % ceil_div(w.kext, m.t.k1);
      const bool same_k =
          prev && prev->k0 == w.k0 && prev->kext == w.kext && prev->batch == w.batch;
      const bool keep_a = m.t.resident == L1Resident::kA && same_k && prev->m0 == w.m0;
      const bool keep_b = m.t.resident == L1Resident::kB && same_k && prev->n0 == w.n0;
      const int64_t i = index_of(m, w);
      TaskKind k = m.cube_kind(fmt::format("matmul_tile[{}x{}]", w.mext, w.next));
      // A kernel that preloads (catlass's block_mmad_preload.hpp) loads the next C tile's operands
      // while this one computes: the block's tasks overlap (KernelSpec::overlap_depth).
      k.overlap = cx.spec().overlap_depth();
      std::vector<Access> acc;
      add_cube_tile(k, m.tensors(m.run.grid.block(i)), m.t, w, !keep_a, !keep_b, m.c_store(),
                    cx.hw(), acc);
      const int32_t task = g.add_task(cx.kind_id(m.run.s, k), 0, -1, cx.launch(), prev != nullptr);
      for (const Access& a : acc) g.add_access(task, a);
      for (auto& pr : m.run.stores) pr.tasks[static_cast<size_t>(i)].push_back(task);
      prev = &piece;
    }
  }
  // The blocks past the work start on an AIC, find nothing and return.
  const std::string units =
      p.split_k > 1 ? fmt::format("[{}, {}] C tiles x {} K slices", p.m1, p.n1, p.split_k)
                    : fmt::format("[{}, {}] C tiles", p.m1, p.n1);
  cx.end_launch(m.run.s, m.run.psg, std::min(p.grid, items), units, m.run.s.psg, CoreType::kAic);
  if (m.vector_merge) merge_launch(m, p);
}

}  // namespace tilesim
