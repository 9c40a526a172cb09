#pragma once
// What a kernel launch costs outside its tasks. Every kernel pays the launch of its kernel type:
// vector-only when every task runs on AIV cores, else the launch that starts cube cores (cube-only
// and mixed kernels alike). An SPMD kernel's (Ascend C / Triton) cores start kernel.core_start_ns
// apart (sim/spmd_runtime.hpp). A PyPTO (MPMD) kernel adds its AICPU runtime's start: each
// scheduler thread shakes hands with scheduler.handshake_cores cores, one poll each, before its
// first dispatch (aicore_manager.h HandShakeByGmWithPreSendTask). Inside an SPMD run of several
// launches, the gap between the last task of launch k and the first blocks of launch k + 1 is that
// same launch (one place for the model).

#include "model/hardware.hpp"
#include "model/task_graph.hpp"

namespace tilesim {

// True when a task of `graph` runs on an AIC core.
bool starts_cube_cores(const TaskGraph& graph);
// The fixed launch + completion time of `graph`'s kernel, in us.
double launch_overhead_us(const TaskGraph& graph, const Hardware& hw);
// Cycles between the end of one launch of `graph` and the start of the next.
double launch_gap_cycles(const Hardware& hw, const TaskGraph& graph);

}  // namespace tilesim
