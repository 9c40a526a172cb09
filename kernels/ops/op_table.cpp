#include "kernels/ops/op_table.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>

#include "model/enum_names.hpp"

namespace tilesim {

namespace {

constexpr VecClass S = VecClass::kSimple;
constexpr VecClass C = VecClass::kComplex;  // sqrt, reciprocal, divs: no calibration of theirs
constexpr VecClass E = VecClass::kExpLn;    // exp, ln
constexpr VecClass D = VecClass::kDiv;      // div
constexpr VecClass R = VecClass::kRsqrt;    // rsqrt
constexpr VecClass Q = VecClass::kScalarElement;  // on the scalar unit, element by element

double gelu(double x) {
  // The tanh form as Ascend C computes it: x / (1 + exp(-sqrt(8 / pi) * (x + 0.044715 x^3))).
  return x / (1.0 + std::exp(-std::sqrt(8.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}

double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

using Value = std::function<double(double, double)>;

OpRecord other(std::string name, OpKind kind, std::string doc, std::vector<VecClass> instrs,
               DTypeSet operands = DTypeSet::floats(), OutDType out = OutDType::kOperand,
               std::string cost_doc = "") {
  OpRecord r{std::move(name), kind, std::move(doc), std::move(instrs)};
  r.operands = operands;
  r.out = out;
  r.cost_doc = std::move(cost_doc);
  return r;
}

OpRecord unary(std::string name, std::string doc, std::vector<VecClass> instrs, int scratch,
               Value v, DTypeSet operands = DTypeSet::floats()) {
  OpRecord r = other(std::move(name), OpKind::kUnary, std::move(doc), std::move(instrs), operands);
  r.scratch_tiles = scratch;
  r.value = std::move(v);
  return r;
}

// Ops the vector unit also runs on int32 at the fp32 rate per 256 B repeat (Ascend C Add, Sub,
// Mul, Max, Min take int32; triton-ascend's performance guidelines,
// docs/en/migration_guide/performance_guidelines.md, list int64 add as the one falling back to
// the scalar unit).
constexpr DTypeSet kWithInt32 = {DType::kFp32, DType::kFp16, DType::kBf16, DType::kInt32};

OpRecord binary(std::string name, std::string doc, VecClass instr, bool n_ary, Value v,
                DTypeSet operands = DTypeSet::floats()) {
  OpRecord r = unary(std::move(name), std::move(doc), {instr}, 0, std::move(v), operands);
  r.kind = OpKind::kBinary;
  r.n_ary = n_ary;
  return r;
}

// Instruction counts per tile. One-instruction ops are Ascend C basic vector APIs (Exp, Ln, Sqrt,
// Rsqrt, Reciprocal, Abs, Relu; Add, Sub, Mul, Div, Max, Min; Muls for neg; Select; Cast). The
// composed ones follow their Ascend C decomposition:
//  - gelu: cann-ops src/math/gelu (docs/Gelu.md: "Mul, Muls, Add, Adds, Exp and Div"):
//    x^2, x^3 (Mul x2), 0.044715 x^3 (Muls), x + . (Add), * -sqrt(8/pi) (Muls), Exp, + 1 (Adds),
//    x / . (Div): 6 simple, an exp_ln and a div, one temporary besides the output;
//  - sigmoid: 1 / (1 + exp(-x)): Muls, Exp, Adds, Reciprocal (the pattern PTO-ISA's generated
//    Ascend C uses for sigmoid-based GELU);
//  - silu = x * sigmoid(x): the sigmoid's four plus one Mul, keeping x alive (one temporary);
//  - tanh = (exp(2x) - 1) / (exp(2x) + 1): Muls, Exp, Adds, Adds, Div, one temporary;
//  - erf: Ascend C's Erf high-level API (CANN 8.1 ascendc/include/highlevel_api/impl/math/erf/
//    erf_common_impl.h): x clipped to [-3.92, 3.92] (Mins, Maxs), P(x) = x * (a degree-5
//    polynomial in x^2) (Mul, Muls, Adds, 4 x (Mul, Adds), Mul), Q(x) = a degree-5 polynomial in
//    x^2 (Adds, 4 x (Mul, Adds)), P / Q (Div): 23 simple, 1 div, three temporaries (its
//    ERF_FLOAT_CALC_PROCEDURE buffers);
//  - round (fp32): Muls by 10^decimals, Cast with CAST_RINT, Divs by it (hicann/pypto's TRound,
//    framework/src/interface/tileop/vector/unary.h, at decimals 0).
std::vector<OpRecord> elementwise_records() {
  return {
      unary("exp", "z = exp(x)", {E}, 0, [](double x, double) { return std::exp(x); }),
      unary("log", "z = ln(x)", {E}, 0, [](double x, double) { return std::log(x); }),
      unary("sqrt", "z = sqrt(x)", {C}, 0, [](double x, double) { return std::sqrt(x); }),
      unary("rsqrt", "z = 1 / sqrt(x)", {R}, 0,
            [](double x, double) { return 1.0 / std::sqrt(x); }),
      unary("reciprocal", "z = 1 / x", {C}, 0, [](double x, double) { return 1.0 / x; }),
      unary("abs", "z = |x|", {S}, 0, [](double x, double) { return std::abs(x); }),
      unary("neg", "z = -x", {S}, 0, [](double x, double) { return -x; }),
      unary("relu", "z = max(x, 0)", {S}, 0, [](double x, double) { return std::max(x, 0.0); }),
      // A tile that passes through UB unchanged (a kernel storing what it loaded: a copy, a
      // slice moved): the copies only.
      unary("copy", "z = x, the tile through UB (no vector instruction)", {}, 0,
            [](double x, double) { return x; }),
      // The ND -> NZ rearrangement of a tile in UB by vector Copy (Ascend C Copy with
      // CopyRepeatParams: each repeat reads a row's 8 C0 blocks and scatters them to 8 C0
      // columns, op.c0_stride blocks apart), where no MTE ND2NZ does it (an AIV preparing a cube
      // operand). Its cost is the scatter's UB bank groups (VecOp::dst_block_stride); the values
      // are x's.
      unary(kNd2nzOp, "z = x rearranged ND -> NZ in UB (vector Copy scattering C0 blocks)", {S}, 0,
            [](double x, double) { return x; }),
      // Triton's tl.where on an offsets mask (cols < N: the padding of a partial block) keeps
      // x where the mask holds. Its compare is of int32 / int64 indices, which the vector unit's
      // Cmp does not take, so the compiled kernel compares and selects on the scalar unit
      // (triton-ascend docs/en/debug_guide/profiling.md); with the indices cast to fp32 first
      // (the guide's fix) it is a vector Cmp and a Select. The value is x: programs compute the
      // tensor's elements only.
      unary("where_index",
            "z = x where its index passes an integer bound (Triton's tl.where on offsets), the "
            "compare and select on the scalar unit",
            {Q}, 0, [](double x, double) { return x; }),
      unary("where_index_fp32",
            "z = x where its index, cast to fp32, passes a bound: a vector Cmp and Select", {S, S},
            0, [](double x, double) { return x; }),
      // Its decomposition is for fp32 operands (fp16 / bf16 would add casts around it).
      unary("round", "z = x rounded to the nearest integer, half to even", {S, S, C}, 0,
            [](double x, double) { return std::nearbyint(x); }, {DType::kFp32}),
      unary("tanh", "z = tanh(x)", {S, E, S, S, D}, 1,
            [](double x, double) { return std::tanh(x); }),
      unary("erf", "z = erf(x), Ascend C's rational approximation",
            {S, S, S, S, S, S, S, S, S, S, S, S, S, S, S, S, S, S, S, S, S, S, S, D}, 3,
            [](double x, double) { return std::erf(x); }),
      unary("sigmoid", "z = 1 / (1 + exp(-x))", {S, E, S, C}, 0,
            [](double x, double) { return sigmoid(x); }),
      unary("silu", "z = x * sigmoid(x)", {S, E, S, C, S}, 1,
            [](double x, double) { return x * sigmoid(x); }),
      unary("gelu", "z = gelu(x), tanh form", {S, S, S, S, S, E, S, D}, 1,
            [](double x, double) { return gelu(x); }),
      binary("add", "z = x + y", S, true, std::plus<>(), kWithInt32),
      binary("sub", "z = x - y", S, false, std::minus<>(), kWithInt32),
      binary("mul", "z = x * y", S, true, std::multiplies<>(), kWithInt32),
      binary("div", "z = x / y", D, false, std::divides<>()),
      binary(
          "maximum", "z = max(x, y)", S, true, [](double x, double y) { return std::max(x, y); },
          kWithInt32),
      binary(
          "minimum", "z = min(x, y)", S, true, [](double x, double y) { return std::min(x, y); },
          kWithInt32),
      other("where", OpKind::kWhere, "z = cond ? x : y (Select)", {S}),
      other("cast", OpKind::kCast, "z = x converted to dtype (Cast)", {S}, DTypeSet::all(),
            OutDType::kGiven, "simple, in the wider of the two dtypes (Cast)"),
  };
}

// log(exp(a) + exp(b)), exact for any magnitudes.
double log_add_exp(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  const double m = std::max(a, b);
  return std::isinf(m) ? m : m + std::log(std::exp(a - m) + std::exp(b - m));
}

constexpr double kInf = std::numeric_limits<double>::infinity();

// The value of a reduction to one number: each element (or its truth, x != 0, as 1 or 0) merged
// by `merge` from `identity`; the output the statistic itself.
ReduceValue number(double identity, std::function<double(double, double)> merge,
                   bool truth = false) {
  ReduceValue v;
  v.identity = {identity, 0};
  v.element = [truth](double x, int64_t) {
    return ReduceAcc{truth ? (x != 0.0 ? 1.0 : 0.0) : x, 0};
  };
  v.merge = [merge = std::move(merge)](const ReduceAcc& a, const ReduceAcc& b) {
    return ReduceAcc{merge(a.stat, b.stat), 0};
  };
  return v;
}

ReduceValue mean_value() {
  ReduceValue v = number(0, std::plus<>());
  v.finalize = [](double stat, double count) { return stat / count; };
  return v;
}

// argmax / argmin: (index, extreme) pairs; b replaces a when its value is strictly better (ties
// keep the earlier index) or a NaN (as torch.argmax), an index of -1 holding no element yet.
ReduceValue index_value(bool max) {
  ReduceValue v;
  v.identity = {-1, 0};
  v.element = [](double x, int64_t index) { return ReduceAcc{static_cast<double>(index), x}; };
  v.merge = [max](const ReduceAcc& a, const ReduceAcc& b) {
    if (b.stat < 0) return a;
    if (a.stat < 0) return b;
    if (std::isnan(a.extreme)) return a;
    if (std::isnan(b.extreme)) return b;
    return (max ? b.extreme > a.extreme : b.extreme < a.extreme) ? b : a;
  };
  return v;
}

VecPass reduce_pass(std::string what) {
  return {ReducePass::kReduce, S, PassDType::kIn, std::move(what)};
}
VecPass tile_pass(VecClass c, std::string what) {
  return {ReducePass::kTile, c, PassDType::kIn, std::move(what)};
}
VecPass out_pass(VecClass c, std::string what, PassDType dt = PassDType::kOut) {
  return {ReducePass::kOut, c, dt, std::move(what)};
}

// Reductions take the float types, any / all every dtype (the truth of x != 0); argmax / argmin
// give an int32 index.
OpRecord reduction(std::string name, std::string doc, ReduceKind k, ReduceRecord red,
                   DTypeSet operands = DTypeSet::floats()) {
  OpRecord r = other(std::move(name), OpKind::kReduce, std::move(doc), {}, operands,
                     red.gives_index ? OutDType::kInt32 : OutDType::kOperand);
  r.reduce = k;
  r.reduction = std::move(red);
  return r;
}

// A reduction's partial of a tile: Ascend C ReduceSum / ReduceMax / ReduceMin along the reduced
// dims (kernels/tiling/vector_work.hpp add_reduce_ops: elementwise across rows, in-row reduce
// instructions along the last dim), in the input's dtype; partials merge by one elementwise
// instruction of the statistic (Add, Max, Min, Mul) over the output elements.
ReduceRecord one_reduce(const std::string& instr, const std::string& merge, bool atomic,
                        std::string partial, ReduceValue value) {
  return {.tile_passes = {reduce_pass(instr)},
          .merge_passes = {out_pass(S, merge)},
          .merges_atomically = atomic,
          .partial = std::move(partial),
          .value = std::move(value)};
}

// any / all: Compare with 0 and Select 1 / 0, then a max (any) or min (all) reduction.
ReduceRecord truth_reduce(bool any) {
  ReduceRecord r = one_reduce(any ? "ReduceMax" : "ReduceMin", any ? "Max" : "Min", true,
                              any ? "max of truths" : "min of truths",
                              number(any ? 0 : 1, any ? max_nan : min_nan, true));
  r.tile_passes.insert(r.tile_passes.begin(),
                       {tile_pass(S, "Compare (x != 0)"), tile_pass(S, "Select (1 / 0)")});
  return r;
}

// logsumexp, online softmax's statistic of the tile: its max (ReduceMax), x - max (Sub), Exp,
// the sum (ReduceSum), then ln(sum) + max on the row values, exp(x - m) a temporary the size of
// the input tile. Two partials: log(exp(a) + exp(b)) = m + ln(exp(a - m) + exp(b - m)),
// m = max(a, b): Max, two Subs, two Exps, Add, Ln, Add (online softmax's rescale of the running
// sum).
ReduceRecord log_sum_exp() {
  return {
      .tile_passes = {reduce_pass("ReduceMax"), tile_pass(S, "Sub (x - max)"), tile_pass(E, "Exp"),
                      reduce_pass("ReduceSum"), out_pass(E, "Ln"), out_pass(S, "Add (+ max)")},
      .merge_passes = {out_pass(S, "Max"), out_pass(S, "Sub"), out_pass(S, "Sub"),
                       out_pass(E, "Exp"), out_pass(E, "Exp"), out_pass(S, "Add"),
                       out_pass(E, "Ln"), out_pass(S, "Add")},
      .input_scratch = 1,
      .online = true,
      .partial = "log-sum-exp",
      .value = number(-kInf, log_add_exp)};
}

// sum(exp(x - max(x))), the softmax family's (max, sum of exp) statistic (X10): a running max m
// and the sum of exp(x - m) rescaled to it as m grows (online softmax). A tile: its max
// (ReduceMax), x - max (Sub), Exp, the sum (ReduceSum), exp(x - m) a temporary the size of the
// input tile. Two partials: the new max (Max), two differences (Sub, Sub), the two rescale factors
// (Exp, Exp), two products and a sum (Mul, Mul, Add): the family's 6 simple and 2 exp_ln. The max
// is the first pass of each (running_max): an amax of the same input over the same dims in the
// same pass is that max, and the sumexp reuses it (m = amax(x); s = sumexp(x) costs the family's
// partial and merge once, and later ops read both m and s).
double sum_exp_merge_scale(double s, double m, double to) {
  return s == 0.0 ? 0.0 : s * std::exp(m - to);
}
ReduceValue sum_exp_value() {
  ReduceValue v;
  v.identity = {0, -kInf};  // stat: the sum of exp(x - extreme); extreme: the running max
  v.element = [](double x, int64_t) { return ReduceAcc{std::isnan(x) ? x : 1.0, x}; };
  v.merge = [](const ReduceAcc& a, const ReduceAcc& b) {
    const double m = max_nan(a.extreme, b.extreme);
    if (std::isnan(m)) return ReduceAcc{m, m};
    return ReduceAcc{
        sum_exp_merge_scale(a.stat, a.extreme, m) + sum_exp_merge_scale(b.stat, b.extreme, m), m};
  };
  return v;
}
ReduceRecord sum_exp() {
  return {.tile_passes = {reduce_pass("ReduceMax"), tile_pass(S, "Sub (x - max)"),
                          tile_pass(E, "Exp"), reduce_pass("ReduceSum")},
          .merge_passes = {out_pass(S, "Max"), out_pass(S, "Sub"), out_pass(S, "Sub"),
                           out_pass(E, "Exp"), out_pass(E, "Exp"), out_pass(S, "Mul"),
                           out_pass(S, "Mul"), out_pass(S, "Add")},
          .input_scratch = 1,
          .running_max = true,
          .partial = "max and sum of exp",
          .value = sum_exp_value()};
}

// argmax / argmin: ReduceMax / ReduceMin with calIndex, the value reduction plus one pass that
// keeps each repeat's index beside its value (ORDER_VALUE_INDEX), so twice the output. Two
// partials, (value, index) pairs: Compare, then Select of the values and of the indices, in the
// input's dtype.
ReduceRecord index_reduce(bool max) {
  return {.tile_passes = {reduce_pass(max ? "ReduceMax (calIndex)" : "ReduceMin (calIndex)"),
                          tile_pass(S, "index beside value (ORDER_VALUE_INDEX)")},
          .merge_passes = {out_pass(S, "Compare", PassDType::kIn),
                           out_pass(S, "Select (values)", PassDType::kIn),
                           out_pass(S, "Select (indices)", PassDType::kIn)},
          .gives_index = true,
          .partial = "index",
          .value = index_value(max)};
}

// pick: each row's element at its int32 index, one simple instruction per row on the row values
// (the scalar read of x[row, index] into the row's slot, as the loss family priced its target
// logit); a split row's partials add (the index lies in one of them, the others hold 0), so they
// merge atomically.
ReduceRecord pick() {
  return {.tile_passes = {out_pass(S, "x[row, index] per row")},
          .merge_passes = {out_pass(S, "Add")},
          .merges_atomically = true,
          .picks = true,
          .partial = "picked value (0 outside its tile)",
          .value = number(0, std::plus<>())};
}

// The reductions. sum, amax, amin and mean merge by an atomic DMA add, max or min; a mean
// scales each partial by 1 / count (Muls over the outputs), so its partials add.
std::vector<OpRecord> reduction_records() {
  ReduceRecord mean = one_reduce("ReduceSum", "Add", true, "scaled sum", mean_value());
  mean.finalize_passes = {out_pass(S, "Muls (1 / count)")};
  // No in-row product instruction: with the last dim reduced, rows of one element Mul'ed
  // pairwise; products do not accumulate atomically.
  ReduceRecord prod{
      .tile_passes = {{ReducePass::kReduceByRows, S, PassDType::kIn, "Mul across rows"}},
      .merge_passes = {out_pass(S, "Mul")},
      .partial = "product",
      .value = number(1, std::multiplies<>())};
  return {
      reduction("sum", "sum over dim(s)", ReduceKind::kSum,
                one_reduce("ReduceSum", "Add", true, "sum", number(0, std::plus<>()))),
      reduction("amax", "max over dim(s)", ReduceKind::kMax,
                one_reduce("ReduceMax", "Max", true, "max", number(-kInf, max_nan))),
      reduction("amin", "min over dim(s)", ReduceKind::kMin,
                one_reduce("ReduceMin", "Min", true, "min", number(kInf, min_nan))),
      reduction("mean", "sum over dim(s) / count", ReduceKind::kMean, std::move(mean)),
      reduction("prod", "product over dim(s)", ReduceKind::kProd, std::move(prod)),
      reduction("any", "1 where some element is nonzero, over dim(s)", ReduceKind::kAny,
                truth_reduce(true), DTypeSet::all()),
      reduction("all", "1 where every element is nonzero, over dim(s)", ReduceKind::kAll,
                truth_reduce(false), DTypeSet::all()),
      reduction("logsumexp", "log(sum(exp(x))) over dim(s), online softmax's statistic",
                ReduceKind::kLogSumExp, log_sum_exp()),
      reduction("sumexp",
                "sum(exp(x - max)) over dim(s), the max the row's own (softmax's denominator)",
                ReduceKind::kSumExp, sum_exp()),
      reduction("pick", "x at an int32 index per row along one dim (cross entropy's target logit)",
                ReduceKind::kPick, pick()),
      reduction("argmax", "int32 index of the first maximum along one dim", ReduceKind::kArgMax,
                index_reduce(true)),
      reduction("argmin", "int32 index of the first minimum along one dim", ReduceKind::kArgMin,
                index_reduce(false)),
  };
}

// The kinds the lowering prices by kind (kernels/lower/program_lowering.cpp), `cost_doc` saying
// how.
std::vector<OpRecord> other_records() {
  return {
      other("cumsum", OpKind::kScan, "running sum along one dim", {S}, DTypeSet::floats(),
            OutDType::kOperand,
            "Ascend C CumSum: along a leading dim one scan (an Add per row after the first); along "
            "the last dim the tile transposed (TransDataTo5HD), one scan over its rows rounded up "
            "to 16 in fp32, transposed back and copied out (simple passes, fp16 / bf16 cast to "
            "fp32 and back), two temporary tiles"),
      // rotate_half(x) = concat(-x[..., d/2:], x[..., :d/2]) (HF transformers' RoPE helper; PyPTO
      // writes it with view, neg and assemble): a Muls by -1 over one half and a copy of the other,
      // one pass over the tile.
      other("rotate_half", OpKind::kRotateHalf, "concat(-x[..., d/2:], x[..., :d/2])", {S}),
      other("transpose", OpKind::kTranspose, "swap the last two dims", {S}, DTypeSet::all(),
            OutDType::kOperand, "simple (Ascend C Transpose)"),
      other("gather", OpKind::kGather, "rows of a table by an int32 index", {}, DTypeSet::all(),
            OutDType::kOperand, "none: each index's row is a DMA from GM"),
      other("load", OpKind::kLoad,
            "x read from GM into UB (\"dest\": \"l1\": the cube cores' L1) and kept there; nothing "
            "reads it (MTE2's calibration kernel, copy_in)",
            {}, DTypeSet::all(), OutDType::kOperand,
            "none: one DMA per tile (into L1: ND2NZ row copies on the AIC cores)"),
      // The cube's operand types: fp16 / bf16, fp32 at a quarter rate, int8 at twice (the cube
      // parameters in configs/hardware); C leaves the fixpipe in out_dtype (fp32 by default).
      other("matmul", OpKind::kMatmul,
            "[..., m, k] @ [..., k, n] on the cube (a run config's shape and tile: [m, k, n])", {},
            {DType::kFp32, DType::kFp16, DType::kBf16, DType::kInt8}, OutDType::kGiven,
            "none: one AIC task per C tile (GM -> L1 -> L0 -> mmad -> fixpipe)"),
  };
}

}  // namespace

const std::vector<OpRecord>& op_records() {
  static const std::vector<OpRecord> t = [] {
    std::vector<OpRecord> all = elementwise_records();
    for (std::vector<OpRecord> part : {reduction_records(), other_records()})
      for (OpRecord& r : part) all.push_back(std::move(r));
    return all;
  }();
  return t;
}

double max_nan(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : std::max(a, b);
}

double min_nan(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? std::numeric_limits<double>::quiet_NaN() : std::min(a, b);
}

const OpRecord* find_op_record(const std::string& name) {
  for (const auto& r : op_records())
    if (r.name == name) return &r;
  return nullptr;
}

const char* op_kind_name(OpKind k) {
  static constexpr std::array<EnumName<OpKind>, 11> kNames = {{{OpKind::kUnary, "unary"},
                                                               {OpKind::kBinary, "binary"},
                                                               {OpKind::kWhere, "where"},
                                                               {OpKind::kCast, "cast"},
                                                               {OpKind::kReduce, "reduce"},
                                                               {OpKind::kScan, "scan"},
                                                               {OpKind::kRotateHalf, "rotate_half"},
                                                               {OpKind::kTranspose, "transpose"},
                                                               {OpKind::kGather, "gather"},
                                                               {OpKind::kMatmul, "matmul"},
                                                               {OpKind::kLoad, "load"}}};
  return enum_name(kNames, k);
}

int op_inputs(const OpRecord& r) {
  return r.reduction && r.reduction->picks ? 2 : op_inputs(r.kind);
}

int op_inputs(OpKind k) {
  switch (k) {
    case OpKind::kWhere:
      return 3;
    case OpKind::kBinary:
    case OpKind::kGather:
    case OpKind::kMatmul:
      return 2;
    default:
      return 1;
  }
}

std::vector<std::string> op_record_names() {
  std::vector<std::string> n;
  for (const auto& r : op_records()) n.push_back(r.name);
  return n;
}

std::string DTypeSet::text() const {
  std::vector<std::string_view> names;
  for (const auto& [t, name] : kDTypeNames)
    if (contains(t)) names.push_back(name);
  return fmt::format("{}", fmt::join(names, ", "));
}

DTypeSet op_dtypes(const OpRecord* record) {
  return record ? record->operands : DTypeSet::floats();
}

std::optional<Dims> broadcast_shapes(const Dims& a, const Dims& b) {
  Dims out(std::max(a.size(), b.size()));
  for (size_t i = 0; i < out.size(); ++i) {
    const int64_t x = i < a.size() ? a[a.size() - 1 - i] : 1;
    const int64_t y = i < b.size() ? b[b.size() - 1 - i] : 1;
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[out.size() - 1 - i] = std::max(x, y);
  }
  return out;
}

}  // namespace tilesim
