#pragma once
// Lower, simulate and measure one kernel candidate.

#include "kernels/lowering.hpp"
#include "sim/metrics.hpp"
#include "sim/simulator.hpp"

namespace tilesim {

struct RunOutcome {
  LoweredKernel kernel;
  SimResult sim;
  Metrics metrics;
};

RunOutcome run_kernel(const KernelSpec& spec, const Hardware& hw, const SimOptions& options = {});

}  // namespace tilesim
