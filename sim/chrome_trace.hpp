#pragma once
// Chrome trace (JSON array of "X" complete events plus "M" name records) that chrome://tracing
// and Perfetto open: one track per core and one per AICPU (control and scheduler threads).

#include <ostream>

#include "model/hardware.hpp"
#include "model/task_graph.hpp"
#include "sim/simulator.hpp"

namespace tilesim {

void write_chrome_trace(std::ostream& out, const TaskGraph& graph, const SimResult& sim,
                        const Hardware& hw);

}  // namespace tilesim
