#pragma once
// Overlap of a core's consecutive tasks: a kernel that software-pipelines across its loop (a
// flash kernel's key blocks, a looped block's sub-tiles) lets the next iteration's copy-in start
// when the load pipe and a buffer are free, not when the previous iteration's copy-out ends.
//
// The core carries each pipe's free time from task to task (PipeClock): loads (MTE2), compute
// (vector or cube) and stores (MTE3). A task starts when its first pipe is free (its loads when
// the load pipe is, earliest_start); each later stage waits for its own pipe (run_on_pipes):
//   compute begins at max(start + compute_start, the compute pipe's free time)
//   stores  begin  at max(start + store_start + the compute's wait, the store pipe's free time)
// so a task's copy-in runs while earlier tasks still compute, and its run stretches by what its
// later stages wait. Its buffers must be free, as iterations inside a task rotate theirs
// (model/task_cost.hpp): when the memory holding the previous task's buffers has no room for
// another copy of the next one's inputs, its loads wait for the previous compute to end; with no
// room for its outputs (a cube core's L0C accumulator counts as one), its compute waits for the
// previous stores. The runtime caps the tasks a core holds at once at the kinds'
// TaskKind::overlap (the kernel's preload depth), which bounds how far the loads run ahead.
//
// A loop of N identical one-iteration tasks of stages L, C, S thus runs in
// L + C + S + (N - 1) max(L, C, S): fill, N times the slowest stage, drain, as the same N
// iterations inside one task do when their buffers do not bind; a depth D that holds fewer tasks
// than one run spans (D max(L, C, S) < L + C + S) makes the runtime's cap bind instead.

#include "model/hardware.hpp"
#include "model/task_cost.hpp"
#include "model/task_graph.hpp"

namespace tilesim {

// Whether the memories holding `prev`'s buffers (one copy each) also hold another copy of
// `next`'s inputs, and of its outputs. L0A / L0B are left out: they turn over inside the
// compute stage (TaskKind::l0_depth).
struct OverlapRoom {
  bool inputs = true;
  bool outputs = true;
};
OverlapRoom overlap_room(const TaskKind& prev, const TaskKind& next, const Hardware& hw);

// When each pipe of a core is free of the work its tasks have issued, in cycles (0: never used).
struct PipeClock {
  double load = 0;
  double compute = 0;
  double store = 0;
};

// The earliest start of `next` on a core whose pipes stand at `clock`: its first pipe free (its
// loads; without loads its compute, then its stores), and without room for its inputs its loads
// after the compute before.
double earliest_start(const PipeClock& clock, const StagedRun& next, OverlapRoom room = {});

// A task started at `start` on a core whose pipes stand at `clock`, each stage waiting for its
// pipe: its run (its own, stretched by those waits), the part of it spent waiting, and the core's
// pipes once it has issued its work. Loads that continue past its compute's start (a task of
// several iterations) move with its compute.
struct PipedRun {
  double cycles = 0;
  double wait = 0;
  PipeClock after;
};
PipedRun run_on_pipes(const PipeClock& clock, double start, const StagedRun& run,
                      OverlapRoom room = {});

}  // namespace tilesim
