#include "model/cube_cost.hpp"

#include <algorithm>
#include <deque>

namespace tilesim {

namespace {

double cycles_per_fractal(DType d, const Hardware& hw) {
  switch (d) {
    case DType::kFp32:
      return hw.cube.fp32_cycles_per_fractal;
    case DType::kInt8:
      return hw.cube.int8_cycles_per_fractal;
    case DType::kFp16:
    case DType::kBf16:
    case DType::kInt32:
      break;
  }
  return hw.cube.fp16_cycles_per_fractal;
}

double load_cycles(int64_t bytes, double rate, const Hardware& hw) {
  return bytes > 0 ? hw.cube.mte1_issue_cycles + static_cast<double>(bytes) / rate : 0.0;
}

}  // namespace

double cube_cycles(const CubeOp& op, const Hardware& hw) {
  auto steps = [&](int64_t x) { return (x + hw.cube.fractal - 1) / hw.cube.fractal; };
  const double fractals = static_cast<double>(steps(op.m) * steps(op.k) * steps(op.n));
  return fractals * cycles_per_fractal(op.dtype, hw) + hw.cube.block_overhead_cycles;
}

double mte1_cycles(const CubeOp& op, const Hardware& hw) {
  return load_cycles(op.l0a_bytes, hw.cube.mte1_l0a_bytes_per_cycle, hw) +
         load_cycles(op.l0b_bytes, hw.cube.mte1_l0b_bytes_per_cycle, hw) +
         // L1 -> BT at the L1 -> L0B rate: both are MTE1 moves out of L1; the hardware files have
         // no BT rate of their own (an approximation, noted where a trace adds a bias).
         load_cycles(op.bt_bytes, hw.cube.mte1_l0b_bytes_per_cycle, hw);
}

CubeStage cube_stage(const std::vector<CubeOp>& ops, int l0_depth, const Hardware& hw) {
  CubeStage s;
  if (ops.empty()) return s;
  const auto depth = static_cast<size_t>(std::max(1, l0_depth));
  double load_free = 0, mmad_free = 0;
  std::deque<double> mmad_end;  // of the last `depth` mmads: when their L0 buffers free
  for (const CubeOp& op : ops) {
    const double t1 = mte1_cycles(op, hw), tm = cube_cycles(op, hw);
    const double freed = mmad_end.size() >= depth ? mmad_end[mmad_end.size() - depth] : 0.0;
    const double loaded = std::max(load_free, freed) + t1;
    load_free = loaded;
    mmad_free = std::max(loaded, mmad_free) + tm;
    mmad_end.push_back(mmad_free);
    if (mmad_end.size() > depth) mmad_end.pop_front();
    s.mte1_busy += t1;
    s.mmad_busy += tm;
  }
  // With two or more buffers the first load overlaps the previous step's last mmad.
  if (depth >= 2) s.fill = std::min(mte1_cycles(ops.front(), hw), cube_cycles(ops.back(), hw));
  s.cycles = mmad_free - s.fill;
  return s;
}

}  // namespace tilesim
