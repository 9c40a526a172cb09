#pragma once
// Lower, simulate and measure one kernel candidate.

#include <string>

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
// run_kernel for the kernel of a config: lowering and costing errors speak of the kernel, so an
// error that does not name the config yet is prefixed with `config`.
RunOutcome run_config_kernel(const std::string& config, const KernelSpec& spec, const Hardware& hw,
                             const SimOptions& options);

}  // namespace tilesim
