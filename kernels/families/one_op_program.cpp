#include "kernels/families/one_op_program.hpp"

#include <utility>

#include "kernels/ops/op_table.hpp"
#include "kernels/spec/registry.hpp"
#include "kernels/tiling/tile_rules.hpp"

namespace tilesim {

OneOpProgram one_op_program(const KernelSpec& spec, const Hardware& hw, const OpRecord* record) {
  validate_tile(spec, hw);
  const int axis = default_loop_axis(spec);
  check_loop_count(spec.op + ": ", spec.loop_count, axis, spec.shape[static_cast<size_t>(axis)]);
  check_partition_loop(spec);
  OneOpProgram b;
  Program& p = b.program;
  p.name = spec.op;
  p.ub_plan = UbPlan::kBuffers;
  p.built_in = true;
  p.tiles.push_back({"tile", false, spec.tile, {}});
  ProgOp& op = b.op;
  op.name = record->name;
  op.info = record;
  op.psg = spec.op;
  op.tile = 0;
  if (spec.loop_count > 1) {
    p.loops.push_back({"loop", axis, spec.loop_count, -1});
    op.loop = 0;
  }
  return b;
}

ReducingProgram reducing_program(const KernelSpec& spec, const KernelSpec& view, const Hardware& hw,
                                 MergeMode merge) {
  ReducingProgram r{one_op_program(view, hw, find_op_record("sum")), &spec, view.dims, merge,
                    spec.op};
  return r;
}

int ReducingProgram::tensor(const std::string& name, const Dims& shape, bool input, bool output,
                            std::optional<DType> dtype) {
  Program& p = base.program;
  p.tensors.push_back({name, shape, dtype.value_or(spec->dtype), input, output});
  return static_cast<int>(p.tensors.size()) - 1;
}

int ReducingProgram::add(const char* name, std::vector<int> in, int out,
                         std::optional<double> scalar) {
  Program& p = base.program;
  ProgOp op = base.op;
  op.name = name;
  op.info = find_op_record(name);
  op.in = std::move(in);
  op.out = out;
  op.scalar = scalar;
  op.psg = std::exchange(psg, "");
  op.index = static_cast<int>(p.ops.size());
  if (op.info->kind == OpKind::kReduce) {
    op.dims = dims;
    op.merge = merge;
    op.apply_in_task = true;
    if (spec->partition == PartitionStyle::kSpmd)
      op.spmd_rows = *enum_named(kSpmdRowsNames, param_string(*spec, "spmd_rows"));
  }
  p.ops.push_back(op);
  return out;
}

Program OneOpProgram::finish() {
  program.ops.push_back(op);
  return std::move(program);
}

}  // namespace tilesim
