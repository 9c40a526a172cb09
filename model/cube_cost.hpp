#pragma once
// Cube pipe cost: ceil(m/f) * ceil(k/f) * ceil(n/f) fractal steps at the dtype's rate, plus a
// fixed per-block overhead.

#include "model/hardware.hpp"
#include "model/task_graph.hpp"

namespace tilesim {

double cube_cycles(const CubeOp& op, const Hardware& hw);

}  // namespace tilesim
