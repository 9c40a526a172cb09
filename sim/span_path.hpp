#pragma once
// A run's span (gen_time_us) along its critical path: what a swimlane's length is made of.
//
// Walked back from the task that ends last: each task on the path started when the last of its
// causes ended, its latest predecessor (the gap is a hand-off through the runtime: for PyPTO the
// completion seen by its thread's poll, the resolve, the dispatch and the notify to the core,
// sim/pypto_runtime.hpp) or the task before it on its core (the gap is the core's turnaround, or
// the time it held the task pending), or neither (the path begins: its gap to the run's first
// start is start-up). A predecessor that ends when the core's previous task does is taken as the
// cause. The parts add up to the span exactly (a path that would cycle through zero-length tasks
// starting together is cut after as many steps as tasks).

#include <cstdint>

#include "model/task_graph.hpp"
#include "sim/simulator.hpp"

namespace tilesim {

struct SpanPath {
  int64_t tasks = 0;            // tasks on the path
  double task_cycles = 0;       // their bodies
  int64_t handoffs = 0;         // predecessor -> successor steps
  double handoff_cycles = 0;    // predecessor end -> successor start
  double core_wait_cycles = 0;  // previous task's end on the core -> start
  double head_cycles = 0;       // the run's first start -> the path's first task's start
  double cycles() const { return task_cycles + handoff_cycles + core_wait_cycles + head_cycles; }
};

// The critical path of `sim`, a run of `graph` (empty when it ran no task).
SpanPath span_path(const TaskGraph& graph, const SimResult& sim);

}  // namespace tilesim
