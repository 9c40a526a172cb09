#include "tools/analyses/run_kernel.hpp"

#include "model/error.hpp"

namespace tilesim {

RunOutcome run_kernel(const KernelSpec& spec, const Hardware& hw, const SimOptions& options) {
  RunOutcome out;
  out.kernel = lower_kernel(spec, hw);
  out.sim = simulate(out.kernel.graph, hw, options);
  out.metrics = compute_metrics(out.kernel.graph, out.sim, hw);
  return out;
}

RunOutcome run_config_kernel(const std::string& config, const KernelSpec& spec, const Hardware& hw,
                             const SimOptions& options) {
  try {
    return run_kernel(spec, hw, options);
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.rfind(config, 0) == 0) throw;
    throw Error(config + ": " + what, e.kind(), e.key());
  }
}

}  // namespace tilesim
