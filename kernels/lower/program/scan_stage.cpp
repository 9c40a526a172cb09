// A cumsum over a split dim: one task (spmd: a block) walks each row's tiles in order and adds the
// carry, the previous tile's last line along the dim, to every tile after the first (one Add over
// the tile); the carry line stays in UB. Under spmd whole rows go to a block (a carry does not
// cross blocks).
#include <algorithm>

#include "kernels/lower/program/lowering_context.hpp"

namespace tilesim {

namespace {

// Appends chain `chain`'s tiles to `k`, their load dependencies to `deps`.
void walk_chain(LoweringContext& cx, StageRun& run, const std::vector<int64_t>& chain, TaskKind& k,
                std::vector<int32_t>& deps, std::vector<Access>& acc) {
  const ProgStage& s = run.s;
  const ProgOp& scan = cx.op(s.last);
  for (size_t j = 0; j < chain.size(); ++j) {
    const Block b = run.grid.block(chain[j]);
    TaskKind t = cx.vector_kind(s, b, acc);
    if (j == 0) {
      Block line = b;
      line.extent[static_cast<size_t>(scan.dims[0])] = 1;
      t.buffers.push_back({"carry", cx.ub_bytes(scan.out, line), BufferRole::kTemp, MemSpace::kUb});
    } else {  // the carry's Add ends the tile's work
      t.steps.back().vec.push_back(
          VecOp{VecClass::kSimple, cx.tensor(scan.out).dtype, 1, 1, product(b.extent)});
    }
    append_tile(k, std::move(t));
    if (cx.spmd()) continue;  // launches run in order: no edges
    const auto d = cx.load_deps(s, b, run.produced);
    deps.insert(deps.end(), d.begin(), d.end());
  }
}

}  // namespace

void lower_scan_stage(LoweringContext& cx, StageRun& run) {
  const ProgStage& s = run.s;
  const auto chains = split_chains(cx.program(), s, run.grid);
  cx.note_segments(static_cast<int64_t>(chains.front().size()));
  std::vector<Access> acc;
  if (!cx.spmd()) {
    std::vector<std::vector<int32_t>> by_tile(static_cast<size_t>(run.grid.count()));
    for (const auto& chain : chains) {
      acc.clear();
      TaskKind k;
      std::vector<int32_t> deps;
      walk_chain(cx, run, chain, k, deps, acc);
      const int32_t task =
          cx.add_task(s, std::move(k), run.psg, run.base + run.grid.root(chain.front()), acc, deps);
      for (int64_t i : chain) by_tile[static_cast<size_t>(i)] = {task};
    }
    for (auto& pr : run.stores) pr.tasks = by_tile;
    return;
  }
  const auto rows = static_cast<int64_t>(chains.size());
  const int64_t used = std::min(cx.spec().grid, rows);
  for (int64_t blk = 0; blk < used; ++blk) {
    const BlockRange range = block_range(rows, used, blk);
    acc.clear();
    TaskKind k;
    std::vector<int32_t> unused;
    for (int64_t c = range.begin; c < range.end; ++c) {
      TaskKind part;
      walk_chain(cx, run, chains[static_cast<size_t>(c)], part, unused, acc);
      append_kind(k, std::move(part));
    }
    cx.add_block(s, std::move(k), run.psg, blk, acc);
  }
  cx.end_launch(s, run.psg, used, "rows", s.psg);
}

}  // namespace tilesim
