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
#include "sim/span_path.hpp"

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
// "  span path: ..." for a PyPTO run whose critical path holds more than one task (else empty):
// the tasks' bodies, the hand-offs between them and the cores' turnarounds, adding up to the span.
std::string span_path_line(const SpanPath& p, const Hardware& hw);
// The run's table; `path`, when given, adds its span_path_line under the span.
std::string metrics_table(const KernelSpec& spec, const Hardware& hw, const Diagnostics& d,
                          const Metrics& m, const SpanPath* path = nullptr);

}  // namespace tilesim
