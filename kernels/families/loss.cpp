// Losses in two phases, each with its own tile: phase 1 reduces each sample over its feature dim
// to one value, phase 2 takes the batch mean.
//  - cross_entropy (N, C): per sample logsumexp(x) - x[target] (targets gathered per row);
//  - mse (N, D): per sample mean((a - b)^2); the batch mean of those is the overall mean;
//  - triplet_margin (N, D): per sample max(|a - p + eps| - |a - n + eps| + margin, 0).
// Under spmd the blocks do phase 2 themselves (Phase::Link::kInBlocks): each folds the samples it
// finished and adds its share of the mean atomically. Samples split over blocks: mse's parts are
// scaled sums, so each block adds its parts' share directly (one launch); cross_entropy's max and
// triplet's square roots need the whole sample, so a second launch finishes them.
#include <fmt/format.h>

#include <cmath>

#include "kernels/families/families.hpp"
#include "kernels/lower/reduction_program.hpp"
#include "model/error.hpp"

namespace tilesim {

// Each row's statistic before the batch mean: cross entropy's logsumexp(x) - x[target], the
// squared error of a pair, the triplet margin.
enum class LossForm { kCrossEntropy, kMse, kTriplet };

namespace {

constexpr double kTripletMargin = 1.0;
constexpr double kPairwiseEps = 1e-6;

ReduceFamily mean_family(const std::string& psg) {
  ReduceFamily f;
  f.psg = psg;
  f.fp32_inputs = true;
  f.atomic_merge = true;
  f.partial_work = [](const TileReduceGeometry& g, DType, std::vector<VecOp>& ops) {
    add_reduce_ops(g, DType::kFp32, ops);
  };
  f.combine_work = [](int64_t n, std::vector<VecOp>& ops) {
    add_elementwise(VecClass::kSimple, DType::kFp32, n, 1, ops);
  };
  f.finalize_work = f.combine_work;
  f.partial = [](const std::vector<Eigen::ArrayXd>& v) -> Stats { return {v[0].sum()}; };
  f.combine = [](const Stats& a, const Stats& b) -> Stats { return {a[0] + b[0]}; };
  f.finalize = [](const Stats& s, double n) -> Stats { return {s[0] / n}; };
  return f;
}

ReduceFamily cross_entropy_family() {
  ReduceFamily f = max_sum_family("cross_entropy");
  f.stats = 3;        // (max, sum of exp, the target's logit)
  f.side_inputs = 1;  // one-hot targets, for the math; the work gathers one index per row
  f.extra_loads = [](const TileReduceGeometry& g, std::vector<DmaOp>& loads) {
    loads.push_back(DmaOp{DmaDir::kRead, 1, g.out_elems * 4, 0});  // int32 targets of the rows
  };
  const auto partial = f.partial;
  f.partial = [partial](const std::vector<Eigen::ArrayXd>& v) -> Stats {
    Stats s = partial(v);
    s.push_back((v[0] * v[1]).sum());  // the target's logit, if it lies in this segment
    return s;
  };
  const auto combine = f.combine;
  f.combine = [combine](const Stats& a, const Stats& b) -> Stats {
    Stats s = combine(a, b);
    s.push_back(a[2] + b[2]);
    return s;
  };
  f.combine_work = [](int64_t n, std::vector<VecOp>& ops) {
    add_max_sum_combine(n, ops);
    add_elementwise(VecClass::kSimple, DType::kFp32, n, 1, ops);
  };
  f.partial_work = [](const TileReduceGeometry& g, DType dt, std::vector<VecOp>& ops) {
    add_max_sum_partial(g, dt, ops);
    add_elementwise(VecClass::kSimple, dt, g.out_elems, 1, ops);  // gather the target logit
  };
  f.finalize_work = [](int64_t n, std::vector<VecOp>& ops) {
    add_elementwise(VecClass::kComplex, DType::kFp32, n, 1, ops);  // ln(s)
    add_elementwise(VecClass::kSimple, DType::kFp32, n, 2, ops);   // m + ln(s) - x[t]
  };
  f.finalize = [](const Stats& s, double) -> Stats { return {s[0] + std::log(s[1]) - s[2]}; };
  return f;
}

ReduceFamily mse_family() {
  ReduceFamily f;
  f.psg = "mse";
  f.inputs = 2;
  f.atomic_merge = true;  // a sum, scaled linearly
  f.linear_finalize = true;
  f.partial_work = [](const TileReduceGeometry& g, DType dt, std::vector<VecOp>& ops) {
    add_elementwise(VecClass::kSimple, dt, g.elems, 2, ops);  // a - b, squared
    add_reduce_ops(g, dt, ops);
  };
  f.combine_work = [](int64_t n, std::vector<VecOp>& ops) {
    add_elementwise(VecClass::kSimple, DType::kFp32, n, 1, ops);
  };
  f.finalize_work = f.combine_work;
  f.partial = [](const std::vector<Eigen::ArrayXd>& v) -> Stats {
    return {(v[0] - v[1]).square().sum()};
  };
  f.combine = [](const Stats& a, const Stats& b) -> Stats { return {a[0] + b[0]}; };
  f.finalize = [](const Stats& s, double n) -> Stats { return {s[0] / n}; };
  return f;
}

ReduceFamily triplet_family() {
  ReduceFamily f;
  f.psg = "triplet_margin";
  f.inputs = 3;
  f.live_inputs = 2;  // a stays; p is consumed into its distance before n is loaded
  f.stats = 2;
  f.partial_work = [](const TileReduceGeometry& g, DType dt, std::vector<VecOp>& ops) {
    add_elementwise(VecClass::kSimple, dt, g.elems, 6, ops);  // 2 x (difference, + eps, square)
    add_reduce_ops(g, dt, ops);
    add_reduce_ops(g, dt, ops);
  };
  f.combine_work = [](int64_t n, std::vector<VecOp>& ops) {
    add_elementwise(VecClass::kSimple, DType::kFp32, n, 2, ops);
  };
  f.finalize_work = [](int64_t n, std::vector<VecOp>& ops) {
    add_elementwise(VecClass::kComplex, DType::kFp32, n, 2, ops);  // two sqrt
    add_elementwise(VecClass::kSimple, DType::kFp32, n, 3, ops);   // difference, margin, relu
  };
  f.partial = [](const std::vector<Eigen::ArrayXd>& v) -> Stats {
    return {(v[0] - v[1] + kPairwiseEps).square().sum(),
            (v[0] - v[2] + kPairwiseEps).square().sum()};
  };
  f.combine = [](const Stats& a, const Stats& b) -> Stats { return {a[0] + b[0], a[1] + b[1]}; };
  f.finalize = [](const Stats& s, double) -> Stats {
    return {std::max(std::sqrt(s[0]) - std::sqrt(s[1]) + kTripletMargin, 0.0)};
  };
  return f;
}

ReductionProgram describe_loss(const KernelSpec& spec) {
  if (spec.shape.size() != 2)
    throw Error(
        fmt::format("{}: shape {} must be (N, features)", spec.op, format_dims(spec.shape)));
  if (!spec.dims.empty() && spec.dims != std::vector<int>{1})
    throw Error(spec.op + ": dim: phase 1 reduces the feature dim 1; leave dim out or set 1");
  const int64_t n = spec.shape[0];
  // Phase 2 reduces a vector of N fp32 values; the lowering checks its tile's alignment. The
  // default is the batch rounded up to 8 values (32 B, the A2's UB alignment), at most 2048.
  const int64_t t2 = has_param(spec, "phase2_tile") ? param_ints(spec, "phase2_tile")[0]
                                                    : std::min<int64_t>(2048, (n + 7) / 8 * 8);
  const MergeMode merge = merge_mode_of(spec);
  const LossForm form = form_of<LossForm>(spec.op);
  ReduceFamily f1 = form == LossForm::kCrossEntropy ? cross_entropy_family()
                    : form == LossForm::kMse        ? mse_family()
                                                    : triplet_family();
  ReductionProgram prog;
  prog.phases.push_back(
      make_phase(plan_reduction(spec.shape, spec.tile, {1}, 0, spec.loop_count, merge, spec.op), f1,
                 Phase::Link::kNone));
  prog.phases.push_back(make_phase(plan_reduction({n}, {t2}, {0}, 0, 1, merge, spec.op),
                                   mean_family(spec.op + "_batch"), Phase::Link::kByRows));
  prog.phases.back().tile_key = "params.phase2_tile";
  return prog;
}

}  // namespace

KernelFamily loss_kernels() {
  KernelFamily f;
  f.name = "loss";
  f.spmd = true;
  f.spmd_folds_second_phase = true;
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
  t2.doc = "[t]: the batch-mean phase's tile (default min(2048, N rounded up to 8))";
  f.params = {merge_param(), t2, spmd_rows_param()};
  f.lower = lower_reducing_kernel;
  f.describe = describe_loss;
  return f;
}

}  // namespace tilesim
