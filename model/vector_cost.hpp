#pragma once
// Vector pipe cost: each instruction pays issue + latency + repeats * cycles_per_repeat of its
// class. A repeat covers vector.bytes_per_repeat bytes; one instruction covers at most
// vector.max_repeats repeats.
//
// Reductions:
//  - along the last axis: halve each row with elementwise adds until one repeat wide, then one
//    in-row reduce repeat per row (the expensive instruction class);
//  - along a non-last axis: combine rows pairwise (a tree of log2(rows) elementwise steps).

#include "model/hardware.hpp"
#include "model/task_graph.hpp"

namespace tilesim {

struct VecCost {
  double cycles = 0;
  int64_t instructions = 0;
  int64_t repeats = 0;
};

// Beats one repeat's write takes when its 32 B blocks land `block_stride` blocks apart: the most
// of them in one UB bank group (blocks fall in the vector.bank_groups groups in turn, and a beat
// writes one block of each group). 1 for contiguous writes (stride 0 or 1).
int64_t ub_write_beats(int64_t block_stride, const Hardware& hw);
VecCost vector_cost(const VecOp& op, const Hardware& hw);

}  // namespace tilesim
