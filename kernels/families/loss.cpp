// Losses in two phases, built as tile programs (loss_program): phase 1 reduces each sample over
// its feature dim to one value, phase 2 takes the batch mean with its own tile.
//  - cross_entropy (N, C) with int32 targets (N, 1): per sample logsumexp(x) - x[target];
//  - mse (N, D): per sample mean((a - b)^2); the batch mean of those is the overall mean;
//  - triplet_margin (N, D): per sample max(|a - p + eps| - |a - n + eps| + margin, 0).
// Under spmd the blocks do phase 2 themselves (X13, kernels/lower/program/fold_stage.cpp): each
// folds the samples it finished and adds its share of the mean atomically. Samples split over
// blocks: mse's parts are scaled sums, so each block adds its parts' share directly (one launch);
// cross_entropy's max and triplet's square roots need the whole sample, so the launch that
// finishes them folds them.
#include <fmt/format.h>

#include <cmath>

#include "kernels/families/families.hpp"
#include "kernels/families/one_op_program.hpp"
#include "kernels/families/reducing_params.hpp"
#include "kernels/ops/op_table.hpp"
#include "kernels/tiling/tile_rules.hpp"
#include "model/error.hpp"

namespace tilesim {

// Each row's statistic before the batch mean: cross entropy's logsumexp(x) - x[target], the
// squared error of a pair, the triplet margin.
enum class LossForm { kCrossEntropy, kMse, kTriplet };

namespace {

constexpr double kTripletMargin = 1.0;
constexpr double kPairwiseEps = 1e-6;

// The kernel as a tile program: phase 1 each sample's statistic over its features (the spec's
// tile), phase 2 their batch mean (params.phase2_tile over the N per-sample values, a vector of
// N fp32 in GM). Cross entropy: m = amax(x), s = sumexp(x) (X10) and the target's logit
// pick(x, target) (X14) in one pass, then m + ln s - x[t] once per row where it completes;
// mse: mean((a - b)^2); triplet: |a - p + eps| and |a - n + eps| from two sums of squares, then
// max(d_p - d_n + margin, 0). Merge "auto": sums (mse, the batch mean) atomic, the others tree,
// under pypto; under spmd the blocks add their rows' share of the mean (X13).
Program loss_program(const KernelSpec& spec, const Hardware& hw) {
  validate_tile(spec, hw);
  if (spec.shape.size() != 2)
    throw Error(
        fmt::format("{}: shape {} must be (N, features)", spec.op, format_dims(spec.shape)));
  if (!spec.dims.empty() && spec.dims != std::vector<int>{1})
    throw Error(spec.op + ": dim: phase 1 reduces the feature dim 1; leave dim out or set 1");
  const int64_t n = spec.shape[0];
  // Phase 2 reduces a vector of N fp32 values; the default is the batch rounded up to whole UB
  // blocks (ub.align_bytes of fp32 values), at most 2048 values.
  const int64_t block = hw.ub.align_bytes / dtype_bytes(DType::kFp32);
  const int64_t t2 = has_param(spec, "phase2_tile")
                         ? param_ints(spec, "phase2_tile")[0]
                         : std::min<int64_t>(2048, (n + block - 1) / block * block);
  check_row_alignment(fmt::format("{}: params.phase2_tile {}", spec.op, format_dims({t2})), t2,
                      dtype_bytes(DType::kFp32), hw);
  check_reducing_partition(spec, 1, false, spec.partition == PartitionStyle::kSpmd);
  const LossForm form = form_of<LossForm>(spec.op);
  ReducingProgram b = reducing_program(
      spec, reducing_view(spec, spec.shape, spec.tile, {1}), hw,
      merge_mode_of(spec, form == LossForm::kMse ? MergeMode::kAtomic : MergeMode::kTree));
  const Dims col{n, 1};
  const auto f32 = DType::kFp32;
  int r = -1;  // each sample's statistic
  if (form == LossForm::kCrossEntropy) {
    const int x = b.tensor("logits", spec.shape, true);
    const int t = b.tensor("target", col, true, false, DType::kInt32);
    const int m = b.add("amax", {x}, b.tensor("max", col, false, false, f32));
    const int s = b.add("sumexp", {x}, b.tensor("sum_exp", col, false, false, f32));
    const int xt = b.add("pick", {x, t}, b.tensor("target_logit", col, false, false, f32));
    b.psg = spec.op + ":finalize";
    const int ls = b.add("log", {s}, b.tensor("ln_sum", col, false, false, f32));
    const int lse = b.add("add", {m, ls}, b.tensor("lse", col, false, false, f32));
    r = b.add("sub", {lse, xt}, b.tensor("per_sample", col, false, false, f32));
  } else if (form == LossForm::kMse) {
    const int a = b.tensor("a", spec.shape, true);
    const int y = b.tensor("b", spec.shape, true);
    const int d = b.add("sub", {a, y}, b.tensor("diff", spec.shape));
    const int sq = b.add("mul", {d, d}, b.tensor("sq", spec.shape));
    r = b.add("mean", {sq}, b.tensor("per_sample", col, false, false, f32));
  } else {
    const int a = b.tensor("anchor", spec.shape, true);
    auto squares = [&](const std::string& name) {
      const int o = b.tensor(name, spec.shape, true);
      const int d = b.add("sub", {a, o}, b.tensor(name + "_diff", spec.shape));
      const int e = b.add("add", {d}, b.tensor(name + "_eps", spec.shape), kPairwiseEps);
      return b.add("mul", {e, e}, b.tensor(name + "_sq", spec.shape));
    };
    auto distance_sq = [&](const std::string& name, int squared) {
      return b.add("sum", {squared}, b.tensor(name + "_dist_sq", col, false, false, f32));
    };
    int sp = -1, sn = -1;
    if (spec.tile[1] >= spec.shape[1]) {
      // A tile holding whole samples: p is summed before n is read, so n may take p's buffer
      // where UB is short (the family's two live inputs).
      sp = distance_sq("positive", squares("positive"));
      sn = distance_sq("negative", squares("negative"));
    } else {
      // Samples split over tiles: both sums in one pass over the tiles (X9), a read once.
      const int qp = squares("positive");
      const int qn = squares("negative");
      sp = distance_sq("positive", qp);
      sn = distance_sq("negative", qn);
    }
    b.psg = spec.op + ":finalize";
    const int dp = b.add("sqrt", {sp}, b.tensor("dist_p", col, false, false, f32));
    const int dn = b.add("sqrt", {sn}, b.tensor("dist_n", col, false, false, f32));
    const int df = b.add("sub", {dp, dn}, b.tensor("dist_diff", col, false, false, f32));
    const int mg = b.add("add", {df}, b.tensor("margin", col, false, false, f32), kTripletMargin);
    r = b.add("relu", {mg}, b.tensor("per_sample", col, false, false, f32));
  }
  // Phase 2: the batch mean over the per-sample values, its own tile, outside any loop.
  Program& p = b.program();
  p.tiles.push_back({"phase2", false, {t2, 1}, {}});
  b.base.op.tile = static_cast<int>(p.tiles.size()) - 1;
  b.base.op.loop = -1;
  b.dims = {0};
  // Under spmd the blocks add their rows' share (X13), which needs no merge of the stage's own.
  b.merge = merge_mode_of(spec, MergeMode::kAtomic);
  b.psg = spec.op + "_batch";
  b.add("mean", {r}, b.tensor("loss", {1, 1}, false, true, f32));
  return std::move(p);
}

}  // namespace

KernelFamily loss_kernels() {
  KernelFamily f;
  f.name = "loss";
  f.spmd = true;
  f.ops = {{"cross_entropy", "(N, C) logits: batch mean of logsumexp(x) - x[target]",
            LossForm::kCrossEntropy},
           {"mse", "(N, D) pairs: mean of (a - b)^2", LossForm::kMse},
           {"triplet_margin", "(N, D) triplets: batch mean of max(|a-p| - |a-n| + 1, 0)",
            LossForm::kTriplet}};
  ParamDecl t2;
  t2.name = "phase2_tile";
  t2.type = ParamType::kIntList;
  t2.list_size = 1;
  t2.min = 1;
  t2.max = int64_t{1} << 24;  // 64 MiB of fp32: far past any UB, and its bytes cannot wrap
  t2.doc =
      "[t]: the batch-mean phase's tile (default min(2048, N rounded up to whole UB blocks of "
      "fp32))";
  f.params = {merge_param(), t2, spmd_rows_param()};
  f.program = loss_program;
  return f;
}

}  // namespace tilesim
