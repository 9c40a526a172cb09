// Reductions: sum, amax, amin, mean (= sum / count) over one dim or several adjacent dims, either
// merged by reshape into one reduced dim (rule 3) or chained one dim at a time through GM. What
// each statistic costs and computes is its record in the op table.
#include <fmt/format.h>

#include <optional>

#include "kernels/families/families.hpp"
#include "kernels/lower/reduction_program.hpp"
#include "kernels/ops/op_table.hpp"
#include "model/error.hpp"

namespace tilesim {

namespace {

// The statistic of record `r` (kernels/ops/op_table.cpp) as a reducing family: its tile, merge
// and finalize instructions and its value, statistics kept in fp32 between tiles. `count`: the
// elements each output reduces over, when this phase finalizes (a chain's last step); nullopt:
// the partial statistic passes on to the next step.
ReduceFamily reduce_family(const std::string& psg, const ReduceRecord& r,
                           std::optional<double> count) {
  ReduceFamily f;
  f.psg = psg;
  f.stats = 1;
  f.atomic_merge = r.merges_atomically;
  f.partial_work = [&r](const TileReduceGeometry& g, DType dt, std::vector<VecOp>& ops) {
    reduce_tile_work(r, g, dt, DType::kFp32, ops);
  };
  f.combine_work = [&r](int64_t n, std::vector<VecOp>& ops) {
    reduce_merge_work(r, n, DType::kFp32, DType::kFp32, ops);
  };
  f.finalize_work = [&r, count](int64_t n, std::vector<VecOp>& ops) {
    if (count) reduce_finalize_work(r, n, DType::kFp32, DType::kFp32, ops);
  };
  const ReduceValue& v = r.value;
  f.partial = [&v](const std::vector<Eigen::ArrayXd>& x) -> Stats {
    ReduceAcc acc = v.identity;
    for (Eigen::Index i = 0; i < x[0].size(); ++i) acc = v.fold(acc, x[0][i], i);
    return {acc.stat};
  };
  f.combine = [&v](const Stats& a, const Stats& b) -> Stats {
    return {v.merge({a[0], 0}, {b[0], 0}).stat};
  };
  f.finalize = [&v, count](const Stats& s, double) -> Stats {
    return {count ? v.finalize(s[0], *count) : s[0]};
  };
  return f;
}

ReductionProgram describe_reduce(const KernelSpec& spec) {
  if (spec.dims.empty()) throw Error(spec.op + ": dim: a reduction needs at least one dim");
  std::vector<int> dims = spec.dims;
  std::sort(dims.begin(), dims.end());
  // The statistic is the op's record in the one op table (kernels/ops/op_table.cpp).
  const OpRecord* record = find_op_record(spec.op);
  if (!record || record->kind != OpKind::kReduce)
    throw InternalError("describe_reduce: '" + spec.op + "' has no reduction record");
  const ReduceRecord& red = *record->reduction;
  if (red.gives_index)  // one fp32 statistic per output between tiles: no (value, index) pairs
    throw InternalError("describe_reduce: '" + spec.op + "' reduces to an index");
  double count = 1;
  for (int d : dims) count *= static_cast<double>(spec.shape[static_cast<size_t>(d)]);
  const MergeMode merge = merge_mode_of(spec);
  const std::string multi = param_string(spec, "multi_dim");
  ReductionProgram prog;
  if (dims.size() == 1 || multi == "merged") {
    Dims shape = spec.shape, tile = spec.tile;
    if (dims.size() > 1) {
      // Rule 3: reshape adjacent reduced dims into one, then reduce once.
      for (size_t i = 1; i < dims.size(); ++i)
        if (dims[i] != dims[i - 1] + 1)
          throw Error(fmt::format("{}: dims are not adjacent, so they cannot be merged by reshape "
                                  "(use params.multi_dim = \"chained\")",
                                  spec.op),
                      ErrorKind::kLimits);
      const size_t d0 = static_cast<size_t>(dims.front()), d1 = static_cast<size_t>(dims.back());
      // The tile must be one block of the reshaped axis: 1 on the outer merged dims, any
      // size on one dim k, the inner ones in full.
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
      Dims ms(shape.begin(), shape.begin() + static_cast<long>(d0));
      Dims mt(tile.begin(), tile.begin() + static_cast<long>(d0));
      int64_t merged_shape = 1, merged_tile = tile[k];
      for (size_t d = d0; d <= d1; ++d) merged_shape *= shape[d];
      for (size_t d = k + 1; d <= d1; ++d) merged_tile *= shape[d];
      ms.push_back(merged_shape);
      mt.push_back(merged_tile);
      for (size_t d = d1 + 1; d < shape.size(); ++d) {
        ms.push_back(shape[d]);
        mt.push_back(tile[d]);
      }
      shape = ms;
      tile = mt;
      dims = {static_cast<int>(d0)};
    }
    KernelSpec view = spec;
    view.shape = shape;
    view.dims = dims;
    Phase ph = make_phase(plan_reduction(shape, tile, dims, default_loop_axis(view, dims),
                                         spec.loop_count, merge, spec.op),
                          reduce_family(spec.op, red, count), Phase::Link::kNone);
    ph.fam.out_dtype = spec.dtype;
    prog.phases.push_back(std::move(ph));
    return prog;
  }
  // Chained: innermost dim first; each step writes an intermediate with that dim collapsed.
  Dims shape = spec.shape, tile = spec.tile;
  const int loop_axis = default_loop_axis(spec, dims);
  for (size_t i = dims.size(); i-- > 0;) {
    const int d = dims[i];
    const bool last = i == 0;
    Phase ph =
        make_phase(plan_reduction(shape, tile, {d}, loop_axis, spec.loop_count, merge, spec.op),
                   reduce_family(spec.op + "_dim" + std::to_string(d), red,
                                 last ? std::optional<double>(count) : std::nullopt),
                   prog.phases.empty() ? Phase::Link::kNone : Phase::Link::kByOrigin);
    ph.fam.out_dtype = spec.dtype;
    prog.phases.push_back(std::move(ph));
    shape[static_cast<size_t>(d)] = 1;
    tile[static_cast<size_t>(d)] = 1;
  }
  return prog;
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
  f.lower = lower_reducing_kernel;
  f.describe = describe_reduce;
  return f;
}

}  // namespace tilesim
