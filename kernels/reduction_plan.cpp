#include "kernels/reduction_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "model/error.hpp"

namespace tilesim {

MergeMode parse_merge_mode(const std::string& text) {
  if (text == "in_task") return MergeMode::kInTask;
  if (text == "chain") return MergeMode::kChain;
  if (text == "tree") return MergeMode::kTree;
  if (text == "atomic") return MergeMode::kAtomic;
  if (text == "auto") return MergeMode::kAuto;
  throw Error(
      "params.merge: unknown merge '" + text + "' (allowed: auto, in_task, chain, tree, atomic)",
      ErrorKind::kParams);
}

const char* merge_mode_name(MergeMode m) {
  switch (m) {
    case MergeMode::kInTask:
      return "in_task";
    case MergeMode::kChain:
      return "chain";
    case MergeMode::kTree:
      return "tree";
    case MergeMode::kAtomic:
      return "atomic";
    case MergeMode::kAuto:
      break;
  }
  return "auto";
}

bool is_reduced(const std::vector<int>& dims, size_t d) {
  return std::find(dims.begin(), dims.end(), static_cast<int>(d)) != dims.end();
}

ReductionPlan plan_reduction(const Dims& shape, const Dims& tile, std::vector<int> dims,
                             int loop_axis, int64_t loop_count, MergeMode merge,
                             const std::string& op) {
  std::sort(dims.begin(), dims.end());
  dims.erase(std::unique(dims.begin(), dims.end()), dims.end());
  ReductionPlan p;
  p.shape = shape;
  p.tile = tile;
  p.dims = dims;
  p.loop_axis = loop_axis;
  p.merge = merge;
  KernelSpec chunking;
  chunking.op = op;
  chunking.shape = shape;
  chunking.loop_count = loop_count;
  if (is_reduced(dims, static_cast<size_t>(loop_axis)) && loop_count > 1)
    throw Error(fmt::format("{}: loop_axis {} is a reduced dim; loop over a non-reduced axis", op,
                            loop_axis),
                ErrorKind::kLimits);
  p.chunks = loop_chunks(chunking, loop_axis);
  for (size_t r = 0; r < p.chunks.size(); ++r) {
    Dims sub = shape;
    sub[static_cast<size_t>(loop_axis)] = p.chunks[r].size;
    const TileGrid grid(sub, tile);
    // Output blocks in row-major order of their non-reduced tile coordinates; segments in
    // row-major order of the reduced ones (the grid's own order does both).
    std::map<Dims, size_t> by_out;
    for (int64_t i = 0; i < grid.count(); ++i) {
      Dims origin = grid.origin(i);
      const Dims extent = grid.extent_at(origin);
      origin[static_cast<size_t>(loop_axis)] += p.chunks[r].offset;
      Block out{origin, extent};
      for (int d : dims) {
        out.origin[static_cast<size_t>(d)] = 0;
        out.extent[static_cast<size_t>(d)] = 1;
      }
      auto [it, inserted] = by_out.try_emplace(out.origin, p.chains.size());
      if (inserted) p.chains.push_back(ReduceChain{static_cast<int32_t>(r), out, {}});
      p.chains[it->second].segments.push_back(Block{origin, extent});
    }
  }
  return p;
}

std::vector<RowPart> block_row_parts(const ReductionPlan& plan, int64_t b) {
  const int64_t segs = plan.segments_per_chain();
  const int64_t units = static_cast<int64_t>(plan.chains.size()) * segs;
  // The block holding unit u: the last b with units * b / grid <= u (block_range).
  const auto block_of = [&](int64_t u) {
    return static_cast<int64_t>(((static_cast<__int128>(u) + 1) * plan.grid - 1) / units);
  };
  const BlockRange r = block_range(units, plan.grid, b);
  std::vector<RowPart> parts;
  for (int64_t ci = r.begin / segs; ci * segs < r.end; ++ci) {
    const int64_t first = block_of(ci * segs), last = block_of((ci + 1) * segs - 1);
    parts.push_back({ci, std::max(r.begin, ci * segs) - ci * segs,
                     std::min(r.end, (ci + 1) * segs) - ci * segs, b - first, last - first + 1});
  }
  return parts;
}

std::vector<std::vector<MergeStep>> merge_levels(int n, MergeMode mode) {
  std::vector<std::vector<MergeStep>> levels;
  if (mode == MergeMode::kTree) {
    for (int stride = 1; stride < n; stride *= 2) {
      std::vector<MergeStep> level;
      for (int a = 0; a + stride < n; a += 2 * stride) level.push_back({a, a + stride});
      levels.push_back(level);
    }
  } else {
    for (int b = 1; b < n; ++b) levels.push_back({{0, b}});
  }
  return levels;
}

}  // namespace tilesim
