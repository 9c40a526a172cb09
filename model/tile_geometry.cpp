#include "model/tile_geometry.hpp"

#include <algorithm>
#include <array>
#include <functional>
#include <numeric>

#include "model/error.hpp"

namespace tilesim {

int64_t round_up(int64_t x, int64_t a) {
  return ceil_div(x, a) * a;
}

int64_t auto_tiles(const Dims& shape, const Dims& tile) {
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i) n *= ceil_div(shape[i], tile[i]);
  return n;
}

int64_t contiguous_bytes(const Dims& tile, DType dtype) {
  return tile.empty() ? 0 : tile.back() * dtype_bytes(dtype);
}

TileGrid::TileGrid(Dims shape, Dims tile) : shape_(std::move(shape)), tile_(std::move(tile)) {
  if (shape_.size() != tile_.size() || shape_.empty())
    throw InternalError("tile grid: tile rank must equal shape rank");
  counts_.resize(shape_.size());
  for (size_t i = 0; i < shape_.size(); ++i) {
    if (shape_[i] <= 0 || tile_[i] <= 0) throw InternalError("tile grid: dims must be positive");
    counts_[i] = ceil_div(shape_[i], tile_[i]);
  }
  count_ = product(counts_);
}

Dims TileGrid::origin(int64_t index) const {
  Dims o(shape_.size());
  for (size_t i = shape_.size(); i-- > 0;) {
    o[i] = (index % counts_[i]) * tile_[i];
    index /= counts_[i];
  }
  return o;
}

Dims TileGrid::extent_at(const Dims& origin) const {
  Dims e(shape_.size());
  for (size_t i = 0; i < shape_.size(); ++i) e[i] = std::min(tile_[i], shape_[i] - origin[i]);
  return e;
}

Dims TileGrid::extent(int64_t index) const {
  return extent_at(origin(index));
}

uint64_t block_key(uint32_t tensor, const Dims& origin) {
  // Each word folded in and mixed by MurmurHash3's 64-bit finaliser: a word at a time, where a
  // byte-wise FNV-1a took eight multiplies a word (the key is made for every copy a lowering
  // places). Only equality matters: the L2 model numbers blocks in order of first access.
  auto fmix = [](uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    return k ^ (k >> 33);
  };
  uint64_t h = fmix(0x9e3779b97f4a7c15ull ^ tensor);
  for (int64_t o : origin) h = fmix(h ^ static_cast<uint64_t>(o)) + 0x9e3779b97f4a7c15ull;
  return h;
}

namespace {

// The granules that bursts starting at `start` + sum(idx[i] * step[i]) (mod granule), idx[i] in
// [0, count[i]), touch beyond the fewest their length needs.
struct BurstStarts {
  const int64_t* step;
  const int64_t* count;
  size_t dims;
  int64_t granule, burst_bytes, min_granules;

  int64_t extra_from(size_t i, int64_t start) const {
    if (i == dims) return ceil_div(start + burst_bytes, granule) - min_granules;
    const int64_t s = step[i], n = count[i];
    if (n <= 0) return 0;
    const int64_t period = granule / std::gcd(s, granule);  // gcd(0, g) = g: period 1
    const int64_t seen = std::min(n, period);
    int64_t all = 0, head = 0;  // over one period, and over its first n % seen offsets
    for (int64_t j = 0, at = start; j < seen; ++j) {
      if (j == n % seen) head = all;
      all += extra_from(i + 1, at);
      at += s;
      if (at >= granule) at -= granule;
    }
    return n / seen * all + head;
  }
};

}  // namespace

DmaOp row_dma(DmaDir dir, const Dims& shape, const Dims& origin, const Dims& extent, DType dtype,
              int64_t granule) {
  DmaOp op = block_dma(dir, shape, origin, extent, dtype, granule);
  const int64_t row = extent.back() * dtype_bytes(dtype);
  if (op.burst_bytes > row) {  // whole rows merged into one run: split it back into its rows
    op.bursts = op.bytes() / row;
    op.burst_bytes = row;
  }
  return op;
}

DmaOp block_dma(DmaDir dir, const Dims& shape, const Dims& origin, const Dims& extent, DType dtype,
                int64_t granule) {
  const size_t r = shape.size();
  const int64_t bytes = dtype_bytes(dtype);
  // Contiguous run: the last dim, extended outward while the inner dim is covered in full.
  size_t d = r - 1;
  int64_t run = extent[d];
  while (d > 0 && extent[d] == shape[d]) {
    --d;
    run *= extent[d];
  }
  DmaOp op;
  op.dir = dir;
  op.burst_bytes = run * bytes;
  op.bursts = product(extent) / run;
  // Each burst's start within its GM granule (assuming a granule-aligned base) is the block's
  // start plus idx[i] * step[i] over the dims outside the run, modulo the granule. Along one dim
  // the offsets repeat with period granule / gcd(step, granule), so one period's count, scaled,
  // gives the same figure as walking every burst (tests keep the row-by-row count to check it).
  // The outer dims' steps on the stack (a copy is placed for every tile a lowering walks).
  std::array<int64_t, 8> inline_steps{};
  std::vector<int64_t> heap_steps(d > inline_steps.size() ? d : 0);
  int64_t* step = d > inline_steps.size() ? heap_steps.data() : inline_steps.data();
  int64_t stride = 1, start = 0;  // elements
  for (size_t i = r; i-- > 0;) {
    start = (start + origin[i] * stride % granule * bytes) % granule;
    if (i < d) step[i] = stride * bytes % granule;
    if (i > 0) stride *= shape[i];
  }
  const BurstStarts walk{step,    extent.data(),  d,
                         granule, op.burst_bytes, ceil_div(op.burst_bytes, granule)};
  op.extra_granules = walk.extra_from(0, start);
  return op;
}

}  // namespace tilesim
