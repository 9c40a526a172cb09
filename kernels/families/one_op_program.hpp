#pragma once
// What a family's builder starts from: a tile program of one op over the spec's tile grid, the
// spec's tile and loop rules checked first (with their messages), the op opening a stage named
// after the spec's op, its loop chunks on the loop axis, its tensors taking UB as an Ascend C
// kernel's queues do (a buffer per input and output). The builder adds the tensors and wires the
// op to them.

#include "kernels/program/program.hpp"
#include "kernels/spec/kernel_spec.hpp"
#include "model/hardware.hpp"

namespace tilesim {

struct OneOpProgram {
  Program program;
  ProgOp op;
  // Appends the op (its `in` and `out` set by the builder) and returns the program.
  Program finish();
};
OneOpProgram one_op_program(const KernelSpec& spec, const Hardware& hw, const OpRecord* record);

}  // namespace tilesim
