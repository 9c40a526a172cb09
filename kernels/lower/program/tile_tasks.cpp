// A stage whose tiles are independent (a fused vector stage, a copy) as tasks under each
// partition: pypto, a task per tile in its loop chunk's root function, waiting for the tasks that
// wrote what it reads; spmd, partition.grid blocks each walking a contiguous run of regions
// (partition.block, or whole tiles), the blocks past the work idle; ascendc, a task per core
// (partition.cores), pinned, walking its run.
#include <fmt/format.h>

#include <algorithm>

#include "kernels/lower/program/lowering_context.hpp"
#include "model/error.hpp"

namespace tilesim {

namespace {

// Ascend C: partition.cores (default every core of the stage's type), each a pinned task.
int64_t cores_of(const LoweringContext& cx, CoreType core) {
  const int64_t have = core == CoreType::kAic ? cx.hw().cores.aic : cx.hw().cores.aiv;
  const int64_t cores = cx.spec().cores > 0 ? cx.spec().cores : have;
  if (cores > have)
    throw Error(fmt::format("{}: partition.cores {} exceeds the {} {} cores of {}", cx.spec().op,
                            cores, have, core_type_name(core), cx.hw().name),
                ErrorKind::kLimits);
  return cores;
}

}  // namespace

void lower_tiles(LoweringContext& cx, StageRun& run, CoreType core, const TileKindMaker& make) {
  const ProgStage& s = run.s;
  const int64_t tiles = run.grid.count();
  std::vector<Access> acc;
  if (!cx.spmd() && !cx.ascendc()) {
    for (auto& pr : run.stores) pr.tasks.resize(static_cast<size_t>(tiles));
    for (int64_t i = 0; i < tiles; ++i) {
      acc.clear();
      const Block b = run.grid.block(i);
      const int32_t task = cx.add_task(s, make(b, acc, true), run.psg, run.base + run.grid.root(i),
                                       acc, cx.load_deps(s, b, run.produced));
      for (auto& pr : run.stores) pr.tasks[static_cast<size_t>(i)] = {task};
    }
    return;
  }
  // Runs of regions per block (spmd) or core (ascendc): an spmd block's partition.block (its rank
  // checked by check_stage), walked in tile-sized sub-tiles; else each region one tile, in the
  // grid's row-major order.
  const BlockTiling cut(s.shape, cx.spmd() ? cx.spec().block : Dims{}, s.tile);
  const int64_t used = std::min(cx.spmd() ? cx.spec().grid : cores_of(cx, core), cut.regions());
  for (int64_t blk = 0; blk < used; ++blk) {
    const BlockRange range = block_range(cut.regions(), used, blk);
    acc.clear();
    TaskKind k;
    int64_t values = 0;  // of the fold's input (X13)
    for (int64_t i = range.begin; i < range.end; ++i)
      cut.for_each_subtile(i, [&](const Block& b) {
        append_kind(k, make(b, acc, k.steps.empty()));
        if (run.fold) values += fold_values(cx, run, b);
      });
    if (run.fold) append_kind(k, fold_kind(cx, run, values, acc));
    cx.add_block(s, std::move(k), run.psg, blk, acc);
  }
  cx.end_launch(s, run.psg, used, cx.spec().block.empty() ? "tiles" : "block regions", s.psg, core);
}

}  // namespace tilesim
