#include "kernels/tiling/block_regions.hpp"

#include <algorithm>

#include "kernels/spec/kernel_spec.hpp"
#include "model/error.hpp"

namespace tilesim {

BlockTiling::BlockTiling(const Dims& shape, const Dims& block, const Dims& tile) {
  const Dims& region = block.empty() ? tile : block;
  if (region.size() != shape.size() || tile.size() != shape.size() || shape.empty())
    throw InternalError("block tiling: block and tile ranks must equal the shape's");
  counts_.resize(shape.size());
  pieces_.resize(shape.size());
  first_.resize(shape.size());
  for (size_t a = 0; a < shape.size(); ++a) {
    if (shape[a] <= 0 || region[a] <= 0 || tile[a] <= 0)
      throw InternalError("block tiling: dims must be positive");
    counts_[a] = ceil_div(shape[a], region[a]);
    regions_ *= counts_[a];
    for (int64_t r0 = 0; r0 < shape[a]; r0 += region[a]) {
      first_[a].push_back(static_cast<int64_t>(pieces_[a].size()));
      const int64_t r1 = std::min(shape[a], r0 + region[a]);
      for (int64_t o = r0; o < r1; o += tile[a])
        pieces_[a].push_back({o, std::min(tile[a], r1 - o)});
    }
    first_[a].push_back(static_cast<int64_t>(pieces_[a].size()));
  }
}

Dims BlockTiling::region_coords(int64_t r) const {
  Dims c(counts_.size());
  for (size_t a = counts_.size(); a-- > 0;) {
    c[a] = r % counts_[a];
    r /= counts_[a];
  }
  return c;
}

Block BlockTiling::region(int64_t r) const {
  const Dims c = region_coords(r);
  Block b{Dims(c.size()), Dims(c.size())};
  for (size_t a = 0; a < c.size(); ++a) {
    const auto& p = pieces_[a];
    const Piece& lo = p[static_cast<size_t>(first_[a][static_cast<size_t>(c[a])])];
    const Piece& hi = p[static_cast<size_t>(first_[a][static_cast<size_t>(c[a]) + 1] - 1)];
    b.origin[a] = lo.offset;
    b.extent[a] = hi.offset + hi.size - lo.offset;
  }
  return b;
}

void BlockTiling::for_each_subtile(int64_t r,
                                   const std::function<void(const Block&)>& visit) const {
  const Dims c = region_coords(r);
  const size_t n = c.size();
  Dims lo(n), hi(n), at(n);
  for (size_t a = 0; a < n; ++a) {
    lo[a] = first_[a][static_cast<size_t>(c[a])];
    hi[a] = first_[a][static_cast<size_t>(c[a]) + 1];
    at[a] = lo[a];
  }
  Block b{Dims(n), Dims(n)};
  while (true) {
    for (size_t a = 0; a < n; ++a) {
      const Piece& p = pieces_[a][static_cast<size_t>(at[a])];
      b.origin[a] = p.offset;
      b.extent[a] = p.size;
    }
    visit(b);
    size_t a = n;
    while (a-- > 0) {
      if (++at[a] < hi[a]) break;
      at[a] = lo[a];
    }
    if (a == static_cast<size_t>(-1)) return;
  }
}

std::vector<std::vector<ChainRun>> region_chain_runs(const BlockTiling& cut, size_t rd) {
  const size_t rank = cut.region_counts().size();
  // A row's index: its kept pieces as a mixed-radix number.
  Dims radix(rank, 1);
  for (size_t a = rank; a-- > 0;)
    if (a + 1 < rank)
      radix[a] = radix[a + 1] * (a + 1 == rd ? 1 : static_cast<int64_t>(cut.pieces(a + 1).size()));
  std::vector<std::vector<ChainRun>> regions;
  for (int64_t r = 0; r < cut.regions(); ++r) {
    const Dims rc = cut.region_coords(r);
    std::vector<int64_t> ids = {0};
    for (size_t a = 0; a < rank; ++a) {
      if (a == rd) continue;
      std::vector<int64_t> next;
      for (int64_t id : ids)
        for (int64_t i = cut.first_piece(a, rc[a]); i < cut.first_piece(a, rc[a] + 1); ++i)
          next.push_back(id + i * radix[a]);
      ids = std::move(next);
    }
    std::vector<ChainRun> runs;
    for (int64_t id : ids)
      runs.push_back({id, cut.first_piece(rd, rc[rd]), cut.first_piece(rd, rc[rd] + 1)});
    regions.push_back(std::move(runs));
  }
  return regions;
}

std::vector<ChainRun> block_chain_runs(const std::vector<std::vector<ChainRun>>& units,
                                       int64_t blocks, int64_t blk) {
  const BlockRange range = block_range(static_cast<int64_t>(units.size()), blocks, blk);
  std::vector<ChainRun> runs;
  for (int64_t u = range.begin; u < range.end; ++u)
    for (const ChainRun& x : units[static_cast<size_t>(u)]) {
      if (!runs.empty() && runs.back().chain == x.chain && runs.back().s1 == x.s0)
        runs.back().s1 = x.s1;
      else
        runs.push_back(x);
    }
  return runs;
}

}  // namespace tilesim
