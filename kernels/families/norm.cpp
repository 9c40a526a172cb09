// Normalisations: layernorm and rmsnorm over chosen dims (the last by default, or a middle C
// axis), groupnorm (statistics per sample and group of channels) and batchnorm (statistics per
// channel over N, H, W), built as tile programs (norm_program): statistics in one pass, then a
// pass that re-reads the input; one when a tile covers the row. Under spmd a block holds whole
// rows (groups, channels), or the blocks share the rows' sub-tiles: sums and sums of squares add
// atomically in launch 0 and launch 1 finishes each block's rows and normalises its parts
// (kernels/lower/program/split_stage.cpp).
#include <fmt/format.h>

#include <cmath>
#include <optional>
#include <string>
#include <utility>

#include "kernels/families/families.hpp"
#include "kernels/families/one_op_program.hpp"
#include "kernels/families/reducing_params.hpp"
#include "kernels/ops/op_table.hpp"
#include "kernels/tiling/tile_rules.hpp"
#include "model/error.hpp"

namespace tilesim {

// Which statistics a norm takes and whether it centres: over the given (or last) dims, with the
// mean (layer) or the mean square only (rms); per sample and channel group (group); per channel
// over the batch and spatial dims (batch).
enum class NormForm { kLayer, kRms, kGroup, kBatch };

namespace {

constexpr double kEps = 1e-5;

// The statistics' view of the tensor: the shape as given over the given (or last) dims; groupnorm's
// (N * G, C / G, ...) over all but the first; batchnorm's N and spatial dims. The tile follows.
struct NormView {
  Dims shape, tile;
  std::vector<int> dims;
};

NormView norm_view(const KernelSpec& spec) {
  const auto rank = static_cast<int>(spec.shape.size());
  const NormForm form = form_of<NormForm>(spec.op);
  if (form == NormForm::kLayer || form == NormForm::kRms) {
    return {spec.shape, spec.tile, spec.dims.empty() ? std::vector<int>{rank - 1} : spec.dims};
  }
  if (rank < 3)
    throw Error(fmt::format("{}: shape {} must be (N, C, ...) with at least 3 dims", spec.op,
                            format_dims(spec.shape)));
  if (form == NormForm::kBatch) {
    std::vector<int> dims = {0};
    for (int d = 2; d < rank; ++d) dims.push_back(d);
    if (!spec.dims.empty() && spec.dims != dims)
      throw Error(spec.op + ": dim: batchnorm reduces N and the spatial dims; leave dim out");
    return {spec.shape, spec.tile, dims};
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
  return {shape, tile, dims};
}

// The kernel as a tile program over the family's view (norm_view): sq = x * x, then the statistics
// (sum of squares; with the mean, sum of x first) in one pass, the epilogue on them (mean,
// variance, + eps, 1 / sqrt) once per row where the row completes, and the second pass (x - mean) *
// rstd in the task that finishes the row where it holds it (apply_in_task). Merge "auto": atomic
// under pypto (sums add), in_task under spmd.
Program norm_program(const KernelSpec& spec, const Hardware& hw) {
  validate_tile(spec, hw);
  const NormView v = norm_view(spec);
  const bool rms = form_of<NormForm>(spec.op) == NormForm::kRms;
  check_reducing_partition(spec, 1, v.shape != spec.shape || v.dims.size() != 1, false);
  ReducingProgram b = reducing_program(spec, reducing_view(spec, v.shape, v.tile, v.dims), hw,
                                       merge_mode_of(spec, MergeMode::kAtomic));
  Dims stat = v.shape;
  double count = 1;
  for (int d : v.dims) {
    count *= static_cast<double>(stat[static_cast<size_t>(d)]);
    stat[static_cast<size_t>(d)] = 1;
  }
  const int x = b.tensor("x", v.shape, true);
  const int sq = b.add("mul", {x, x}, b.tensor("sq", v.shape));
  const int s1 = rms ? -1 : b.add("sum", {x}, b.tensor("sum", stat));
  const int s2 = b.add("sum", {sq}, b.tensor("sum_sq", stat));
  const int y = b.tensor("y", v.shape, false, true);
  b.psg = spec.op + ":finalize";
  if (rms) {
    const int ms = b.add("mul", {s2}, b.tensor("mean_sq", stat), 1.0 / count);
    const int eps = b.add("add", {ms}, b.tensor("mean_sq_eps", stat), kEps);
    const int r = b.add("rsqrt", {eps}, b.tensor("rstd", stat));
    b.psg = spec.op + ":apply";
    b.add("mul", {x, r}, y);
    return std::move(b.program());
  }
  const int mean = b.add("mul", {s1}, b.tensor("mean", stat), 1.0 / count);
  const int e2 = b.add("mul", {s2}, b.tensor("mean_sq", stat), 1.0 / count);
  const int m2 = b.add("mul", {mean, mean}, b.tensor("mean2", stat));
  const int var = b.add("sub", {e2, m2}, b.tensor("var", stat));
  const int eps = b.add("add", {var}, b.tensor("var_eps", stat), kEps);
  const int r = b.add("rsqrt", {eps}, b.tensor("rstd", stat));
  b.psg = spec.op + ":apply";
  const int xc = b.add("sub", {x, mean}, b.tensor("centred", v.shape));
  b.add("mul", {xc, r}, y);
  return std::move(b.program());
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
  f.program = norm_program;
  return f;
}

}  // namespace tilesim
