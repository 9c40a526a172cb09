#pragma once
// How a tile's work maps onto vector instructions: a binary op over a (broadcast) tile, a
// reduction of a tile along its reduced dims (a reduction record's passes, kernels/ops/
// reduction.hpp, expanded on the tile), and n passes of one instruction class.

#include <cstdint>
#include <vector>

#include "kernels/ops/reduction.hpp"
#include "model/hardware.hpp"
#include "model/task_graph.hpp"
#include "model/tile_geometry.hpp"

namespace tilesim {

// A binary vector op over the compute extent `ce`. With a broadcast operand and rows longer than
// one repeat: one instruction per row, the operand's row (or block) reused through repeat stride
// 0, as Ascend C's Sub(z[r * n], x[r * n], y, n) does; otherwise one instruction over the tile (a
// broadcast operand read through its repeat and block strides, rows that fit one repeat packed).
void add_binary_vec(VecClass cls, DType dt, const Dims& ce, bool broadcast, const Hardware& hw,
                    std::vector<VecOp>& vec);

// How a tile's reduction maps onto vector instructions.
struct TileReduceGeometry {
  int64_t elems = 0;      // elements in the tile
  int64_t out_elems = 0;  // output elements the tile contributes to
  bool last_reduced = false;
  int64_t inner = 1;  // last-dim extent when it is reduced
  int64_t rows = 1;   // reduced elements per output element (all reduced dims)
  int64_t cols = 1;   // trailing non-reduced elements (contiguous), when the last dim is kept
};
TileReduceGeometry reduce_geometry(const Dims& extent, const std::vector<int>& dims);
// Vector ops reducing one tile to its partial along the reduced dims (one statistic).
void add_reduce_ops(const TileReduceGeometry& g, DType dt, std::vector<VecOp>& ops);
// A reduction record's passes as vector instructions: those reducing one tile of geometry g to
// its partial, those finalizing a partial of `out_elems` (a mean's scale) and those merging two
// partials of `out_elems` into one. `in` / `out`: the dtypes of the passes in the input's and in
// the output's dtype (a family keeping fp32 statistics passes fp32 as `out`).
// `from`: the first pass run (1: a running max reused from an amax, ReduceRecord::running_max).
void reduce_tile_work(const ReduceRecord& r, const TileReduceGeometry& g, DType in, DType out,
                      std::vector<VecOp>& ops, size_t from = 0);
void reduce_finalize_work(const ReduceRecord& r, int64_t out_elems, DType in, DType out,
                          std::vector<VecOp>& ops);
void reduce_merge_work(const ReduceRecord& r, int64_t out_elems, DType in, DType out,
                       std::vector<VecOp>& ops, size_t from = 0);
void add_elementwise(VecClass cls, DType dt, int64_t elems, int count, std::vector<VecOp>& ops);

}  // namespace tilesim
