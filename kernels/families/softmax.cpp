// softmax and logsoftmax over one dim. A split reduction axis carries (max, sum of exp) partials
// whose merge rescales by exp(old max - new max); the output pass then re-reads the input.
// Under spmd with rows split over blocks, the online form is what lets two launches suffice: an
// atomic max could combine the maxima, but the sum of exp needs the row's global max first, which
// would cost a third pass over the input (max; sum of exp(x - max); output). Instead each block
// keeps its part's local (m_b, s_b = sum exp(x - m_b)) and writes it to its own GM slot (launch 0);
// in launch 1 every block holding part of the row reads the row's slots, merges them with the
// rescaling merge (m = max m_b, s = sum s_b exp(m_b - m)) and writes its part of the output.
// The functional proof merges the parts' partials in the same order
// (kernels/functional/functional.cpp).
#include <cmath>

#include "kernels/families/families.hpp"
#include "kernels/lower/reduction_program.hpp"
#include "model/error.hpp"

namespace tilesim {

// What the second pass writes: probabilities exp(x - max) / sum, or their logarithm.
enum class SoftmaxForm { kProbabilities, kLog };

namespace {

// Partial statistics (m, s): m = max, s = sum(exp(x - m)).
Stats merge_max_sum(const Stats& a, const Stats& b) {
  const double m = std::max(a[0], b[0]);
  return {m, a[1] * std::exp(a[0] - m) + b[1] * std::exp(b[0] - m)};
}

}  // namespace

void add_max_sum_partial(const TileReduceGeometry& g, DType dt, std::vector<VecOp>& ops) {
  add_reduce_ops(g, dt, ops);                                // max
  add_elementwise(VecClass::kSimple, dt, g.elems, 1, ops);   // x - max (broadcast)
  add_elementwise(VecClass::kComplex, dt, g.elems, 1, ops);  // exp
  add_reduce_ops(g, dt, ops);                                // sum
}

void add_max_sum_combine(int64_t n, std::vector<VecOp>& ops) {
  add_elementwise(VecClass::kSimple, DType::kFp32, n, 3, ops);   // new max, two differences
  add_elementwise(VecClass::kComplex, DType::kFp32, n, 2, ops);  // two rescale factors
  add_elementwise(VecClass::kSimple, DType::kFp32, n, 3, ops);   // two products and a sum
}

ReduceFamily max_sum_family(const std::string& psg) {
  ReduceFamily f;
  f.psg = psg;
  f.stats = 2;
  f.partial_work = add_max_sum_partial;
  f.combine_work = add_max_sum_combine;
  f.partial = [](const std::vector<Eigen::ArrayXd>& v) -> Stats {
    const double m = v[0].maxCoeff();
    return {m, (v[0] - m).exp().sum()};
  };
  f.combine = merge_max_sum;
  return f;
}

namespace {

ReductionProgram describe_softmax(const KernelSpec& spec) {
  if (spec.dims.size() != 1)
    throw Error(spec.op + ": dim: expected exactly one dim (got " +
                std::to_string(spec.dims.size()) + ")");
  const bool log = form_of<SoftmaxForm>(spec.op) == SoftmaxForm::kLog;
  ReduceFamily f = max_sum_family(spec.op);
  f.second_pass = true;
  f.fuse_single = true;
  f.finalize_work = [](int64_t n, std::vector<VecOp>& ops) {
    add_elementwise(VecClass::kComplex, DType::kFp32, n, 1, ops);  // 1/s or ln(s)
  };
  f.second_work = [log](const TileReduceGeometry& g, DType dt, std::vector<VecOp>& ops) {
    add_elementwise(VecClass::kSimple, dt, g.elems, log ? 2 : 1, ops);  // x - m (- ln s)
    if (!log) {
      add_elementwise(VecClass::kComplex, dt, g.elems, 1, ops);  // exp
      add_elementwise(VecClass::kSimple, dt, g.elems, 1, ops);   // * 1/s
    }
  };
  // A row that fits one tile: exp(x - max) is still in UB from the statistics, so only the
  // division by the sum is left, as Ascend C's SoftMax computes a row (hicann/asc-devkit
  // impl/adv_api/detail/activation/softmax, SoftMaxGenericNDImpl: ReduceMax, Sub, Exp,
  // ReduceSum, Div); the log form's x - max - ln(s) is two Subs either way.
  if (!log)
    f.fused_second_work = [](const TileReduceGeometry& g, DType dt, std::vector<VecOp>& ops) {
      add_elementwise(VecClass::kComplex, dt, g.elems, 1, ops);  // / s
    };
  f.finalize = [](const Stats& s, double) -> Stats { return {s[0], s[1]}; };
  f.second = [log](const std::vector<double>& x, const Stats& fin) {
    return log ? x[0] - fin[0] - std::log(fin[1]) : std::exp(x[0] - fin[0]) / fin[1];
  };
  ReductionProgram prog;
  prog.phases.push_back(make_phase(
      plan_reduction(spec.shape, spec.tile, spec.dims, default_loop_axis(spec, spec.dims),
                     spec.loop_count, merge_mode_of(spec), spec.op),
      f, Phase::Link::kNone));
  return prog;
}

}  // namespace

KernelFamily softmax_kernels() {
  KernelFamily f;
  f.name = "softmax";
  f.spmd = true;
  f.ops = {{"softmax", "exp(x - max) / sum over one dim", SoftmaxForm::kProbabilities},
           {"logsoftmax", "x - max - ln(sum of exp) over one dim", SoftmaxForm::kLog}};
  f.params = {merge_param(), spmd_rows_param()};
  f.lower = lower_reducing_kernel;
  f.describe = describe_softmax;
  return f;
}

}  // namespace tilesim
