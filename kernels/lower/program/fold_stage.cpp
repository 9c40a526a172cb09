// X13: a reduction of every dim of a stage's per-row result (a loss's batch mean over its
// per-sample values) folded into the stage's spmd blocks instead of a launch of its own: each
// block reduces the values it produced, still in UB, scales its share (the reduction merges by an
// atomic add and its finalize is linear) and adds one value to the output atomically. The loss
// family's blocks did this (Phase::Link::kInBlocks); the program lowering decides it in fold_of.
#include "kernels/lower/program/lowering_context.hpp"
#include "kernels/tiling/vector_work.hpp"
#include "model/error.hpp"

namespace tilesim {

int64_t fold_values(const LoweringContext& cx, const StageRun& run, const Block& b) {
  const ProgOp& f = cx.op(run.fold->s.first);
  const int t = f.in[0];
  for (int o = run.s.first; o <= run.s.last; ++o)
    if (cx.op(o).out == t) return product(output_region(cx.program(), cx.op(o), b).extent);
  if (run.epilogue)  // the per-row result is the epilogue's: one value per row of b's output
    for (int o = run.epilogue->s.first; o <= run.epilogue->s.last; ++o)
      if (cx.op(o).out == t)
        return product(output_region(cx.program(), cx.op(run.s.last), b).extent);
  throw InternalError("fold: its input is not the stage's");
}

TaskKind fold_kind(LoweringContext& cx, const StageRun& run, int64_t values,
                   std::vector<Access>& acc) {
  TaskKind k;
  if (values == 0) return k;
  const ProgOp& f = cx.op(run.fold->s.first);
  const Dims& in = cx.tensor(f.in[0]).shape;
  // The block's values side by side in UB: a column along the first reduced dim.
  Dims ce(in.size(), 1);
  ce[static_cast<size_t>(f.dims.front())] = values;
  TileStep st;
  cx.op_vector_work(f, ce, values, Block{Dims(in.size(), 0), ce}, st.vec, &run.fold->s);
  const Dims& out = cx.tensor(f.out).shape;
  const Block whole{Dims(out.size(), 0), out};
  st.stores.push_back(cx.dma(DmaDir::kWrite, f.out, whole, acc));
  st.accumulates = true;
  reduce_merge_work(*f.info->reduction, product(out), cx.tensor(f.in[0]).dtype,
                    cx.tensor(f.out).dtype, st.fold);
  k.steps.push_back(st);
  k.buffers.push_back(
      {cx.tensor(f.out).name, cx.ub_bytes(f.out, whole), BufferRole::kOutput, MemSpace::kUb});
  return k;
}

}  // namespace tilesim
