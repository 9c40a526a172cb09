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
// The launch + completion of `graph`'s kernel type (vector-only or with cube cores), in us.
double kernel_launch_us(const TaskGraph& graph, const Hardware& hw);
// PyPTO: the scheduler threads' hand-shake with their first cores before any dispatch, in us
// (0 for an SPMD kernel).
double aicpu_handshake_us(const TaskGraph& graph, const Hardware& hw);
// The fixed time outside the tasks' timeline: the two above, in us.
double launch_overhead_us(const TaskGraph& graph, const Hardware& hw);
// Cycles between the end of one launch of `graph` and the start of the next.
double launch_gap_cycles(const Hardware& hw, const TaskGraph& graph);

}  // namespace tilesim
