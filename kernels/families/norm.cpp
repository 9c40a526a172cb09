// Normalisations: layernorm and rmsnorm over chosen dims (the last by default, or a middle C
// axis), groupnorm (statistics per sample and group of channels) and batchnorm (statistics per
// channel over N, H, W). Two passes: statistics, then a pass that re-reads the input; one when a
// tile covers the row.
// Under spmd (kernels/lower/reduction_program.cpp share_over_blocks) a block holds whole rows
// (groups, channels) and normalises a row that fits one sub-tile in the same pass, or the blocks
// share the rows' sub-tiles: sums and sums of squares add atomically in launch 0, launch 1
// normalises.
#include <fmt/format.h>

#include <cmath>

#include "kernels/families/families.hpp"
#include "kernels/lower/reduction_program.hpp"
#include "model/error.hpp"

namespace tilesim {

// Which statistics a norm takes and whether it centres: over the given (or last) dims, with the
// mean (layer) or the mean square only (rms); per sample and channel group (group); per channel
// over the batch and spatial dims (batch).
enum class NormForm { kLayer, kRms, kGroup, kBatch };

namespace {

constexpr double kEps = 1e-5;

// rms: statistics (sum of squares); otherwise (sum, sum of squares).
ReduceFamily norm_family(const std::string& psg, bool rms) {
  ReduceFamily f;
  f.psg = psg;
  f.stats = rms ? 1 : 2;
  f.atomic_merge = true;  // sums of x and x^2
  f.second_pass = true;
  // A row (group, channel) that one tile covers is normalised in the task that reads it: PyPTO's
  // partitioner keeps the statistics and the apply in one subgraph then (hicann/pypto
  // docs/tutorials/debug/performance.md, RMSNorm with the tile covering the last dim: no GM
  // transfer between them), as softmax's row does.
  f.fuse_single = true;
  f.partial_work = [rms](const TileReduceGeometry& g, DType dt, std::vector<VecOp>& ops) {
    add_elementwise(VecClass::kSimple, dt, g.elems, 1, ops);  // x * x
    add_reduce_ops(g, dt, ops);                               // sum of squares
    if (!rms) add_reduce_ops(g, dt, ops);                     // sum
  };
  f.combine_work = [rms](int64_t n, std::vector<VecOp>& ops) {
    add_elementwise(VecClass::kSimple, DType::kFp32, n, rms ? 1 : 2, ops);
  };
  f.finalize_work = [rms](int64_t n, std::vector<VecOp>& ops) {
    add_elementwise(VecClass::kSimple, DType::kFp32, n, rms ? 2 : 4, ops);  // mean, var, + eps
    add_elementwise(VecClass::kComplex, DType::kFp32, n, 1, ops);           // 1 / sqrt
  };
  f.second_work = [rms](const TileReduceGeometry& g, DType dt, std::vector<VecOp>& ops) {
    add_elementwise(VecClass::kSimple, dt, g.elems, rms ? 1 : 2, ops);  // (x - mean) * rstd
  };
  f.partial = [rms](const std::vector<Eigen::ArrayXd>& v) -> Stats {
    if (rms) return {v[0].square().sum()};
    return {v[0].sum(), v[0].square().sum()};
  };
  f.combine = [rms](const Stats& a, const Stats& b) -> Stats {
    if (rms) return {a[0] + b[0]};
    return {a[0] + b[0], a[1] + b[1]};
  };
  f.finalize = [rms](const Stats& s, double n) -> Stats {
    if (rms) return {1.0 / std::sqrt(s[0] / n + kEps)};
    const double mean = s[0] / n;
    return {mean, 1.0 / std::sqrt(s[1] / n - mean * mean + kEps)};
  };
  f.second = [rms](const std::vector<double>& x, const Stats& fin) {
    return rms ? x[0] * fin[0] : (x[0] - fin[0]) * fin[1];
  };
  return f;
}

Phase norm_phase(const KernelSpec& spec, const Dims& shape, const Dims& tile,
                 const std::vector<int>& dims, const std::string& psg, bool rms) {
  KernelSpec view = spec;
  view.shape = shape;
  return make_phase(plan_reduction(shape, tile, dims, default_loop_axis(view, dims),
                                   spec.loop_count, merge_mode_of(spec), spec.op),
                    norm_family(psg, rms), Phase::Link::kNone);
}

ReductionProgram describe_norm(const KernelSpec& spec) {
  ReductionProgram prog;
  const auto rank = static_cast<int>(spec.shape.size());
  const NormForm form = form_of<NormForm>(spec.op);
  if (form == NormForm::kLayer || form == NormForm::kRms) {
    std::vector<int> dims = spec.dims.empty() ? std::vector<int>{rank - 1} : spec.dims;
    prog.phases.push_back(
        norm_phase(spec, spec.shape, spec.tile, dims, spec.op, form == NormForm::kRms));
    return prog;
  }
  if (rank < 3)
    throw Error(fmt::format("{}: shape {} must be (N, C, ...) with at least 3 dims", spec.op,
                            format_dims(spec.shape)));
  if (form == NormForm::kBatch) {
    std::vector<int> dims = {0};
    for (int d = 2; d < rank; ++d) dims.push_back(d);
    if (!spec.dims.empty() && spec.dims != dims)
      throw Error(spec.op + ": dim: batchnorm reduces N and the spatial dims; leave dim out");
    prog.phases.push_back(norm_phase(spec, spec.shape, spec.tile, dims, spec.op, false));
    return prog;
  }
  // groupnorm: view (N, C, rest...) as (N * G, C / G, rest...) and reduce all but the first.
  const int64_t groups = param_int(spec, "groups");
  const int64_t n = spec.shape[0], c = spec.shape[1];
  if (c % groups != 0)
    throw Error(
        fmt::format("{}: params.groups {} does not divide the {} channels", spec.op, groups, c),
        ErrorKind::kParams);
  if (!spec.dims.empty())
    throw Error(spec.op +
                ": dim: groupnorm reduces each group's channels and spatial dims; leave dim out");
  const int64_t cpg = c / groups;
  Dims shape = spec.shape, tile = spec.tile;
  shape[0] = n * groups;
  shape[1] = cpg;
  const int64_t tc = spec.tile[1], tn = spec.tile[0];
  if (tc <= cpg) {
    if (tn != 1)
      throw Error(fmt::format("{}: tile[0] = {} must be 1 when tile[1] = {} is within one group "
                              "of {} channels",
                              spec.op, tn, tc, cpg),
                  ErrorKind::kLimits);
    tile[0] = 1;
  } else {
    if (tc % cpg != 0 || (tn != 1 && tc != c))
      throw Error(fmt::format("{}: tile[1] = {} must be a multiple of the {} channels per group "
                              "(and the full {} channels when tile[0] > 1)",
                              spec.op, tc, cpg, c),
                  ErrorKind::kLimits);
    tile[0] = tn * (tc / cpg);
    tile[1] = cpg;
  }
  std::vector<int> dims;
  for (int d = 1; d < rank; ++d) dims.push_back(d);
  prog.phases.push_back(norm_phase(spec, shape, tile, dims, spec.op, false));
  return prog;
}

}  // namespace

KernelFamily norm_kernels() {
  KernelFamily f;
  f.name = "norm";
  f.spmd = true;
  f.ops = {
      {"layernorm", "(x - mean) * rstd over dim(s), the last by default", NormForm::kLayer},
      {"rmsnorm", "x * rstd(x^2) over dim(s), the last by default", NormForm::kRms},
      {"groupnorm", "(N, C, ...): statistics per sample and group of channels", NormForm::kGroup},
      {"batchnorm", "(N, C, ...): statistics per channel over N and the spatial dims",
       NormForm::kBatch}};
  ParamDecl groups;
  groups.name = "groups";
  groups.type = ParamType::kInt;
  groups.required = true;
  groups.min = 1;
  groups.ops = {"groupnorm"};
  groups.doc = "channel groups, an integer >= 1 dividing C";
  f.params = {merge_param(), groups, spmd_rows_param()};
  f.lower = lower_reducing_kernel;
  f.describe = describe_norm;
  return f;
}

}  // namespace tilesim
