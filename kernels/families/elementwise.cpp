// Elementwise ops: z = x op y (add, sub, mul, div) or z = f(x) (relu, exp), tile by tile. A
// binary op's second operand may broadcast (params.broadcast, numpy rules as the op table states
// them, broadcast_shapes): each tile reads it at its broadcast extent.
#include <fmt/format.h>

#include "kernels/families/families.hpp"
#include "kernels/families/one_op_program.hpp"
#include "model/error.hpp"

namespace tilesim {

namespace {

// The second operand's shape at the kernel's rank (numpy's leading 1s added): params.broadcast,
// or the kernel's shape.
Dims operand_shape(const KernelSpec& spec) {
  const KernelOp* op = find_op(spec.op);
  if (!op || op->inputs < 2 || !has_param(spec, "broadcast")) return spec.shape;
  Dims b = param_ints(spec, "broadcast");
  if (b.size() < spec.shape.size()) b.insert(b.begin(), spec.shape.size() - b.size(), 1);
  return b;
}

// The operand broadcasts to the kernel's shape by the op table's rule (broadcast_shapes) without
// enlarging it.
void check_broadcast(const KernelSpec& spec, const JsonReader& params) {
  const KernelOp* op = find_op(spec.op);
  if (!op || op->inputs < 2 || !has_param(spec, "broadcast")) return;
  const Dims b = param_ints(spec, "broadcast");
  if (broadcast_shapes(spec.shape, b) == std::optional<Dims>(spec.shape)) return;
  Dims row(spec.shape.size(), 1), col = spec.shape;
  row.back() = spec.shape.back();
  col.back() = 1;
  params.at("broadcast")
      .fail(fmt::format("{} does not broadcast to shape {} (allowed: numpy rules, right-aligned, "
                        "each dim 1 or the shape's, e.g. {}, {} or {})",
                        format_dims(b), format_dims(spec.shape), format_dims(Dims{row.back()}),
                        format_dims(row), format_dims(col)));
}

// The kernel as a tile program: one op over its operands (x0, x1 or the broadcast y, ...) on one
// tile grid, z stored, loop chunks on the loop axis; its tensors take UB as an Ascend C kernel's
// queues do (a buffer per input and output). The one program lowering prices it.
Program elementwise_program(const KernelSpec& spec, const Hardware& hw) {
  const KernelOp& kop = *find_op(spec.op);
  if (!spec.dims.empty()) throw Error(spec.op + ": dim: an elementwise op takes no reduction dim");
  OneOpProgram b = one_op_program(spec, hw, kop.record);
  b.op.bank_conflict_free = kop.inputs == 2 && param_bool(spec, "bank_conflict_free");
  const Dims yshape = operand_shape(spec);
  const bool bypass = param_bool(spec, "l2_bypass_inputs");
  const int operands =
      kop.record->n_ary ? static_cast<int>(param_int(spec, "operands")) : kop.inputs;
  for (int i = 0; i < operands; ++i) {
    const bool y = i == 1 && yshape != spec.shape;
    b.program.tensors.push_back({y ? "y" : fmt::format("x{}", i), y ? yshape : spec.shape,
                                 spec.dtype, true, false, bypass});
    b.op.in.push_back(i);
  }
  b.program.tensors.push_back({"z", spec.shape, spec.dtype, false, true});
  b.op.out = operands;
  return b.finish();
}

}  // namespace

KernelFamily elementwise_kernels() {
  KernelFamily f;
  f.name = "elementwise";
  f.spmd = true;
  // Records of the one op table (kernels/ops/op_table.cpp): instructions, arity and value.
  for (const char* name : {"add", "sub", "mul", "div", "relu", "exp"}) f.ops.emplace_back(name);
  ParamDecl broadcast;
  broadcast.name = "broadcast";
  broadcast.type = ParamType::kIntList;
  broadcast.min = 1;
  for (const auto& op : f.ops)
    if (op.inputs == 2) broadcast.ops.push_back(op.name);
  broadcast.doc =
      "the second operand's shape when it broadcasts (numpy rules: each dim 1 or the shape's, "
      "e.g. [1, n] a row, [m, 1] a column); default: the kernel's shape";
  const ParamDecl bypass = flag_param(
      "l2_bypass_inputs",
      "the inputs are read without allocating in L2 (Ascend C SetL2CacheHint(CACHE_MODE_DISABLE) "
      "on data read once), so L2 keeps room for the output's lines");
  const ParamDecl banks = flag_param(
      "bank_conflict_free",
      "the kernel places the two sources in different UB bank groups (addresses 256 B apart "
      "modulo 512 B, as the add study's case 6 does); default: buffers laid out one after another "
      "in multiples of 512 B share a group and each repeat reads them one after the other",
      broadcast.ops);
  ParamDecl operands;
  operands.name = "operands";
  operands.type = ParamType::kInt;
  operands.fallback = 2;
  operands.min = 2;
  operands.max = 8;
  for (const auto& op : f.ops)
    if (op.record->n_ary) operands.ops.push_back(op.name);
  operands.doc =
      "inputs of one fused n-ary op, folded left to right in one tile (((x1 + x2) + x3) + x4: "
      "n loads, n - 1 vector ops); the second may broadcast, the others have the kernel's shape";
  f.params = {broadcast, bypass, banks, operands};
  f.check_params = check_broadcast;
  f.program = elementwise_program;
  return f;
}

}  // namespace tilesim
