#include "kernels/lowering_support.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "kernels/block_regions.hpp"
#include "kernels/cube_task.hpp"
#include "kernels/program.hpp"
#include "kernels/registry.hpp"
#include "model/dma_cost.hpp"
#include "model/error.hpp"
#include "model/ub_budget.hpp"

namespace tilesim {

void validate_tile(const KernelSpec& spec, const Hardware& hw) {
  if (spec.tile.size() != spec.shape.size())
    throw Error(fmt::format("{}: tile {} has rank {} but shape {} has rank {} (they must match)",
                            spec.op, format_dims(spec.tile), spec.tile.size(),
                            format_dims(spec.shape), spec.shape.size()),
                ErrorKind::kInput);
  const int64_t last_bytes = spec.tile.back() * dtype_bytes(spec.dtype);
  if (last_bytes % hw.ub.align_bytes != 0 && spec.partition != PartitionStyle::kSpmd)
    throw Error(
        fmt::format(
            "{}: tile {} is misaligned: last dim {} x {} B = {} B is not a multiple of {} B "
            "(use a multiple of {} elements)",
            spec.op, format_dims(spec.tile), spec.tile.back(), dtype_bytes(spec.dtype), last_bytes,
            hw.ub.align_bytes, hw.ub.align_bytes / dtype_bytes(spec.dtype)),
        ErrorKind::kAlignment);
}

int64_t ub_tile_bytes(const Dims& tile, DType dtype, const Hardware& hw) {
  const int64_t row = tile.back() * dtype_bytes(dtype);
  return product(tile) / tile.back() * (ceil_div(row, hw.ub.align_bytes) * hw.ub.align_bytes);
}

DmaOp tile_dma(const KernelSpec& spec, DmaDir dir, const Dims& shape, const Dims& origin,
               const Dims& extent, const Hardware& hw) {
  const DmaOp op = block_dma(dir, shape, origin, extent, spec.dtype, hw.dma.gm_granule_bytes);
  return spec.partition == PartitionStyle::kSpmd ? data_copy_pad(op) : op;
}

std::vector<Chunk> loop_chunks(const KernelSpec& spec, int axis) {
  const int64_t n = spec.shape[static_cast<size_t>(axis)];
  if (spec.loop_count > n)
    throw Error(fmt::format("{}: loop_count {} exceeds the loop axis {} of size {}", spec.op,
                            spec.loop_count, axis, n),
                ErrorKind::kLimits);
  const int64_t batch = ceil_div(n, spec.loop_count);
  std::vector<Chunk> chunks;
  for (int64_t off = 0; off < n; off += batch) chunks.push_back({off, std::min(batch, n - off)});
  return chunks;
}

void append_step_signature(const TileStep& st, std::vector<int64_t>& s) {
  for (const auto* ops : {&st.loads, &st.stores}) {
    s.push_back(static_cast<int64_t>(ops->size()));
    for (const auto& d : *ops)
      s.insert(s.end(), {d.bursts, d.burst_bytes, d.extra_granules, d.padded ? 1 : 0,
                         static_cast<int64_t>(d.path), d.src_bytes, d.atomic ? 1 : 0});
  }
  for (const auto* ops : {&st.load_fill, &st.vec}) {
    s.push_back(static_cast<int64_t>(ops->size()));
    for (const auto& v : *ops)
      s.insert(s.end(), {static_cast<int64_t>(v.cls), static_cast<int64_t>(v.dtype), v.batch,
                         v.rows, v.cols});
  }
  s.push_back(st.accumulates ? static_cast<int64_t>(st.fold.size()) : -1);
  for (const auto& v : st.fold)
    s.insert(s.end(),
             {static_cast<int64_t>(v.cls), static_cast<int64_t>(v.dtype), v.batch, v.rows, v.cols});
  s.push_back(static_cast<int64_t>(st.cube.size()));
  for (const auto& c : st.cube)
    s.insert(s.end(), {static_cast<int64_t>(c.dtype), c.m, c.k, c.n, c.l0a_bytes, c.l0b_bytes});
}

void append_kind_signature(const TaskKind& kind, std::vector<int64_t>& s) {
  s.insert(s.end(), {static_cast<int64_t>(kind.core), kind.psg, kind.buffer_count, kind.l0_depth,
                     static_cast<int64_t>(kind.carries_state)});
  for (const auto& b : kind.buffers) {
    s.push_back(b.bytes);
    s.push_back(static_cast<int64_t>(b.role) * 8 + static_cast<int64_t>(b.space));
  }
  for (const auto& st : kind.steps) {
    s.push_back(-1);
    s.push_back(st.repeat);
    append_step_signature(st, s);
  }
}

void append_step(TaskKind& kind, const TileStep& step) {
  // Scratch per thread: lowerings run in parallel over a sweep's candidates.
  thread_local std::vector<int64_t> last, next;
  if (!kind.steps.empty()) {
    last.clear();
    next.clear();
    append_step_signature(kind.steps.back(), last);
    append_step_signature(step, next);
    if (last == next) {
      kind.steps.back().repeat += step.repeat;
      return;
    }
  }
  kind.steps.push_back(step);
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

int KindCache::get(TaskGraph& graph, const TaskKind& kind) {
  sig_.clear();
  append_kind_signature(kind, sig_);
  auto it = ids_.find(sig_);
  if (it != ids_.end()) return it->second;
  const int id = graph.add_kind(kind);
  ids_.emplace(sig_, id);
  return id;
}

Dims compute_extent(const Dims& shape, const Dims& tile, const Dims& extent) {
  Dims e = extent;
  for (size_t d = 0; d < e.size(); ++d)
    if (tile[d] > shape[d]) e[d] = tile[d];
  return e;
}

void add_binary_vec(VecClass cls, DType dt, const Dims& ce, bool broadcast, const Hardware& hw,
                    std::vector<VecOp>& vec) {
  const int64_t cols = ce.back(), rows = product(ce) / cols;
  if (broadcast && cols * dtype_bytes(dt) > hw.vector.bytes_per_repeat) {
    for (int64_t r = 0; r < rows; ++r) vec.push_back(VecOp{cls, dt, 1, 1, cols});
  } else {
    vec.push_back(VecOp{cls, dt, 1, 1, product(ce)});
  }
}

namespace {

int default_loop_axis(const KernelSpec& spec) {
  if (spec.loop_axis >= 0) return spec.loop_axis;
  for (int a = 0; a < static_cast<int>(spec.shape.size()); ++a)
    if (std::find(spec.dims.begin(), spec.dims.end(), a) == spec.dims.end()) return a;
  return 0;
}

}  // namespace

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

LoweredKernel lower_independent_tiles(const KernelSpec& spec, const Hardware& hw,
                                      const std::string& psg, const TileWork& work) {
  validate_tile(spec, hw);
  LoweredKernel out;
  TaskGraph& g = out.graph;
  const int psg_id = g.add_psg(psg);
  KindCache cache;
  std::vector<Access> accesses;
  auto make_kind = [&](const Dims& origin, const Dims& extent) {
    TaskKind k;
    k.psg = psg_id;
    k.buffer_count = spec.buffer_count;
    accesses.clear();
    work(origin, extent, k, accesses);
    return k;
  };
  if (spec.partition == PartitionStyle::kPypto) {
    g.runtime = RuntimeStyle::kMpmd;
    for_each_loop_tile(spec, [&](const Dims& origin, const Dims& extent, int32_t root) {
      const int32_t t = g.add_task(cache.get(g, make_kind(origin, extent)), root);
      for (const Access& a : accesses) g.add_access(t, a);
    });
  } else {
    if (spec.loop_count != 1)
      throw Error(fmt::format("{}: loop_count {} applies to the pypto partition; the {} "
                              "partition splits tiles over {}",
                              spec.op, spec.loop_count, partition_name(spec.partition),
                              spec.partition == PartitionStyle::kSpmd ? "partition.grid blocks"
                                                                      : "partition.cores"),
                  ErrorKind::kLimits);
    g.runtime = RuntimeStyle::kSpmd;
    const bool spmd = spec.partition == PartitionStyle::kSpmd;
    // Runs of regions per block or core; without a block region each region is one tile.
    const BlockTiling cut(spec.shape, spmd ? spec.block : Dims{}, spec.tile);
    int64_t used = 0;
    if (spmd) {
      used = spec.grid;  // blocks past the regions own nothing
      check_grid(spec, cut.regions(), spec.block.empty() ? "tiles" : "block regions", "");
    } else {
      const int64_t cores = spec.cores > 0 ? spec.cores : hw.cores.aiv;
      if (cores > hw.cores.aiv)
        throw Error(fmt::format("{}: partition.cores {} exceeds the {} AIV cores of {}", spec.op,
                                cores, hw.cores.aiv, hw.name),
                    ErrorKind::kLimits);
      used = std::min(cores, cut.regions());
    }
    std::vector<Access> block_accesses;  // the GM blocks of all the task's tiles, in order
    for (int64_t c = 0; c < used; ++c) {
      const BlockRange r = block_range(cut.regions(), used, c);
      TaskKind core_kind;
      block_accesses.clear();
      for (int64_t i = r.begin; i < r.end; ++i)
        cut.for_each_subtile(i, [&](const Block& t) {
          TaskKind tile = make_kind(t.origin, t.extent);
          block_accesses.insert(block_accesses.end(), accesses.begin(), accesses.end());
          if (core_kind.steps.empty())
            core_kind = tile;
          else
            append_step(core_kind, tile.steps.front());  // the buffers are the tile's
        });
      // Ascend C tasks are pinned to their core; SPMD blocks are placed by the hardware.
      core_kind.label = fmt::format("{}_{}{}", psg, spmd ? "block" : "core", c);
      const int32_t t = g.add_task(cache.get(g, core_kind), 0, spmd ? -1 : static_cast<int32_t>(c));
      for (const Access& a : block_accesses) g.add_access(t, a);
    }
  }
  g.finalize();
  fill_common_diagnostics(spec, hw, out);
  return out;
}

RuleFigures rule_figures(const KernelSpec& spec, const Hardware& hw) {
  RuleFigures f;
  f.contiguous_bytes = contiguous_bytes(spec.tile, spec.dtype);
  // The elements the limit counts: prod(tile), or what the family says one tile holds.
  const KernelFamily* family = find_family(spec.op);
  // A program's cube tile counts as the matmul family's does (cube_tile_elements).
  const bool operand_tiles =
      (family && family->tile_elements) ||
      (spec.program && spec.program->tile_id(spec.program_tile) >= 0 &&
       spec.program->tiles[static_cast<size_t>(spec.program->tile_id(spec.program_tile))].cube);
  f.prod_tile = family && family->tile_elements ? family->tile_elements(spec)
                : operand_tiles                 ? cube_tile_elements(spec.tile)
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
  d.reduction_segments = 1;
  for (int dim : spec.dims)
    d.reduction_segments *=
        ceil_div(spec.shape[static_cast<size_t>(dim)], spec.tile[static_cast<size_t>(dim)]);
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
