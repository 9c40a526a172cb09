#include "model/tile_geometry.hpp"

#include <functional>
#include <numeric>

#include "model/error.hpp"

namespace tilesim {

int64_t product(const Dims& d) {
  return std::accumulate(d.begin(), d.end(), int64_t{1}, std::multiplies<>());
}

int64_t ceil_div(int64_t a, int64_t b) {
  return a / b + (a % b > 0 ? 1 : 0);  // a + b - 1 could overflow
}

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
  // FNV-1a over the tensor id and the origin.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](uint64_t v) {
    for (int i = 0; i < 8; ++i) {
      h ^= (v >> (8 * i)) & 0xff;
      h *= 1099511628211ull;
    }
  };
  mix(tensor);
  for (int64_t o : origin) mix(static_cast<uint64_t>(o));
  return h;
}

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
  // Element strides of the tensor, to find each burst's GM start address.
  Dims stride(r, 1);
  for (size_t i = r - 1; i-- > 0;) stride[i] = stride[i + 1] * shape[i + 1];
  int64_t base = 0;
  for (size_t i = 0; i < r; ++i) base += origin[i] * stride[i];
  // Bursts are indexed by the dims outside the run (0..d-1 plus the partial dim d itself when the
  // run did not absorb it); walk them as a mixed-radix counter.
  const int64_t min_granules = ceil_div(op.burst_bytes, granule);
  std::vector<int64_t> idx(d, 0);
  for (int64_t b = 0; b < op.bursts; ++b) {
    int64_t addr = base;
    for (size_t i = 0; i < d; ++i) addr += idx[i] * stride[i];
    const int64_t start = (addr * bytes) % granule;
    op.extra_granules += ceil_div(start + op.burst_bytes, granule) - min_granules;
    for (size_t i = d; i-- > 0;) {
      if (++idx[i] < extent[i]) break;
      idx[i] = 0;
    }
  }
  return op;
}

}  // namespace tilesim
