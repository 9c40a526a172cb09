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

// The vector stage after split stage `si` that is its second pass, when the reduction asks for
// it (apply_in_task): on the same tiles and loops, reading the statistic, where the statistic is
// whole inside one task (in_task under pypto; an spmd block's whole rows): the task that
// finishes a row then walks the row's tiles again, the statistic still in UB (the reducing
// families' in-task and in-block apply; Ascend C's and Triton's two loops over a row in one
// kernel). -1: none.
int second_pass_of(const LoweringContext& cx, const std::vector<ProgStage>& stages, size_t si) {
  if (si + 1 >= stages.size() || cx.ascendc()) return -1;
  const ProgStage& a = stages[si];
  const ProgStage& b = stages[si + 1];
  if (!a.split || a.online >= 0 || b.split || b.online >= 0 || b.kind != OpKind::kUnary) return -1;
  const ProgOp& red = cx.op(a.last);
  if (red.info->kind != OpKind::kReduce || !red.apply_in_task ||
      (!cx.spmd() && red.merge != MergeMode::kInTask))
    return -1;
  if (b.shape != a.shape || b.tile != a.tile || b.loop != a.loop || !b.reader_op.count(red.out))
    return -1;
  return static_cast<int>(si + 1);
}

// The statistic of split stage `si` is stored when it is an output or a stage after its second
// pass reads it.
bool statistic_kept(const LoweringContext& cx, const std::vector<ProgStage>& stages, size_t si) {
  const int t = cx.op(stages[si].last).out;
  if (cx.tensor(t).output) return true;
  for (size_t k = si + 2; k < stages.size(); ++k)
    if (std::find(stages[k].loads.begin(), stages[k].loads.end(), t) != stages[k].loads.end())
      return true;
  return false;
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
    const int second = second_pass_of(cx, stages, si);
    std::optional<StageRun> pass;
    if (second >= 0) {
      const ProgStage& b = stages[static_cast<size_t>(second)];
      check_stage(cx, b);
      pass.emplace(StageRun{b, run.grid, g.add_psg(b.psg), base, produced, {}});
      for (int t : b.stores) pass->stores.push_back(cx.producer_of(b, pass->grid, t));
      run.second = &*pass;
      run.keep_statistic = statistic_kept(cx, stages, si);
    }
    lowering_of(cx, s)(cx, run);
    for (size_t i = 0; i < s.stores.size(); ++i) produced[s.stores[i]] = std::move(run.stores[i]);
    if (pass) {
      for (size_t i = 0; i < pass->s.stores.size(); ++i)
        produced[pass->s.stores[i]] = std::move(pass->stores[i]);
      ++si;
    }
  }
  g.finalize();
  LoweredKernel& out = cx.out();
  fill_common_diagnostics(spec, hw, out);
  out.diag.reduction_segments = cx.segments();
  return std::move(out);
}

}  // namespace tilesim
