#include "kernels/families/one_op_program.hpp"

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

Program OneOpProgram::finish() {
  program.ops.push_back(op);
  return std::move(program);
}

}  // namespace tilesim
