#include "kernels/tiling/reduction_plan.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>

#include "model/error.hpp"

namespace tilesim {

MergeMode parse_merge_mode(const std::string& text) {
  if (const auto m = enum_named(kMergeModeNames, text)) return *m;
  throw Error(fmt::format("params.merge: unknown merge '{}' (allowed: {})", text,
                          fmt::join(enum_names(kMergeModeNames), ", ")),
              ErrorKind::kParams);
}

const char* merge_mode_name(MergeMode m) {
  return enum_name(kMergeModeNames, m);
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

std::vector<std::vector<ReductionPlan::Part>> cut_block_regions(ReductionPlan& plan,
                                                                const Dims& block) {
  if (plan.dims.size() != 1 || plan.chunks.size() != 1)
    throw InternalError("block regions: one reduced dim and one loop chunk");
  const BlockTiling cut(plan.shape, block, plan.tile);
  const size_t rank = plan.shape.size();
  const auto rd = static_cast<size_t>(plan.dims[0]);
  // Chains: every tuple of non-reduced pieces, row-major (region_chain_runs' numbering).
  const auto& red = cut.pieces(rd);
  int64_t chains = 1;
  for (size_t a = 0; a < rank; ++a)
    if (a != rd) chains *= static_cast<int64_t>(cut.pieces(a).size());
  plan.chains.assign(static_cast<size_t>(chains), ReduceChain{});
  for (int64_t ci = 0; ci < chains; ++ci) {
    ReduceChain& ch = plan.chains[static_cast<size_t>(ci)];
    ch.out = Block{Dims(rank, 0), Dims(rank, 1)};
    int64_t rest = ci;
    for (size_t a = rank; a-- > 0;) {
      if (a == rd) continue;
      const auto n = static_cast<int64_t>(cut.pieces(a).size());
      const Piece& p = cut.pieces(a)[static_cast<size_t>(rest % n)];
      rest /= n;
      ch.out.origin[a] = p.offset;
      ch.out.extent[a] = p.size;
    }
    for (const Piece& p : red) {
      Block seg = ch.out;
      seg.origin[rd] = p.offset;
      seg.extent[rd] = p.size;
      ch.segments.push_back(seg);
    }
  }
  return region_chain_runs(cut, rd);
}

bool splits_rows(const ReductionPlan& plan) {
  for (const auto& parts : plan.blocks)
    for (const ReductionPlan::Part& p : parts)
      if (p.s0 != 0 ||
          p.s1 != static_cast<int64_t>(plan.chains[static_cast<size_t>(p.chain)].segments.size()))
        return true;
  return false;
}

std::vector<std::vector<RowPart>> block_row_parts(const ReductionPlan& plan) {
  std::vector<int64_t> seen(plan.chains.size(), 0);  // per chain: parts in earlier blocks
  std::vector<std::vector<RowPart>> out;
  for (const auto& parts : plan.blocks) {
    auto& row_parts = out.emplace_back();
    for (const ReductionPlan::Part& p : parts)
      row_parts.push_back({p.chain, p.s0, p.s1, seen[static_cast<size_t>(p.chain)]++, 0});
  }
  for (auto& row_parts : out)
    for (RowPart& p : row_parts) p.parts = seen[static_cast<size_t>(p.chain)];
  return out;
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
