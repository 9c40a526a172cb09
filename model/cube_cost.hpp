#pragma once
// Cube core costs below L1: the MTE1 loads L1 -> L0A / L0B and the mmads they feed.
//
//   mmad   ceil(m/f) * ceil(k/f) * ceil(n/f) fractals at the dtype's cycles per fractal
//          (fp16 / bf16, fp32, int8) + cube.block_overhead_cycles
//   MTE1   per operand loaded: cube.mte1_issue_cycles + bytes / the L0A or L0B rate
//
// One k step's L0 tiles run as a two-stage pipeline, MTE1 then mmad, through `l0_depth` copies of
// L0A / L0B: load i waits for mmad i - depth to have freed its buffer, mmad i for load i and for
// mmad i - 1. With depth >= 2 a run of n equal tiles costs n max(t1, tm) + min(t1, tm); the
// min(t1, tm) is the pipeline's fill, which the next k step hides behind this one's last mmad,
// so a task pays it once (CubeStage::fill). With depth 1 it is n (t1 + tm): nothing overlaps.

#include <vector>

#include "model/hardware.hpp"
#include "model/task_graph.hpp"

namespace tilesim {

double cube_cycles(const CubeOp& op, const Hardware& hw);  // the mmad
double mte1_cycles(const CubeOp& op, const Hardware& hw);  // its L0A and L0B loads

struct CubeStage {
  double cycles = 0;  // the stage's time within a task's running pipeline (fill excluded)
  double fill = 0;    // exposed once per task: the first load before the first mmad
  double mte1_busy = 0;
  double mmad_busy = 0;
};
CubeStage cube_stage(const std::vector<CubeOp>& ops, int l0_depth, const Hardware& hw);

}  // namespace tilesim
