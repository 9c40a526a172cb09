#include "kernels/cube/matmul_plan.hpp"

#include <algorithm>
#include <tuple>

#include "kernels/tiling/tile_rules.hpp"

namespace tilesim {

std::pair<int64_t, int64_t> split_k_range(int64_t k, int64_t step, int64_t slices, int64_t s) {
  const int64_t steps = ceil_div(k, step);
  const int64_t first = steps * s / slices, last = steps * (s + 1) / slices;
  const int64_t k0 = first * step;
  return {k0, std::min(k, last * step) - k0};
}

namespace {

// The swizzle over a grid of `tm` x `tn` tiles: bands of `offset` tile rows (direction 0) or
// columns (1); a band is walked across, one column (row) of at most `offset` tiles at a time,
// odd bands in reverse, so consecutive indices share A row panels (B column panels). Offset 0:
// row-major.
std::pair<int64_t, int64_t> swizzle_at(int64_t idx, int64_t tm_count, int64_t tn_count,
                                       int64_t offset, int64_t direction) {
  if (offset == 0) return {idx / tn_count, idx % tn_count};
  const bool rows = direction == 0;
  const int64_t along = rows ? tm_count : tn_count;
  const int64_t across = rows ? tn_count : tm_count;
  const int64_t band = idx / (offset * across);
  const int64_t in = idx % (offset * across);
  const int64_t width = std::min(offset, along - band * offset);
  const int64_t a = band * offset + in % width;
  int64_t c = in / width;
  if (band % 2 == 1) c = across - 1 - c;
  return rows ? std::pair{a, c} : std::pair{c, a};
}

}  // namespace

MatmulTile spmd_matmul_tile(const SpmdMatmulPlan& p, int64_t idx) {
  const int64_t batch = idx / (p.tiles_m * p.tiles_n);
  idx %= p.tiles_m * p.tiles_n;
  int64_t tm = 0, tn = 0;
  if (p.l2_block_m > 0) {
    // L2 blocks of l2_block_m x l2_block_n tiles in row-major order; the last row and column of
    // blocks may be smaller. Block rows before this one hold full-height blocks.
    const int64_t rows_full = p.l2_block_m * p.tiles_n;  // tiles in one row of blocks
    const int64_t brow = idx / rows_full;
    const int64_t in_row = idx % rows_full;
    const int64_t h = std::min(p.l2_block_m, p.tiles_m - brow * p.l2_block_m);
    const int64_t per_block = h * p.l2_block_n;  // tiles in a full-width block of this row
    const int64_t bcol = in_row / per_block;
    const int64_t w = std::min(p.l2_block_n, p.tiles_n - bcol * p.l2_block_n);
    const auto [a, c] = swizzle_at(in_row % per_block, h, w, p.swizzle_offset, p.swizzle_direction);
    tm = brow * p.l2_block_m + a;
    tn = bcol * p.l2_block_n + c;
  } else {
    std::tie(tm, tn) = swizzle_at(idx, p.tiles_m, p.tiles_n, p.swizzle_offset, p.swizzle_direction);
  }
  return {tm * p.m1, std::min(p.m1, p.m - tm * p.m1), tn * p.n1, std::min(p.n1, p.n - tn * p.n1),
          batch};
}

std::vector<std::vector<MatmulWork>> spmd_matmul_work(const SpmdMatmulPlan& p) {
  const int64_t items = p.tiles() * p.split_k;
  std::vector<std::vector<MatmulWork>> out(static_cast<size_t>(p.grid));
  auto work = [&](int64_t w) {
    const MatmulTile t = spmd_matmul_tile(p, w / p.split_k);
    const int64_t s = w % p.split_k;
    const auto [k0, kext] = split_k_range(p.k, p.k1, p.split_k, s);
    return MatmulWork{t.m0, t.mext, t.n0, t.next, k0, kext, s, t.batch};
  };
  for (int64_t b = 0; b < p.grid; ++b) {
    auto& list = out[static_cast<size_t>(b)];
    if (p.contiguous) {
      const BlockRange r = block_range(items, p.grid, b);
      for (int64_t w = r.begin; w < r.end; ++w) list.push_back(work(w));
    } else {
      for (int64_t w = b; w < items; w += p.grid) list.push_back(work(w));
    }
  }
  return out;
}

}  // namespace tilesim
