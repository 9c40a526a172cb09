// Reductions: sum, amax, amin, mean (= sum / count) over one dim or several adjacent dims, either
// merged by reshape into one reduced dim (rule 3) or chained one dim at a time through GM. What
// each statistic costs and computes is its record in the op table.
#include <fmt/format.h>

#include <algorithm>

#include "kernels/families/families.hpp"
#include "kernels/families/one_op_program.hpp"
#include "kernels/families/reducing_params.hpp"
#include "kernels/ops/op_table.hpp"
#include "kernels/tiling/tile_rules.hpp"
#include "model/error.hpp"

namespace tilesim {

namespace {

// The reduction as the family reads it: the dims sorted, and with params.multi_dim "merged" the
// adjacent reduced dims reshaped into one (rule 3), the tile one block of the merged axis.
struct ReduceView {
  Dims shape, tile;
  std::vector<int> dims;
};
ReduceView reduce_view(const KernelSpec& spec) {
  if (spec.dims.empty()) throw Error(spec.op + ": dim: a reduction needs at least one dim");
  std::vector<int> dims = spec.dims;
  std::sort(dims.begin(), dims.end());
  const Dims& shape = spec.shape;
  const Dims& tile = spec.tile;
  if (dims.size() == 1 || param_string(spec, "multi_dim") != "merged") return {shape, tile, dims};
  for (size_t i = 1; i < dims.size(); ++i)
    if (dims[i] != dims[i - 1] + 1)
      throw Error(fmt::format("{}: dims are not adjacent, so they cannot be merged by reshape "
                              "(use params.multi_dim = \"chained\")",
                              spec.op),
                  ErrorKind::kLimits);
  const size_t d0 = static_cast<size_t>(dims.front()), d1 = static_cast<size_t>(dims.back());
  // The tile must be one block of the reshaped axis: 1 on the outer merged dims, any size on one
  // dim k, the inner ones in full.
  size_t k = d0;
  while (k < d1 && tile[k] == 1) ++k;
  for (size_t d = k + 1; d <= d1; ++d)
    if (tile[d] != shape[d])
      throw Error(
          fmt::format(
              "{}: merging dims {}..{} by reshape needs the tile to be one block of the merged "
              "axis: 1 on the outer merged dims, then any size, then the inner dims in full "
              "(tile[{}] = {} but shape[{}] = {}); use params.multi_dim = \"chained\"",
              spec.op, d0, d1, d, tile[d], d, shape[d]),
          ErrorKind::kLimits);
  ReduceView v{Dims(shape.begin(), shape.begin() + static_cast<long>(d0)),
               Dims(tile.begin(), tile.begin() + static_cast<long>(d0)),
               {static_cast<int>(d0)}};
  int64_t merged_shape = 1, merged_tile = tile[k];
  for (size_t d = d0; d <= d1; ++d) merged_shape *= shape[d];
  for (size_t d = k + 1; d <= d1; ++d) merged_tile *= shape[d];
  v.shape.push_back(merged_shape);
  v.tile.push_back(merged_tile);
  for (size_t d = d1 + 1; d < shape.size(); ++d) {
    v.shape.push_back(shape[d]);
    v.tile.push_back(tile[d]);
  }
  return v;
}

// The kernel as a tile program: x reduced over the view's dim (one op), or chained one dim at a
// time innermost first, each step in a loop of its own writing its intermediate to GM (a mean of
// means is the mean: the groups are equal), y stored with the reduced dims kept as 1. The merge
// mode "auto" is the statistic's: atomic where it merges by sum, max or min, else a tree; an spmd
// block accumulates in UB.
Program reduce_program(const KernelSpec& spec, const Hardware& hw) {
  const ReduceView v = reduce_view(spec);
  // The statistic is the op's record in the one op table (kernels/ops/op_table.cpp).
  const OpRecord* record = find_op_record(spec.op);
  if (!record || record->kind != OpKind::kReduce)
    throw InternalError("reduce: '" + spec.op + "' has no reduction record");
  validate_tile(spec, hw);  // the tile as given, before the view reshapes it
  check_reducing_partition(spec, v.dims.size(), v.shape != spec.shape || v.dims.size() != 1, false);
  const KernelSpec view = reducing_view(spec, v.shape, v.tile, v.dims);
  OneOpProgram b = one_op_program(view, hw, record);
  b.op.merge = merge_mode_of(
      spec, record->reduction->merges_atomically ? MergeMode::kAtomic : MergeMode::kTree);
  if (spec.partition == PartitionStyle::kSpmd)
    b.op.spmd_rows = *enum_named(kSpmdRowsNames, param_string(spec, "spmd_rows"));
  Program& p = b.program;
  p.tensors.push_back({"x", v.shape, spec.dtype, true, false});
  Dims shape = v.shape;
  if (v.dims.size() > 1) p.loops.clear();  // each step loops on its own
  for (size_t i = v.dims.size(); i-- > 0;) {
    const int d = v.dims[i];
    shape[static_cast<size_t>(d)] = 1;
    ProgOp op = b.op;
    op.in = {static_cast<int>(p.tensors.size()) - 1};
    op.out = static_cast<int>(p.tensors.size());
    op.dims = {d};
    op.index = static_cast<int>(p.ops.size());
    if (v.dims.size() > 1) {
      // A step of its own: its own loop over the same axis (sibling loops), so its own roots.
      op.psg = spec.op + "_dim" + std::to_string(d);
      op.loop = static_cast<int>(p.loops.size());
      p.loops.push_back({op.psg, view.loop_axis, spec.loop_count, -1});
    }
    p.tensors.push_back(
        {i == 0 ? "y" : "x_dim" + std::to_string(d), shape, spec.dtype, false, i == 0});
    p.ops.push_back(op);
  }
  return std::move(p);
}

}  // namespace

KernelFamily reduce_kernels() {
  KernelFamily f;
  f.name = "reduce";
  f.spmd = true;
  for (const char* name : {"sum", "amax", "amin", "mean"}) f.ops.emplace_back(name);
  ParamDecl multi;
  multi.name = "multi_dim";
  multi.fallback = "merged";
  multi.allowed = {"merged", "chained"};
  multi.doc = "several adjacent dims: merged by reshape into one (rule 3), or chained one by one";
  f.params = {merge_param(), multi, spmd_rows_param()};
  f.program = reduce_program;
  return f;
}

}  // namespace tilesim
