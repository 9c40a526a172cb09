#pragma once
// Geometry of a tile inside a row-major tensor: how many tiles, the clipped extent of each, the
// DMA instruction that moves one, and the rulebook's per-candidate figures.

#include <cstdint>
#include <functional>
#include <numeric>
#include <vector>

#include "model/dims.hpp"
#include "model/dtype.hpp"
#include "model/task_graph.hpp"

namespace tilesim {

// The product of a list of extents or counts (Dims, a loop nest's counts): 1 when empty.
template <class Ints>
int64_t product(const Ints& d) {
  return std::accumulate(d.begin(), d.end(), int64_t{1}, std::multiplies<>());
}
// Inline: the DMA and cost formulas call it per burst and per instruction.
inline int64_t ceil_div(int64_t a, int64_t b) {
  return a / b + (a % b > 0 ? 1 : 0);  // a + b - 1 could overflow
}
// x rounded up to a multiple of a.
int64_t round_up(int64_t x, int64_t a);
// prod(ceil(shape[i] / tile[i])): the number of tiles one op over `shape` expands into.
int64_t auto_tiles(const Dims& shape, const Dims& tile);
// tile[-1] * dtype bytes: the rulebook's contiguous bytes, from the tile alone.
int64_t contiguous_bytes(const Dims& tile, DType dtype);

// The tiles of `shape`, in row-major order of tile index.
class TileGrid {
 public:
  TileGrid(Dims shape, Dims tile);
  int64_t count() const { return count_; }
  const Dims& counts() const { return counts_; }
  const Dims& shape() const { return shape_; }
  const Dims& tile() const { return tile_; }
  Dims origin(int64_t index) const;
  // The tile's extent: the tile shape clipped at the tensor's edge (ragged tails stay exact).
  Dims extent(int64_t index) const;
  Dims extent_at(const Dims& origin) const;

 private:
  Dims shape_, tile_, counts_;
  int64_t count_ = 0;
};

// A key naming the block of tensor `tensor` that starts at `origin` (for Access).
uint64_t block_key(uint32_t tensor, const Dims& origin);

// One DMA instruction moving the block `extent` at `origin` of a row-major tensor `shape`.
// Trailing dims the block covers in full merge into one contiguous burst; `granule` is the GM
// access granule whose boundaries a misaligned burst straddles (assuming a granule-aligned base).
DmaOp block_dma(DmaDir dir, const Dims& shape, const Dims& origin, const Dims& extent, DType dtype,
                int64_t granule);
// The same block moved one ND row at a time, as the cube's copies do (an ND2NZ DataCopy into L1
// converts each row; the fixpipe writes C row by row): rows that are contiguous in GM still
// count one burst each.
DmaOp row_dma(DmaDir dir, const Dims& shape, const Dims& origin, const Dims& extent, DType dtype,
              int64_t granule);

}  // namespace tilesim
