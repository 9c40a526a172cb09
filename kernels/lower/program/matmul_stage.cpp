// A matmul stage: one AIC task per C tile walking k, as the matmul family's pypto cube task
// (kernels/cube/cube_task.hpp) builds it. Under spmd a block is a run of C-tile tasks.
#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "kernels/cube/cube_task.hpp"
#include "kernels/lower/program/lowering_context.hpp"

namespace tilesim {

TaskKind LoweringContext::cube_task(const ProgOp& x, const Dims& tile, const Dims& l0,
                                    const Block& b, DType out, std::string label,
                                    std::vector<Access>& acc) const {
  // The matmul family's pypto cube task on this C tile over the block's k range: L1 k step = the
  // tile's k, L0 tile = the given one (the cube tile itself unless PyPTO's two-level form set
  // one), the fixpipe writing C as `out`.
  const size_t r = b.origin.size();
  const Dims& a = tensor(x.in[0]).shape;
  const int64_t tm = tile[0], tk = tile[1], tn = tile[2];
  MatmulTensors mt(a[a.size() - 2], a.back(), tensor(x.out).shape.back(), tensor(x.in[0]).dtype,
                   x.transpose_b ? BLayout::kColumnMajor : BLayout::kRowMajor);
  mt.a_id = static_cast<uint32_t>(x.in[0]);
  mt.b_id = static_cast<uint32_t>(x.in[1]);
  mt.batch = Dims(b.origin.begin(), b.origin.end() - 3);
  const Dims l = l0.empty() ? Dims{tm, tk, tn} : l0;
  const CubeTiling t{tm, tn, tk, l[0], l[2], l[1], out, L1Resident::kNone, spec_.buffer_count};
  TaskKind k = cube_kind(-1, std::move(label), mt, t, tk);
  const MatmulWork w{b.origin[r - 3], b.extent[r - 3], b.origin[r - 1],
                     b.extent[r - 1], b.origin[r - 2], b.extent[r - 2]};
  add_cube_tile(k, mt, t, w, true, true, false, static_cast<uint32_t>(x.out), hw_, acc);
  return k;
}

namespace {

// The C tile b's task over the whole K.
TaskKind matmul_kind(const LoweringContext& cx, const ProgStage& s, const Block& b,
                     std::vector<Access>& acc) {
  const ProgOp& x = cx.op(s.first);
  const size_t r = s.shape.size();
  Block whole_k = b;
  whole_k.origin[r - 2] = 0;
  whole_k.extent[r - 2] = s.shape[r - 2];
  return cx.cube_task(x, Dims(s.tile.end() - 3, s.tile.end()), s.l0, whole_k,
                      cx.tensor(x.out).dtype, fmt::format("{}{}", s.psg, format_dims(b.extent)),
                      acc);
}

// The order the C tiles become tasks: PyPTO's cube lowering walks n outer, m inner
// (cube_operation_impl.cpp ConstructTileGraph), as the matmul family does.
std::vector<int64_t> task_order(const StageGrid& g) {
  std::vector<int64_t> order(static_cast<size_t>(g.count()));
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int64_t>(i);
  const size_t r = g.pieces.size();
  const auto m = static_cast<int64_t>(g.pieces[r - 3].size()),
             n = static_cast<int64_t>(g.pieces[r - 1].size());
  // Row-major index = ((batch * m + mi) * 1 + 0) * n + ni (k is one piece).
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const auto key = [&](int64_t i) { return std::tuple{i / (m * n), i % n, i / n % m}; };
    return key(a) < key(b);
  });
  return order;
}

}  // namespace

void lower_matmul_stage(LoweringContext& cx, StageRun& run) {
  const ProgStage& s = run.s;
  const StageGrid& grid = run.grid;
  std::vector<Access> acc;
  const auto make = [&](int64_t i) {
    TaskKind k = matmul_kind(cx, s, grid.block(i), acc);
    k.psg = run.psg;
    return k;
  };
  if (!cx.spmd()) {
    for (auto& pr : run.stores) pr.tasks.resize(static_cast<size_t>(grid.count()));
    for (const int64_t i : task_order(grid)) {
      acc.clear();
      const int32_t task = cx.add_task(s, make(i), run.psg, run.base + grid.root(i), acc,
                                       cx.load_deps(s, grid.block(i), run.produced));
      for (auto& pr : run.stores) pr.tasks[static_cast<size_t>(i)] = {task};
    }
    return;
  }
  // A cube block is a run of C-tile tasks (Task::continues_block), each with its own GM
  // accesses, as the matmul family's blocks: blocks reading one panel close in time hit L2.
  TaskGraph& g = cx.graph();
  const int64_t tiles = grid.count();
  const int64_t used = std::min(cx.spec().grid, tiles);
  for (int64_t blk = 0; blk < used; ++blk) {
    const BlockRange range = block_range(tiles, used, blk);
    for (int64_t i = range.begin; i < range.end; ++i) {
      acc.clear();
      TaskKind t = make(i);
      const int32_t task = g.add_task(cx.kind_id(s, t), 0, -1, cx.launch(), i > range.begin);
      for (const Access& a : acc) g.add_access(task, a);
    }
  }
  cx.end_launch(s, run.psg, used, "C tiles", s.psg, CoreType::kAic);
}

}  // namespace tilesim
