#include "kernels/ops/op_table.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <numbers>

namespace tilesim {

namespace {

constexpr VecClass S = VecClass::kSimple;
constexpr VecClass C = VecClass::kComplex;

double gelu(double x) {
  // The tanh form as Ascend C computes it: x / (1 + exp(-sqrt(8 / pi) * (x + 0.044715 x^3))).
  return x / (1.0 + std::exp(-std::sqrt(8.0 / std::numbers::pi) * (x + 0.044715 * x * x * x)));
}

double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

using Value = std::function<double(double, double)>;

OpRecord unary(std::string name, std::string doc, std::vector<VecClass> instrs, int scratch,
               Value v) {
  return {std::move(name), OpKind::kUnary, std::move(doc),   std::move(instrs),
          scratch,         false,          ReduceKind::kSum, std::move(v)};
}

OpRecord binary(std::string name, std::string doc, VecClass instr, bool n_ary, Value v) {
  return {std::move(name), OpKind::kBinary,  std::move(doc), {instr}, 0,
          n_ary,           ReduceKind::kSum, std::move(v)};
}

// Reductions take the float types, any / all every dtype (the truth of x != 0); argmax / argmin
// give an int32 index.
OpRecord reduction(std::string name, std::string doc, ReduceKind k) {
  OpRecord r{std::move(name), OpKind::kReduce, std::move(doc), {}, 0, false, k, {}};
  if (k == ReduceKind::kAny || k == ReduceKind::kAll) r.operands = DTypeSet::all();
  if (reduces_to_index(k)) r.out = OutDType::kInt32;
  return r;
}

OpRecord other(std::string name, OpKind kind, std::string doc, std::vector<VecClass> instrs,
               DTypeSet operands = DTypeSet::floats(), OutDType out = OutDType::kOperand) {
  OpRecord r{std::move(name),  kind, std::move(doc), std::move(instrs), 0, false,
             ReduceKind::kSum, {}};
  r.operands = operands;
  r.out = out;
  return r;
}

// Instruction counts per tile. One-instruction ops are Ascend C basic vector APIs (Exp, Ln, Sqrt,
// Rsqrt, Reciprocal, Abs, Relu; Add, Sub, Mul, Div, Max, Min; Muls for neg; Select; Cast). The
// composed ones follow their Ascend C decomposition:
//  - gelu: cann-ops src/math/gelu (docs/Gelu.md: "Mul, Muls, Add, Adds, Exp and Div"):
//    x^2, x^3 (Mul x2), 0.044715 x^3 (Muls), x + . (Add), * -sqrt(8/pi) (Muls), Exp, + 1 (Adds),
//    x / . (Div): 6 simple, 2 complex, one temporary besides the output;
//  - sigmoid: 1 / (1 + exp(-x)): Muls, Exp, Adds, Reciprocal (the pattern PTO-ISA's generated
//    Ascend C uses for sigmoid-based GELU);
//  - silu = x * sigmoid(x): the sigmoid's four plus one Mul, keeping x alive (one temporary);
//  - tanh = (exp(2x) - 1) / (exp(2x) + 1): Muls, Exp, Adds, Adds, Div, one temporary.
// Reductions and the other kinds are priced by their kind (kernels/lower/program_lowering.cpp).
const std::vector<OpRecord>& table() {
  static const std::vector<OpRecord> t = {
      unary("exp", "z = exp(x)", {C}, 0, [](double x, double) { return std::exp(x); }),
      unary("log", "z = ln(x)", {C}, 0, [](double x, double) { return std::log(x); }),
      unary("sqrt", "z = sqrt(x)", {C}, 0, [](double x, double) { return std::sqrt(x); }),
      unary("rsqrt", "z = 1 / sqrt(x)", {C}, 0,
            [](double x, double) { return 1.0 / std::sqrt(x); }),
      unary("reciprocal", "z = 1 / x", {C}, 0, [](double x, double) { return 1.0 / x; }),
      unary("abs", "z = |x|", {S}, 0, [](double x, double) { return std::abs(x); }),
      unary("neg", "z = -x", {S}, 0, [](double x, double) { return -x; }),
      unary("relu", "z = max(x, 0)", {S}, 0, [](double x, double) { return std::max(x, 0.0); }),
      unary("tanh", "z = tanh(x)", {S, C, S, S, C}, 1,
            [](double x, double) { return std::tanh(x); }),
      unary("sigmoid", "z = 1 / (1 + exp(-x))", {S, C, S, C}, 0,
            [](double x, double) { return sigmoid(x); }),
      unary("silu", "z = x * sigmoid(x)", {S, C, S, C, S}, 1,
            [](double x, double) { return x * sigmoid(x); }),
      unary("gelu", "z = gelu(x), tanh form", {S, S, S, S, S, C, S, C}, 1,
            [](double x, double) { return gelu(x); }),
      binary("add", "z = x + y", S, true, [](double x, double y) { return x + y; }),
      binary("sub", "z = x - y", S, false, [](double x, double y) { return x - y; }),
      binary("mul", "z = x * y", S, true, [](double x, double y) { return x * y; }),
      binary("div", "z = x / y", C, false, [](double x, double y) { return x / y; }),
      binary("maximum", "z = max(x, y)", S, true,
             [](double x, double y) { return std::max(x, y); }),
      binary("minimum", "z = min(x, y)", S, true,
             [](double x, double y) { return std::min(x, y); }),
      other("where", OpKind::kWhere, "z = cond ? x : y (Select)", {S}),
      other("cast", OpKind::kCast, "z = x converted to dtype (Cast)", {S}, DTypeSet::all(),
            OutDType::kGiven),
      reduction("sum", "sum over dim(s)", ReduceKind::kSum),
      reduction("amax", "max over dim(s)", ReduceKind::kMax),
      reduction("amin", "min over dim(s)", ReduceKind::kMin),
      reduction("mean", "sum over dim(s) / count", ReduceKind::kMean),
      reduction("prod", "product over dim(s)", ReduceKind::kProd),
      reduction("any", "1 where some element is nonzero, over dim(s)", ReduceKind::kAny),
      reduction("all", "1 where every element is nonzero, over dim(s)", ReduceKind::kAll),
      reduction("logsumexp", "log(sum(exp(x))) over dim(s), online softmax's statistic",
                ReduceKind::kLogSumExp),
      reduction("argmax", "int32 index of the first maximum along one dim", ReduceKind::kArgMax),
      reduction("argmin", "int32 index of the first minimum along one dim", ReduceKind::kArgMin),
      other("cumsum", OpKind::kScan, "running sum along one dim", {S}),
      // rotate_half(x) = concat(-x[..., d/2:], x[..., :d/2]) (HF transformers' RoPE helper; PyPTO
      // writes it with view, neg and assemble): a Muls by -1 over one half and a copy of the other,
      // one pass over the tile.
      other("rotate_half", OpKind::kRotateHalf, "concat(-x[..., d/2:], x[..., :d/2])", {S}),
      other("transpose", OpKind::kTranspose, "swap the last two dims", {S}, DTypeSet::all()),
      other("gather", OpKind::kGather, "rows of a table by an int32 index", {}, DTypeSet::all()),
      // The cube's operand types: fp16 / bf16, fp32 at a quarter rate, int8 at twice (the cube
      // parameters in configs/hardware); C leaves the fixpipe in out_dtype (fp32 by default).
      other("matmul", OpKind::kMatmul,
            "[..., m, k] @ [..., k, n] on the cube (a run config's shape and tile: [m, k, n])", {},
            {DType::kFp32, DType::kFp16, DType::kBf16, DType::kInt8}, OutDType::kGiven),
  };
  return t;
}

}  // namespace

const OpRecord* find_op_record(const std::string& name) {
  for (const auto& r : table())
    if (r.name == name) return &r;
  return nullptr;
}

std::vector<std::string> op_record_names() {
  std::vector<std::string> n;
  for (const auto& r : table()) n.push_back(r.name);
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

bool merges_atomically(ReduceKind k) {
  return k != ReduceKind::kProd && k != ReduceKind::kLogSumExp && !reduces_to_index(k);
}

bool reduces_to_index(ReduceKind k) {
  return k == ReduceKind::kArgMax || k == ReduceKind::kArgMin;
}

}  // namespace tilesim
