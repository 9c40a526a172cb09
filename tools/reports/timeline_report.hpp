#pragma once
// Presenting timelines that do not come from a kernel config: replayed PyPTO task graphs and
// analysed swimlane traces. Tables in the same layout as `tilesim run`, JSON with the same keys.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/metrics.hpp"
#include "sim/simulator.hpp"
#include "tools/formats/pypto_graph.hpp"
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
// A trace's time unit ("us", "ns" or "cycles": the clock of `hardware`, a --hardware argument,
// the default hardware when empty) in units per microsecond.
double trace_units_per_us(const std::string& time_unit, const std::string& hardware);
// `tilesim analyze --json` (tilesim.analyze().to_dict()): the analysis, the trace's name and event
// count, and the graph's name when one gave the dependencies (empty: none).
nlohmann::json analyze_json(const SwimlaneAnalysis& a, const SwimlaneTrace& trace,
                            const std::string& trace_name, const std::string& graph_name);
// `tilesim replay --json` (tilesim.replay().to_dict()): the Metrics record of a replayed graph
// with named cores, without the figures a fixed-latency graph does not have (GM, pipes).
nlohmann::json replay_json(const PyptoGraph& pg, const Metrics& m,
                           const std::vector<std::string>& core_names,
                           const std::string& graph_name, const std::string& hardware_name);

}  // namespace tilesim
