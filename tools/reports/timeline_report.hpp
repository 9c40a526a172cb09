#pragma once
// Presenting timelines that do not come from a kernel config: replayed PyPTO task graphs and
// analysed swimlane traces. Tables in the same layout as `tilesim run`, JSON with the same keys.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/metrics.hpp"
#include "sim/simulator.hpp"
#include "tools/formats/swimlane.hpp"

namespace tilesim {

// "AIV3", "AIC0": names of a simulated machine's cores, by global core index.
std::vector<std::string> simulated_core_names(const SimResult& sim);

// gen_time, PSG and per-core tables. Without dependencies the wait split is printed as "-".
std::string timeline_tables(const Metrics& m, const std::vector<std::string>& core_names,
                            bool dependencies);

// Analysis as JSON: gen_time_us, tasks, per_core (lane name, type, the PyPTO metrics; the wait
// split only with dependencies), psg, skipped events by reason, warnings.
nlohmann::json swimlane_analysis_to_json(const SwimlaneAnalysis& a);

}  // namespace tilesim
