#pragma once
// What a kernel costs outside its tasks' work, in the six parts a kernel's time adds up to:
//   kernel_time = launch + handshake + root_build + dispatch + tasks + completion + end.
//  - launch: the kernel type's start, from the kernel's start to its first core's start: the
//    vector-only launch for an SPMD kernel whose tasks all run on AIV cores, else the mixed
//    launch that starts cube cores. A PyPTO kernel always pays the mixed launch: its runtime
//    starts its AICore binary as a MIX_AIC kernel on every AI core, whatever its tasks use
//    (hicann/pypto machine/runtime/launcher/device_launcher.cpp LaunchAicoreKernel: blockDim the
//    AI cores, reported as MSPF_GE_TASK_TYPE_MIX_AIC). An SPMD kernel's (Ascend C / Triton)
//    cores then start kernel.core_start_ns apart (sim/spmd_runtime.hpp);
//  - handshake: PyPTO only, the part of the scheduler threads' hand-shake with their cores that
//    the control AICPU's first build does not hide. Each thread polls the GM hello of every core
//    it manages, its AIC cores and then its AIV cores (scheduler.handshake_cores polls, one
//    scheduler.poll_ns each), before it sends a task (aicore_manager.h
//    HandShakeByGmWithPreSendTask), while the control AICPU builds the first device task, which
//    the threads prefetch inside that loop (HandShakeTryPreFetchDevTask): the first device task
//    is released at max(its build, the hand-shake) (sim/pypto_runtime.hpp);
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
// PyPTO: the scheduler threads' hand-shake with their cores, from their start to their first
// possible dispatch, in us (0 for an SPMD kernel). It overlaps the first device task's build.
double aicpu_handshake_us(const TaskGraph& graph, const Hardware& hw);
// From the runtime seeing the last task's end to the kernel's end, in us.
double kernel_end_us(const TaskGraph& graph, const Hardware& hw);
// Cycles between the end of one launch of `graph` and the start of the next.
double launch_gap_cycles(const Hardware& hw, const TaskGraph& graph);

}  // namespace tilesim
