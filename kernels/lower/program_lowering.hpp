#pragma once
// A tile program (kernels/program/program.hpp) to a task graph under the spec's partition.

#include "kernels/program/program.hpp"
#include "kernels/spec/kernel_spec.hpp"
#include "kernels/spec/lowered.hpp"
#include "model/hardware.hpp"

namespace tilesim {

// Lowers a program under the spec's partition (pypto: one task per stage tile, loop chunks as
// root functions, edges where a tile reads a block an earlier stage wrote; spmd: each stage one
// launch of min(grid, tiles) blocks). Checks alignment and the UB budget of every stage.
LoweredKernel lower_program(const Program& p, const KernelSpec& spec, const Hardware& hw);

}  // namespace tilesim
