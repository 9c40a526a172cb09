#pragma once
// Presenting a run: a readable terminal table or one JSON object.

#include <string>

#include <nlohmann/json.hpp>

#include "kernels/kernel_spec.hpp"
#include "kernels/lowering.hpp"
#include "model/hardware.hpp"
#include "sim/metrics.hpp"

namespace tilesim {

nlohmann::json spec_to_json(const KernelSpec& spec);
nlohmann::json diagnostics_to_json(const Diagnostics& d);
nlohmann::json metrics_to_json(const Metrics& m);
std::string metrics_table(const KernelSpec& spec, const Hardware& hw, const Diagnostics& d,
                          const Metrics& m);

}  // namespace tilesim
