#include "kernels/lower/independent_tiles.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "kernels/lower/diagnostics.hpp"
#include "kernels/tiling/block_regions.hpp"
#include "kernels/tiling/kind_cache.hpp"
#include "kernels/tiling/tile_rules.hpp"
#include "model/error.hpp"

namespace tilesim {

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

}  // namespace tilesim
