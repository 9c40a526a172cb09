#pragma once
// The two-level cut of an spmd launch: each axis is cut into block-sized regions (the last one
// ragged), each region into tile-sized sub-tiles clipped at the region's edge. A block owns a
// run of regions and walks each through UB sub-tile by sub-tile. Without an explicit block the
// region is the tile itself, so every region holds one whole tile (the tile grid in row-major
// order). The independent-tile lowering, the reductions' spmd plan and the functional executor
// all cut through this one class.

#include <cstdint>
#include <functional>
#include <vector>

#include "model/tile_geometry.hpp"

namespace tilesim {

struct Block {
  Dims origin;
  Dims extent;
};

struct Piece {
  int64_t offset = 0;
  int64_t size = 0;
};

class BlockTiling {
 public:
  // `block` empty: the region is the tile.
  BlockTiling(const Dims& shape, const Dims& block, const Dims& tile);
  int64_t regions() const { return regions_; }
  // Regions per axis.
  const Dims& region_counts() const { return counts_; }
  // Along `axis`: every sub-tile piece in order, and the pieces of region `i` along that axis
  // as the index range [first(i), first(i + 1)).
  const std::vector<Piece>& pieces(size_t axis) const { return pieces_[axis]; }
  int64_t first_piece(size_t axis, int64_t i) const { return first_[axis][static_cast<size_t>(i)]; }
  // Region `r` (row-major) as per-axis region indices, and its extent in the tensor.
  Dims region_coords(int64_t r) const;
  Block region(int64_t r) const;
  // The sub-tiles of region `r`, row-major.
  void for_each_subtile(int64_t r, const std::function<void(const Block&)>& visit) const;

 private:
  Dims counts_;
  std::vector<std::vector<Piece>> pieces_;
  std::vector<std::vector<int64_t>> first_;
  int64_t regions_ = 1;
};

// A run of a reduction's pieces [s0, s1) along its reduced dim for one output row, `chain` (the
// row's index, row-major over the pieces of the kept dims).
struct ChainRun {
  int64_t chain = 0;
  int64_t s0 = 0;
  int64_t s1 = 0;
};
// A reduction over dim `rd` of a cut: per region, the runs of its rows (row-major).
std::vector<std::vector<ChainRun>> region_chain_runs(const BlockTiling& cut, size_t rd);
// Block `blk` of `blocks` sharing `units` (each a list of runs) in contiguous ranges
// (block_range): its runs in order, neighbouring runs of one row joined (they accumulate in UB
// together).
std::vector<ChainRun> block_chain_runs(const std::vector<std::vector<ChainRun>>& units,
                                       int64_t blocks, int64_t blk);

}  // namespace tilesim
