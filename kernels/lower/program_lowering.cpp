// A tile program to a task graph. Each stage (kernels/program/program.hpp plan_stages) passes its
// pre-check and is lowered by its kind's file in kernels/lower/program/: a fused vector stage, a
// matmul stage, a copy, a split reduction with its merge, a split cumsum, a flash stage. Under
// pypto the tiles of one loop chunk form a root function and a tile depends on the tasks that wrote
// the GM blocks it reads; under spmd each stage is one launch whose tiles are shared in contiguous
// runs over the grid's blocks (kernels/tiling/block_regions.hpp's cut), those past the work
// idle; under ascendc a stage of independent tiles is a pinned task per core.
#include "kernels/lower/program_lowering.hpp"

#include <algorithm>
#include <optional>

#include "kernels/lower/diagnostics.hpp"
#include "kernels/lower/program/lowering_context.hpp"

namespace tilesim {

namespace {

using StageLowering = void (*)(LoweringContext&, StageRun&);

// The stage's kind: which file lowers it.
StageLowering lowering_of(const LoweringContext& cx, const ProgStage& s) {
  if (s.online >= 0) return lower_flash_stage;
  if (s.split && cx.op(s.last).info->kind == OpKind::kScan) return lower_scan_stage;
  if (s.split) return lower_split_stage;
  if (s.kind == OpKind::kMatmul) return lower_matmul_stage;
  if (s.kind == OpKind::kLoad) return lower_copy_stage;
  return lower_vector_stage;
}

// The stage's tiles: a matmul stage's C tiles each take the whole K; a split stage cut into spmd
// block regions walks each region's sub-tiles (clipped at the region's edge).
StageGrid grid_of(const LoweringContext& cx, const ProgStage& s) {
  if (s.split && cx.spmd() && !cx.spec().block.empty() &&
      cx.spec().block.size() == s.shape.size()) {
    StageGrid g = stage_grid(s);
    const BlockTiling cut(s.shape, cx.spec().block, s.tile);
    for (size_t a = 0; a < s.shape.size(); ++a) g.pieces[a] = cut.pieces(a);
    return g;
  }
  if (s.online >= 0 || s.kind != OpKind::kMatmul) return stage_grid(s);
  ProgStage whole_k = s;
  whole_k.tile[s.tile.size() - 2] = s.shape[s.shape.size() - 2];
  return stage_grid(whole_k);
}

// Whether stage b may fuse into the tasks of split stage a (as its epilogue or second pass): a
// vector stage after a split reduction that asks for it (apply_in_task).
bool fuses(const LoweringContext& cx, const ProgStage& a, const ProgStage& b) {
  const ProgOp& red = cx.op(a.last);
  return !cx.ascendc() && a.split && a.online < 0 && !b.split && b.online < 0 &&
         b.kind == OpKind::kUnary && b.loop == a.loop && red.info->kind == OpKind::kReduce &&
         red.apply_in_task;
}

// Whether the column stage right after split stage `si` is its epilogue: vector ops over the
// statistics' shape in the same loop, reading nothing from GM but the statistics (a norm's mean,
// variance and 1 / sqrt, a softmax's 1 / sum). The task (or spmd block) that completes a row runs
// them once on the row's statistics, as the reducing families finalize a row.
bool is_epilogue(const LoweringContext& cx, const std::vector<ProgStage>& stages, size_t si) {
  if (si + 1 >= stages.size() || !fuses(cx, stages[si], stages[si + 1])) return false;
  const ProgStage& a = stages[si];
  const ProgStage& b = stages[si + 1];
  const ProgOp& red = cx.op(a.last);
  if (!red.keepdim || b.shape != cx.tensor(red.out).shape) return false;
  for (int o = b.first; o <= b.last; ++o)  // a reduction of the statistics is no finalize
    if (cx.op(o).info->kind == OpKind::kReduce) return false;
  for (int t : b.loads) {
    bool statistic = false;
    for (int o = a.reduce_first; o <= a.last; ++o) statistic = statistic || cx.op(o).out == t;
    if (!statistic) return false;
  }
  return true;
}

// Whether the vector stage `next` after split stage `si` (and its epilogue) is its second pass: on
// the same tiles, reading a statistic (or the epilogue's results). Where the statistics are whole
// inside one task (in_task under pypto; an spmd block's whole rows) the task that finishes a row
// then walks the row's tiles again, the statistics still in UB (Ascend C's and Triton's two loops
// over a row in one kernel); under pypto's other merges each row's tiles are tasks right after
// the row completes (the reducing families' in-task, per-segment and in-block apply).
bool is_second_pass(const LoweringContext& cx, const std::vector<ProgStage>& stages, size_t si,
                    size_t next) {
  if (next >= stages.size() || !fuses(cx, stages[si], stages[next])) return false;
  const ProgStage& b = stages[next];
  if (b.shape != stages[si].shape || b.tile != stages[si].tile) return false;
  for (size_t k = si; k < next; ++k)
    for (int o = stages[k].reduce_first; o <= stages[k].last; ++o)
      if (b.reader_op.count(cx.op(o).out)) return true;
  return false;
}

// spmd (X13): whether the stage `next` after stage `si` (and what is fused into it) reduces every
// dim of a per-row result made by stages [si, maker] (the stage or its epilogue; a second pass's
// results are not per row) by a statistic that merges by an atomic add with a linear finalize
// (sum, mean), read by nothing after it: the stage's blocks fold their values into its output
// (fold_stage.cpp) rather than a launch of its own. Only a fused vector stage and a split stage
// fold (lower_tiles, SplitSpmd).
bool folds(const LoweringContext& cx, const std::vector<ProgStage>& stages, size_t si, size_t maker,
           size_t next) {
  const StageLowering lower = lowering_of(cx, stages[si]);
  if (!cx.spmd() || next >= stages.size() || !cx.spec().block.empty() ||
      (lower != lower_vector_stage && lower != lower_split_stage))
    return false;
  const ProgStage& f = stages[next];
  const ProgOp& red = cx.op(f.first);
  if (f.first != f.last || f.online >= 0 || red.info->kind != OpKind::kReduce ||
      !red.info->reduction->merges_atomically || red.info->reduction->gives_index ||
      red.info->reduction->picks || f.loop != stages[si].loop)
    return false;
  // Every dim reduced but those of extent 1: one value out.
  if (product(cx.tensor(red.out).shape) != 1 || cx.tensor(red.in[0]).output) return false;
  bool made = false;
  for (size_t k = si; k <= maker; ++k)
    for (int o = stages[k].first; o <= stages[k].last; ++o)
      made = made || cx.op(o).out == red.in[0];
  for (size_t k = next + 1; k < stages.size(); ++k)
    if (stages[k].reader_op.count(red.in[0])) return false;
  return made;
}

// What the split stage `si` and its fused stages (up to `unfused`, the first stage that is not)
// make that is not stored: the statistics and epilogue results that are neither an output nor
// read by a later stage.
std::vector<int> statistics_dropped(const LoweringContext& cx, const std::vector<ProgStage>& stages,
                                    size_t si, size_t unfused) {
  std::vector<int> dropped;
  for (size_t f = si; f < unfused; ++f)
    for (int o = f == si ? stages[si].reduce_first : stages[f].first; o <= stages[f].last; ++o) {
      const int t = cx.op(o).out;
      bool kept = cx.tensor(t).output;
      for (size_t k = unfused; k < stages.size(); ++k)
        kept = kept || std::find(stages[k].loads.begin(), stages[k].loads.end(), t) !=
                           stages[k].loads.end();
      if (!kept) dropped.push_back(t);
    }
  return dropped;
}

// Adds the run of stage b fused into a stage's tasks (its epilogue, second pass or fold).
StageRun& fused_run(LoweringContext& cx, const ProgStage& b, const StageGrid& grid, int32_t base,
                    const Produced& produced, std::optional<StageRun>& slot) {
  check_stage(cx, b);
  slot.emplace(StageRun{b, grid, cx.graph().add_psg(b.psg), base, produced, {}});
  for (int t : b.stores) slot->stores.push_back(cx.producer_of(b, slot->grid, t));
  return *slot;
}

}  // namespace

LoweredKernel lower_program(const Program& p, const KernelSpec& spec, const Hardware& hw) {
  const std::vector<ProgStage> stages = plan_stages(p);
  LoweringContext cx(p, spec, hw);
  TaskGraph& g = cx.graph();
  g.runtime = spec.partition == PartitionStyle::kPypto ? RuntimeStyle::kMpmd : RuntimeStyle::kSpmd;
  Produced produced;
  int32_t next_root = 0, base = 0;
  for (size_t si = 0; si < stages.size(); ++si) {
    const ProgStage& s = stages[si];
    check_stage(cx, s);
    // Root functions: one per loop chunk, shared by the consecutive stages of one loop; the
    // stages outside any loop form one root function between them.
    if (si == 0 || s.loop != stages[si - 1].loop) {
      base = next_root;
      next_root += static_cast<int32_t>(s.roots() * (cx.spmd() ? 1 : s.views));
    }
    StageRun run{s, grid_of(cx, s), -1, base, produced, {}};
    run.psg = g.add_psg(s.online >= 0 ? s.psg + ":qk" : s.psg);
    if (s.online >= 0)
      run.stores.resize(s.stores.size());
    else
      for (int t : s.stores) run.stores.push_back(cx.producer_of(s, run.grid, t));
    // The stages fused into this one's tasks: its epilogue (si + 1), its second pass (after the
    // epilogue) and the fold after them.
    const bool epilogue = is_epilogue(cx, stages, si);
    const size_t after = epilogue ? si + 2 : si + 1;
    const bool second = is_second_pass(cx, stages, si, after);
    const size_t fused = second ? after : after - 1;  // the last fused stage
    const bool fold = folds(cx, stages, si, after - 1, fused + 1);
    std::optional<StageRun> epi, pass, folded;
    if (epilogue)
      run.epilogue =
          &fused_run(cx, stages[si + 1], stage_grid(stages[si + 1]), base, produced, epi);
    if (second) run.second = &fused_run(cx, stages[after], run.grid, base, produced, pass);
    if (fold)
      run.fold =
          &fused_run(cx, stages[fused + 1], stage_grid(stages[fused + 1]), base, produced, folded);
    // What the split stage's tasks hold in UB for the work after them: under pypto's tree,
    // chain and atomic merges the second pass is tasks of its own, which read from GM.
    const bool apart = second && !cx.spmd() && cx.op(s.last).merge != MergeMode::kInTask;
    if (fused > si) run.dropped = statistics_dropped(cx, stages, si, apart ? fused : fused + 1);
    if (fold) run.dropped.push_back(cx.op(stages[fused + 1].first).in[0]);
    // Row-local passes of the grid share a launch (launch_join.cpp): fused vector and split
    // stages, whose copies are the program's tensors' regions.
    const StageLowering lower = lowering_of(cx, s);
    cx.set_stage_joins(lower == lower_vector_stage || lower == lower_split_stage);
    lower(cx, run);
    for (StageRun* r :
         {&run, epi ? &*epi : nullptr, pass ? &*pass : nullptr, folded ? &*folded : nullptr})
      for (size_t i = 0; r != nullptr && i < r->s.stores.size(); ++i)
        produced[r->s.stores[i]] = std::move(r->stores[i]);  // what later stages read
    si = fold ? fused + 1 : fused;
  }
  cx.close_launch();
  g.finalize();
  LoweredKernel& out = cx.out();
  fill_common_diagnostics(spec, hw, out);
  out.diag.reduction_segments = cx.segments();
  return std::move(out);
}

}  // namespace tilesim
