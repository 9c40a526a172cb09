#include "kernels/tiling/vector_work.hpp"

#include <span>

#include "kernels/tiling/merge_modes.hpp"

namespace tilesim {

void add_binary_vec(VecClass cls, DType dt, const Dims& ce, bool broadcast, const Hardware& hw,
                    std::vector<VecOp>& vec) {
  const int64_t cols = ce.back(), rows = product(ce) / cols;
  if (broadcast && cols * dtype_bytes(dt) > hw.vector.bytes_per_repeat) {
    for (int64_t r = 0; r < rows; ++r) {
      vec.push_back(VecOp{cls, dt, 1, 1, cols});
      vec.back().same_op = r > 0;  // one operation, an instruction per row
    }
  } else {
    vec.push_back(VecOp{cls, dt, 1, 1, product(ce)});
  }
}

TileReduceGeometry reduce_geometry(const Dims& extent, const std::vector<int>& dims) {
  TileReduceGeometry g;
  g.elems = product(extent);
  for (int d : dims) g.rows *= extent[static_cast<size_t>(d)];
  const int last_red = dims.empty() ? -1 : dims.back();
  for (size_t d = static_cast<size_t>(last_red + 1); d < extent.size(); ++d) g.cols *= extent[d];
  // Dims of extent 1 after the last reduced dim leave its elements side by side in UB: it is
  // reduced as a last dim (a [t, 1] column is a vector of t).
  g.last_reduced = last_red >= 0 && g.cols == 1;
  if (g.last_reduced) g.inner = extent[static_cast<size_t>(last_red)];
  g.out_elems = g.elems / g.rows;
  return g;
}

void add_reduce_ops(const TileReduceGeometry& g, DType dt, std::vector<VecOp>& ops) {
  if (g.rows == 1) return;
  if (g.last_reduced) {
    const int64_t outer = g.rows / g.inner;  // reduced elements outside the last dim
    if (outer > 1) ops.push_back(VecOp{VecClass::kReduceRows, dt, g.out_elems, outer, g.inner});
    if (g.inner > 1) ops.push_back(VecOp{VecClass::kReduceLast, dt, 1, g.out_elems, g.inner});
  } else {
    ops.push_back(VecOp{VecClass::kReduceRows, dt, g.out_elems / g.cols, g.rows, g.cols});
  }
}

namespace {

void add_pass(const VecPass& p, const TileReduceGeometry& g, DType in, DType out,
              std::vector<VecOp>& ops) {
  const DType dt = p.dtype == PassDType::kIn ? in : out;
  switch (p.over) {
    case ReducePass::kReduce:
      add_reduce_ops(g, dt, ops);
      break;
    case ReducePass::kReduceByRows:
      if (g.last_reduced)
        ops.push_back(VecOp{VecClass::kReduceRows, dt, g.out_elems, g.rows, 1});
      else
        add_reduce_ops(g, dt, ops);
      break;
    case ReducePass::kTile:
      ops.push_back(VecOp{p.cls, dt, 1, 1, g.elems});
      break;
    case ReducePass::kOut:
      ops.push_back(VecOp{p.cls, dt, 1, 1, g.out_elems});
      break;
  }
}

// Passes over a partial: its elements are the outputs, nothing left to reduce.
void add_out_passes(std::span<const VecPass> passes, int64_t out_elems, DType in, DType out,
                    std::vector<VecOp>& ops) {
  TileReduceGeometry g;
  g.elems = g.out_elems = out_elems;
  for (const VecPass& p : passes) add_pass(p, g, in, out, ops);
}

}  // namespace

void reduce_tile_work(const ReduceRecord& r, const TileReduceGeometry& g, DType in, DType out,
                      std::vector<VecOp>& ops, size_t from) {
  for (size_t i = from; i < r.tile_passes.size(); ++i) add_pass(r.tile_passes[i], g, in, out, ops);
}

void reduce_finalize_work(const ReduceRecord& r, int64_t out_elems, DType in, DType out,
                          std::vector<VecOp>& ops) {
  add_out_passes(r.finalize_passes, out_elems, in, out, ops);
}

void reduce_merge_work(const ReduceRecord& r, int64_t out_elems, DType in, DType out,
                       std::vector<VecOp>& ops, size_t from) {
  add_out_passes(std::span(r.merge_passes).subspan(from), out_elems, in, out, ops);
}

void add_elementwise(VecClass cls, DType dt, int64_t elems, int count, std::vector<VecOp>& ops) {
  for (int i = 0; i < count; ++i) ops.push_back(VecOp{cls, dt, 1, 1, elems});
}

}  // namespace tilesim
