#pragma once
// What a kernel costs outside its tasks' work, in the six parts a kernel's time adds up to:
//   kernel_time = launch + handshake + root_build + dispatch + tasks + completion + end.
//  - launch: the kernel type's start (vector-only when every task runs on AIV cores, else the
//    launch that starts cube cores, cube-only and mixed kernels alike); an SPMD kernel's (Ascend C
//    / Triton) cores then start kernel.core_start_ns apart (sim/spmd_runtime.hpp);
//  - handshake: PyPTO only, each scheduler thread shakes hands with scheduler.handshake_cores
//    cores, one poll each, before its first dispatch (aicore_manager.h
//    HandShakeByGmWithPreSendTask);
//  - root_build, dispatch and completion come from the simulation (compute_metrics,
//    sim/metrics.hpp): the first device task's builds, the first task's dispatch, and, for PyPTO,
//    the last task's completion: its core released by the scheduler's stop
//    (PyptoMachine::release_tail, sim/pypto_runtime.hpp); an SPMD core's end is the hardware's;
//  - end: from the last core's release to the kernel's end (kernel.end_us).
// Inside an SPMD run of several launches, the gap between the last task of launch k and the
// first blocks of launch k + 1 is launch k's end and launch k + 1's start (one place for both).

#include "model/hardware.hpp"
#include "model/task_graph.hpp"

namespace tilesim {

// True when a task of `graph` runs on an AIC core.
bool starts_cube_cores(const TaskGraph& graph);
// The start of `graph`'s kernel type (vector-only or with cube cores), in us.
double kernel_launch_us(const TaskGraph& graph, const Hardware& hw);
// PyPTO: the scheduler threads' hand-shake with their first cores before any dispatch, in us
// (0 for an SPMD kernel).
double aicpu_handshake_us(const TaskGraph& graph, const Hardware& hw);
// From the runtime seeing the last task's end to the kernel's end, in us.
double kernel_end_us(const TaskGraph& graph, const Hardware& hw);
// Cycles between the end of one launch of `graph` and the start of the next.
double launch_gap_cycles(const Hardware& hw, const TaskGraph& graph);

}  // namespace tilesim
