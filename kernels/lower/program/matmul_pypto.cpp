// A matmul stage under pypto, as PyPTO's cube lowering builds it (hicann/pypto framework/src/
// interface/operation/cube_operation_impl.cpp ConstructTileGraph): within each root function
// (a loop chunk, or an L2 view of l2_block tiles: the matmul guide's 2-D loop over m and n views)
// the C tiles become tasks n outer, m inner, each split into its K slices. Runs of consecutive
// tiles sharing the operand kept in L1 merge into one task, up to l1_reuse (PyPTO's
// L1CopyInReuseMerge, cube_l1_reuse_setting).
#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "kernels/lower/program/matmul_stage.hpp"

namespace tilesim {

namespace {

// One cube task's share of the work: C tile `index` of the grid over K slice `slice`.
struct CubePiece {
  int32_t root;
  int64_t index;
  Block b;
  MatmulWork w;
};

// The C tiles in task order: root first (a loop chunk's L2 views in turn, m views outer), then
// batch, n, m; each tile's K slices in order.
std::vector<CubePiece> task_order(const MatmulStage& m) {
  const StageGrid& g = m.run.grid;
  const Dims& l2 = m.o.l2_block;
  const int64_t views_n = l2.empty() ? 1 : ceil_div(m.tiles_n, l2[1]);
  const int64_t per_batch = m.tiles_m * m.tiles_n;
  std::vector<std::tuple<int32_t, int64_t, int64_t, int64_t, int64_t>> keys;
  for (int64_t i = 0; i < g.count(); ++i) {
    const int64_t batch = i / per_batch, mi = i / m.tiles_n % m.tiles_m, ni = i % m.tiles_n;
    const int64_t view = l2.empty() ? 0 : mi / l2[0] * views_n + ni / l2[1];
    const auto root = static_cast<int32_t>(m.run.base + g.root(i) * m.run.s.views + view);
    keys.emplace_back(root, batch, ni, mi, i);
  }
  std::sort(keys.begin(), keys.end());
  std::vector<CubePiece> out;
  for (const auto& [root, batch, ni, mi, i] : keys) {
    const Block b = g.block(i);
    for (int64_t s = 0; s < m.o.split_k; ++s) out.push_back({root, i, b, m.work(b, s)});
  }
  return out;
}

// The end of the run of pieces from `i` that one task computes: consecutive tiles of one root
// and K range sharing the resident operand's panel, up to l1_reuse of them.
size_t run_end(const MatmulStage& m, const std::vector<CubePiece>& pieces, size_t i) {
  const CubePiece& first = pieces[i];
  const Dims batch(first.b.origin.begin(), first.b.origin.end() - 3);
  auto shares = [&](const CubePiece& p) {
    if (p.root != first.root || p.w.k0 != first.w.k0 || p.w.kext != first.w.kext ||
        !std::equal(batch.begin(), batch.end(), p.b.origin.begin()))
      return false;
    return m.t.resident == L1Resident::kA ? p.w.m0 == first.w.m0 : p.w.n0 == first.w.n0;
  };
  size_t end = i + 1;
  if (m.t.resident != L1Resident::kNone)
    while (end < pieces.size() && static_cast<int64_t>(end - i) < m.o.l1_reuse &&
           shares(pieces[end]))
      ++end;
  return end;
}

// The AIV task after a cube task: the split-K merge of a C tile's slices or the cast epilogue.
int32_t add_aiv_task(MatmulStage& m, const CubePiece& p, bool merge,
                     const std::vector<int32_t>& deps) {
  std::vector<Access> acc;
  const MatmulTensors mt = m.tensors(p.b);
  const MatmulWork whole{p.w.m0, p.w.mext, p.w.n0, p.w.next, 0, m.k, 0};
  TaskKind e = merge ? m.merge_kind(whole, mt, acc) : m.cast_kind(p.w, mt, acc);
  const int psg = e.psg;
  return m.cx.add_task(m.run.s, std::move(e), psg, p.root, acc, deps);
}

void set_producer(MatmulStage& m, int64_t index, std::vector<int32_t> tasks) {
  for (auto& pr : m.run.stores) pr.tasks[static_cast<size_t>(index)] = tasks;
}

}  // namespace

void lower_pypto_matmul(MatmulStage& m) {
  LoweringContext& cx = m.cx;
  const ProgStage& s = m.run.s;
  const std::vector<CubePiece> pieces = task_order(m);
  std::vector<int32_t> slice_tasks;  // the cube tasks of the current C tile (split K)
  for (size_t i = 0, end = 0; i < pieces.size(); i = end) {
    end = run_end(m, pieces, i);
    const CubePiece& first = pieces[i];
    TaskKind k = m.cube_kind(fmt::format("matmul[{}x{}]{}", first.w.mext, first.w.next,
                                         end - i > 1 ? fmt::format("x{}", end - i) : ""));
    std::vector<Access> acc;
    std::vector<int32_t> deps;
    for (size_t j = i; j < end; ++j) {
      const CubePiece& p = pieces[j];
      add_cube_tile(k, m.tensors(p.b), m.t, p.w, j == i || m.t.resident != L1Resident::kA,
                    j == i || m.t.resident != L1Resident::kB, m.c_store(), cx.hw(), acc);
      const std::vector<int32_t> d = cx.load_deps(s, p.b, m.run.produced);
      deps.insert(deps.end(), d.begin(), d.end());
    }
    const int32_t cube = cx.add_task(s, std::move(k), m.run.psg, first.root, acc, deps);
    if (m.vector_merge) {
      slice_tasks.push_back(cube);
      if (first.w.k0 + first.w.kext == m.k) {  // the C tile's last slice: its merge
        set_producer(m, first.index, {add_aiv_task(m, first, true, slice_tasks)});
        slice_tasks.clear();
      }
      continue;
    }
    for (size_t j = i; j < end; ++j) {
      const CubePiece& p = pieces[j];
      if (m.o.vector_epilogue) {
        set_producer(m, p.index, {add_aiv_task(m, p, false, {cube})});
        continue;
      }
      // An atomic split K: C is done when every slice's task is.
      if (p.w.slice == 0) slice_tasks.clear();
      slice_tasks.push_back(cube);
      set_producer(m, p.index, slice_tasks);
    }
  }
}

}  // namespace tilesim
