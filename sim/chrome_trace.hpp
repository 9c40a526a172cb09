#pragma once
// Chrome trace (JSON array of "X" complete events plus "M" name records) that chrome://tracing
// and Perfetto open: one track per core and one per AICPU (control and scheduler threads), and a
// flow arrow ("s"/"f" events) per dependency edge. Times are in us at 0.1 ns resolution, rounded
// so that slices on one lane never overlap.

#include <ostream>

#include "model/hardware.hpp"
#include "model/task_graph.hpp"
#include "sim/simulator.hpp"

namespace tilesim {

void write_chrome_trace(std::ostream& out, const TaskGraph& graph, const SimResult& sim,
                        const Hardware& hw);

}  // namespace tilesim
