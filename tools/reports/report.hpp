#pragma once
// Presenting a run: a readable terminal table, one JSON object, CSV cells.

#include <string>

#include <nlohmann/json.hpp>

#include "tools/analyses/binding.hpp"
#include "tools/formats/record_json.hpp"

#include "kernels/lowering.hpp"
#include "kernels/spec/kernel_spec.hpp"
#include "model/hardware.hpp"
#include "sim/metrics.hpp"

namespace tilesim {

// What bounds a run (tools/analyses/binding.hpp) as JSON: [{resource, used, capacity, unit,
// share}], the binding one first.
nlohmann::json binding_json(const std::vector<ResourceUse>& uses);

// A run's result (`tilesim run --json`, tilesim.run().to_dict()): the Metrics record, the
// candidate, the hardware, the lowering's diagnostics and the config's "measured" block when set.
nlohmann::json run_json(const KernelSpec& spec, const Hardware& hw, const Diagnostics& d,
                        const Metrics& m, const nlohmann::json& measured);
// "  kernel_time_us  N   (launch a + AICPU hand-shake b + head c + tasks d)": the parts sum to N.
std::string kernel_time_line(const Metrics& m);
std::string metrics_table(const KernelSpec& spec, const Hardware& hw, const Diagnostics& d,
                          const Metrics& m);

}  // namespace tilesim
