#include "tools/analyses/run_kernel.hpp"

namespace tilesim {

RunOutcome run_kernel(const KernelSpec& spec, const Hardware& hw, const SimOptions& options) {
  RunOutcome out;
  out.kernel = lower_kernel(spec, hw);
  out.sim = simulate(out.kernel.graph, hw, options);
  out.metrics = compute_metrics(out.kernel.graph, out.sim, hw);
  return out;
}

}  // namespace tilesim
