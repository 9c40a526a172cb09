#pragma once
// Overlap of a core's consecutive tasks: a kernel that software-pipelines across its loop (a
// flash kernel's key blocks, a looped block's sub-tiles) lets the next iteration's copy-in start
// when the load pipe and a buffer are free, not when the previous iteration's copy-out ends.
//
// Each task keeps its own pipe offsets (model/task_cost.hpp PipeStages); the next task shifts as
// a whole to the earliest start at which every pipe it uses is free of the task before it (a
// pipe's issue, not the latency of its last copy, is what it holds):
//   load:    start >= prev.load_done
//   compute: start + next.compute_start >= prev.compute_done
//   store:   start + next.store_start >= prev.store_done
// and its buffers are free, as iterations inside a task rotate theirs (model/task_cost.hpp): when
// the memory holding the previous task's buffers has no room for another copy of the next one's
// inputs, its loads wait for the previous compute to end (start >= prev.compute_done); with no
// room for its outputs (a cube core's L0C accumulator counts as one), its compute waits for the
// previous stores (start + next.compute_start >= prev.store_done). The runtime caps the tasks a
// core holds at once at the kinds' TaskKind::overlap.
//
// A loop of N identical one-iteration tasks of stages L, C, S thus runs in
// L + C + S + (N - 1) max(L, C, S): fill, N times the slowest stage, drain, as the same N
// iterations inside one task do when their buffers do not bind.

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

// The earliest start of `next`, in cycles after the start of `prev` on the same core (never
// before 0, never after prev.cycles), each task's pipes at the offsets of the run it makes
// (staged_run_at_read_hit: reads that hit L2 shorten its loads, and the pipes after them, by
// more than its whole run).
double overlapped_start(const StagedRun& prev, const StagedRun& next, OverlapRoom room = {});
// The same with every GM read missing L2.
double overlapped_start(const TaskCost& prev, const TaskCost& next, OverlapRoom room = {});

}  // namespace tilesim
