#include "kernels/tiling/tile_rules.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "model/error.hpp"

namespace tilesim {

void check_row_alignment(const std::string& subject, int64_t last, int64_t bytes,
                         const Hardware& hw) {
  const int64_t align = hw.ub.align_bytes;
  if (last * bytes % align == 0) return;
  throw Error(
      fmt::format("{} is misaligned: last dim {} x {} B = {} B is not a multiple of {} B "
                  "(use a multiple of {} elements)",
                  subject, last, bytes, last * bytes, align, std::max<int64_t>(1, align / bytes)),
      ErrorKind::kAlignment);
}

void check_loop_count(const std::string& subject, int64_t count, int axis, int64_t size) {
  if (count > size)
    throw Error(fmt::format("{}loop_count {} exceeds the loop axis {} of size {}", subject, count,
                            axis, size),
                ErrorKind::kLimits);
}

void check_partition_loop(const KernelSpec& spec) {
  if (spec.partition == PartitionStyle::kPypto || spec.loop_count == 1) return;
  throw Error(fmt::format("{}: loop_count {} applies to the pypto partition; the {} partition "
                          "splits tiles over {}",
                          spec.op, spec.loop_count, partition_name(spec.partition),
                          spec.partition == PartitionStyle::kSpmd ? "partition.grid blocks"
                                                                  : "partition.cores"),
              ErrorKind::kLimits);
}

void validate_tile(const KernelSpec& spec, const Hardware& hw) {
  if (spec.tile.size() != spec.shape.size())
    throw Error(fmt::format("{}: tile {} has rank {} but shape {} has rank {} (they must match)",
                            spec.op, format_dims(spec.tile), spec.tile.size(),
                            format_dims(spec.shape), spec.shape.size()),
                ErrorKind::kInput);
  if (spec.partition != PartitionStyle::kSpmd)
    check_row_alignment(fmt::format("{}: tile {}", spec.op, format_dims(spec.tile)),
                        spec.tile.back(), dtype_bytes(spec.dtype), hw);
}

int64_t ub_tile_bytes(const Dims& tile, DType dtype, const Hardware& hw) {
  const int64_t row = tile.back() * dtype_bytes(dtype);
  return product(tile) / tile.back() * (ceil_div(row, hw.ub.align_bytes) * hw.ub.align_bytes);
}

int64_t ub_copy_bytes(const DmaOp& copy, const Hardware& hw) {
  return copy.bursts * (ceil_div(copy.burst_bytes, hw.ub.align_bytes) * hw.ub.align_bytes);
}

std::vector<Chunk> loop_chunks(const KernelSpec& spec, int axis) {
  const int64_t n = spec.shape[static_cast<size_t>(axis)];
  check_loop_count(spec.op + ": ", spec.loop_count, axis, n);
  const int64_t batch = ceil_div(n, spec.loop_count);
  std::vector<Chunk> chunks;
  for (int64_t off = 0; off < n; off += batch) chunks.push_back({off, std::min(batch, n - off)});
  return chunks;
}

void check_grid(const KernelSpec& spec, int64_t units, const std::string& what,
                const std::string& note) {
  if (spec.grid < 1)
    throw Error(fmt::format("{}: partition.grid {}: an spmd launch starts at least 1 block",
                            spec.op, spec.grid),
                ErrorKind::kLimits);
  // Blocks beyond the work launch, find nothing and return (block_range): they cost their
  // start. Each is a task, so the grid is held to the task limit.
  if (spec.grid > units && spec.grid > max_tasks())
    throw Error(fmt::format("{}: partition.grid {} launches more blocks than the task limit {} "
                            "(the CLI's --max-tasks raises it), on {} {}{}",
                            spec.op, spec.grid, max_tasks(), units, what, note),
                ErrorKind::kLimits);
}

Dims compute_extent(const Dims& shape, const Dims& tile, const Dims& extent) {
  Dims e = extent;
  for (size_t d = 0; d < e.size(); ++d)
    if (tile[d] > shape[d]) e[d] = tile[d];
  return e;
}

int default_loop_axis(const KernelSpec& spec, const std::vector<int>& dims) {
  if (spec.loop_axis >= 0) return spec.loop_axis;
  for (int a = 0; a < static_cast<int>(spec.shape.size()); ++a)
    if (std::find(dims.begin(), dims.end(), a) == dims.end()) return a;
  return 0;
}

int default_loop_axis(const KernelSpec& spec) {
  return default_loop_axis(spec, spec.dims);
}

void for_each_loop_tile(const KernelSpec& spec, const LoopTileVisitor& visit) {
  const int axis = default_loop_axis(spec);
  const auto chunks = loop_chunks(spec, axis);
  for (size_t r = 0; r < chunks.size(); ++r) {
    Dims sub = spec.shape;
    sub[static_cast<size_t>(axis)] = chunks[r].size;
    const TileGrid grid(sub, spec.tile);
    for (int64_t i = 0; i < grid.count(); ++i) {
      Dims origin = grid.origin(i);
      const Dims extent = grid.extent_at(origin);
      origin[static_cast<size_t>(axis)] += chunks[r].offset;
      visit(origin, extent, static_cast<int32_t>(r));
    }
  }
}

}  // namespace tilesim
