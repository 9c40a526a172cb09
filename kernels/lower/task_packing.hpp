#pragma once
// PyPTO's partitioner packs the isomorphic tile chains of one root function into program-subgraph
// instances. tilesim models it as: per root function and PSG, the chains (one task each, in
// creation order) are split into at most `max_tasks` contiguous groups of near-equal size; a
// group is one task running its chains back to back (so the in-task pipeline overlaps them) and
// waiting for the union of their dependencies. Loop count therefore sets task granularity: few
// root functions make few, heavy tasks; many make many light ones.

#include <cstdint>

#include "model/task_graph.hpp"

namespace tilesim {

// Cube chains merge only while a packed task's summed GM -> L1 copy-in bytes stay within
// `cube_copyin_cap` (PyPTO's CubeMergeProcess caps the merge count at mg_copyin_upper_bound /
// a subgraph's copy-in bytes, at least one): heavy cube chains stay tasks of their own.
// max_tasks[0] for AIV PSGs, [1] for AIC; 0 means no packing; cube_copyin_cap 0: no cap.
TaskGraph pack_tasks(const TaskGraph& graph, const int64_t max_tasks[2],
                     int64_t cube_copyin_cap = 0);

}  // namespace tilesim
