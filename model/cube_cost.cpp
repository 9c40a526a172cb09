#include "model/cube_cost.hpp"

namespace tilesim {

double cube_cycles(const CubeOp& op, const Hardware& hw) {
  auto steps = [&](int64_t x) { return (x + hw.cube.fractal - 1) / hw.cube.fractal; };
  const double fractals = static_cast<double>(steps(op.m) * steps(op.k) * steps(op.n));
  const double per =
      op.dtype == DType::kFp32 ? hw.cube.fp32_cycles_per_fractal : hw.cube.fp16_cycles_per_fractal;
  return fractals * per + hw.cube.block_overhead_cycles;
}

}  // namespace tilesim
