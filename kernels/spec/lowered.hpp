#pragma once
// What a lowering gives back: the task graph and the rulebook's figures of the candidate
// (Diagnostics). Kernels describe work (DMA instructions, vector and cube ops, buffers,
// dependencies); they never time it.

#include <cstdint>
#include <string>
#include <vector>

#include "model/task_graph.hpp"

namespace tilesim {

struct Diagnostics {
  int64_t contiguous_bytes = 0;  // tile[-1] * dtype bytes
  int64_t prod_tile = 0;         // elements the prod(tile) limit counts (a cube tile: its operands)
  int64_t auto_tiles = 0;        // tiles one op over the whole shape expands into
  int64_t reduction_segments = 0;             // tiles along the reduction dim(s) per output element
  std::vector<int> tile_exceeds_shape;        // dims where tile > shape
  int64_t ub_bytes = 0;                       // largest UB footprint of any task, at the depth used
  int buffer_depth = 0;                       // smallest multi-buffering depth any task got
  std::vector<std::string> limit_violations;  // PyPTO rulebook limits (reported, not enforced;
                                              // none for an spmd kernel)
  int64_t tasks = 0;
  int32_t launches = 1;  // kernel launches of an spmd graph (rows split over blocks: 2)
};

struct LoweredKernel {
  TaskGraph graph;
  Diagnostics diag;
};

}  // namespace tilesim
