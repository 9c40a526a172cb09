#pragma once
// What a kernel launch costs inside an SPMD run: the gap between the last task of launch k and
// the first blocks of launch k + 1 (host or device launch and completion of a kernel). One
// function, so the launch model changes in one place.

#include "model/hardware.hpp"
#include "model/task_graph.hpp"

namespace tilesim {

// Cycles between the end of one launch of `graph` and the start of the next.
double launch_gap_cycles(const Hardware& hw, const TaskGraph& graph);

}  // namespace tilesim
