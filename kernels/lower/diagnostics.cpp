#include "kernels/lower/diagnostics.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "kernels/cube/cube_task.hpp"
#include "kernels/program/program.hpp"
#include "kernels/spec/registry.hpp"
#include "kernels/tiling/tile_rules.hpp"
#include "model/ub_budget.hpp"

namespace tilesim {

RuleFigures rule_figures(const KernelSpec& spec, const Hardware& hw) {
  RuleFigures f;
  f.contiguous_bytes = contiguous_bytes(spec.tile, spec.dtype);
  // The elements the limit counts: prod(tile), or what the family says one tile holds.
  const KernelFamily* family = find_family(spec.op);
  const bool family_counts = family && family->tile_elements;
  // A program's cube tile counts as the matmul family's does (cube_tile_elements).
  const int tile = spec.program ? spec.program->tile_id(spec.program_tile) : -1;
  const bool operand_tiles =
      family_counts || (tile >= 0 && spec.program->tiles[static_cast<size_t>(tile)].cube);
  f.prod_tile = family_counts   ? family->tile_elements(spec)
                : operand_tiles ? cube_tile_elements(spec.tile)
                                : product(spec.tile);
  // Per loop body: loop + view/assemble is the rulebook's remedy for too many tiles, so the limit
  // applies to the largest chunk's tiles. Kernels that loop over a view (groupnorm's (N*G) rows)
  // are counted on the tensor's own loop axis, an upper bound.
  Dims body = spec.shape;
  if (!body.empty()) {
    const auto axis = static_cast<size_t>(default_loop_axis(spec));
    body[axis] = ceil_div(body[axis], std::clamp<int64_t>(spec.loop_count, 1, body[axis]));
  }
  f.auto_tiles = auto_tiles(body, spec.tile);
  for (size_t i = 0; i < spec.tile.size(); ++i)
    if (spec.tile[i] > spec.shape[i]) f.tile_exceeds_shape.push_back(static_cast<int>(i));
  // The limits are PyPTO's (its tile expansion); an spmd kernel is written by hand or by Triton.
  if (spec.partition == PartitionStyle::kSpmd) return f;
  if (f.prod_tile > hw.limits.max_tile_elements)
    f.limit_violations.push_back(fmt::format("{} = {} > limits.max_tile_elements = {}",
                                             operand_tiles ? "largest operand tile" : "prod(tile)",
                                             f.prod_tile, hw.limits.max_tile_elements));
  if (f.auto_tiles > hw.limits.max_auto_tiles)
    f.limit_violations.push_back(fmt::format("auto_tiles = {} > limits.max_auto_tiles = {}",
                                             f.auto_tiles, hw.limits.max_auto_tiles));
  return f;
}

void fill_common_diagnostics(const KernelSpec& spec, const Hardware& hw, LoweredKernel& out) {
  Diagnostics& d = out.diag;
  RuleFigures f = rule_figures(spec, hw);
  d.contiguous_bytes = f.contiguous_bytes;
  d.prod_tile = f.prod_tile;
  d.auto_tiles = f.auto_tiles;
  d.tile_exceeds_shape = std::move(f.tile_exceeds_shape);
  d.limit_violations = std::move(f.limit_violations);
  d.tasks = static_cast<int64_t>(out.graph.tasks.size());
  fill_buffer_diagnostics(hw, out);
}

void fill_buffer_diagnostics(const Hardware& hw, LoweredKernel& out) {
  Diagnostics& d = out.diag;
  d.ub_bytes = 0;
  d.buffer_depth = 0;
  for (const auto& k : out.graph.kinds) {
    const BufferPlan plan = plan_buffers(k, hw);  // throws on overflow
    d.ub_bytes = std::max(d.ub_bytes, plan.used[static_cast<int>(MemSpace::kUb)]);
    d.buffer_depth = d.buffer_depth == 0 ? plan.depth : std::min(d.buffer_depth, plan.depth);
  }
}

}  // namespace tilesim
