// softmax and logsoftmax over one dim, built as tile programs (softmax_program): a covering tile
// is one fused stage; a split row takes (max, sum of exp) in one pass whose partials merge with the
// rescaling merge (m = max m_b, s = sum s_b exp(m_b - m)), then re-reads the input. Under spmd with
// rows split over blocks each block writes its parts' (m_b, s_b) records (launch 0); in launch 1
// each block merges its own parts' rows, finishes them (1 / s or ln s) and writes its parts of the
// output (kernels/lower/program/split_stage.cpp). The (max, sum of exp) family below stays for the
// losses (kernels/families/loss.cpp).
#include <cmath>
#include <string>
#include <utility>

#include "kernels/families/families.hpp"
#include "kernels/families/one_op_program.hpp"
#include "kernels/families/reducing_params.hpp"
#include "kernels/ops/op_table.hpp"
#include "kernels/tiling/tile_rules.hpp"
#include "model/error.hpp"

namespace tilesim {

// What the second pass writes: probabilities exp(x - max) / sum, or their logarithm.
enum class SoftmaxForm { kProbabilities, kLog };

namespace {

// The kernel as a tile program. A row in one tile: PyPTO's composition m = amax(x), e = exp(x - m),
// s = sum(e), y = e / s (Ascend C SoftMax: ReduceMax, Sub, Exp, ReduceSum, Div), or for the log
// form m, s = sumexp(x) (its max the amax's), y = (x - m) - ln(s). A split row: the online
// statistic (X10), m = amax(x) and s = sumexp(x) in one pass over x whose partials merge as one
// (max, sum of exp) record; 1 / s (ln s) once per row where the row completes (X11); then the
// second pass over x, exp(x - m) * (1 / s) (x - m - ln s), in the task that finishes the row where
// it holds it (X12, apply_in_task). Merge "auto": tree under pypto, in_task under spmd (the
// statistic does not add atomically: split spmd rows merge in a second launch).
Program softmax_program(const KernelSpec& spec, const Hardware& hw) {
  validate_tile(spec, hw);
  if (spec.dims.size() != 1)
    throw Error(spec.op + ": dim: expected exactly one dim (got " +
                std::to_string(spec.dims.size()) + ")");
  const bool log = form_of<SoftmaxForm>(spec.op) == SoftmaxForm::kLog;
  check_reducing_partition(spec, 1, false, false);
  const MergeMode merge = merge_mode_of(spec, MergeMode::kTree);
  if (merge == MergeMode::kAtomic)
    throw Error(spec.op +
                    ": params.merge: \"atomic\" needs statistics that merge by sum, max or min; " +
                    spec.op + " does not (use auto, tree, chain or in_task)",
                ErrorKind::kParams);
  ReducingProgram b =
      reducing_program(spec, reducing_view(spec, spec.shape, spec.tile, spec.dims), hw, merge);
  const int d = spec.dims.front();
  Dims col = spec.shape;
  col[static_cast<size_t>(d)] = 1;
  const bool covers = spec.tile[static_cast<size_t>(d)] >= spec.shape[static_cast<size_t>(d)];
  const int x = b.tensor("x", spec.shape, true);
  const int m = b.add("amax", {x}, b.tensor("max", col));
  if (covers && !log) {
    const int t = b.add("sub", {x, m}, b.tensor("x_minus_max", spec.shape));
    const int e = b.add("exp", {t}, b.tensor("exp", spec.shape));
    const int s = b.add("sum", {e}, b.tensor("sum", col));
    b.add("div", {e, s}, b.tensor("y", spec.shape, false, true));
    return std::move(b.program());
  }
  const int s = b.add("sumexp", {x}, b.tensor("sum_exp", col));
  b.psg = spec.op + ":finalize";
  const int f = b.add(log ? "log" : "reciprocal", {s}, b.tensor(log ? "ln_sum" : "inv_sum", col));
  b.psg = spec.op + ":apply";
  const int t = b.add("sub", {x, m}, b.tensor("x_minus_max", spec.shape));
  const int y = b.tensor("y", spec.shape, false, true);
  if (log) {
    b.add("sub", {t, f}, y);
  } else {
    const int e = b.add("exp", {t}, b.tensor("exp", spec.shape));
    b.add("mul", {e, f}, y);
  }
  return std::move(b.program());
}

}  // namespace

KernelFamily softmax_kernels() {
  KernelFamily f;
  f.name = "softmax";
  f.spmd = true;
  f.ops = {{"softmax", "exp(x - max) / sum over one dim", SoftmaxForm::kProbabilities},
           {"logsoftmax", "x - max - ln(sum of exp) over one dim", SoftmaxForm::kLog}};
  f.params = {merge_param(), spmd_rows_param()};
  f.program = softmax_program;
  return f;
}

}  // namespace tilesim
