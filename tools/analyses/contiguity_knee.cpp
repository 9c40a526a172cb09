#include "tools/analyses/contiguity_knee.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "model/error.hpp"
#include "tools/analyses/parallel_indices.hpp"
#include "tools/analyses/run_kernel.hpp"

namespace tilesim {

namespace {

// copy_in over a (rows_total, 2 * cols) tensor with a (rows, cols) tile: the tile covers half of
// each tensor row, so block_dma cannot extend the run past the tile's last dim and every tile row
// is one burst of `c` bytes. Tiles are numbered row-major and the Ascend C partition hands each
// core kKneeTilesPerCore consecutive ones.
KernelSpec knee_spec(DType dtype, int cores, int64_t c) {
  const int64_t eb = dtype_bytes(dtype);
  const int64_t cols = c / eb;
  const int64_t rows = std::max<int64_t>(1, kKneeTileBytes / c);
  const int64_t tiles = kKneeTilesPerCore * cores;  // two tiles per tile-row of the tensor
  KernelSpec s;
  s.op = "copy_in";
  s.dtype = dtype;
  s.shape = {rows * ((tiles + 1) / 2), 2 * cols};
  s.tile = {rows, cols};
  s.partition = PartitionStyle::kAscendC;
  s.cores = cores;
  return s;
}

// The machine a curve is measured on. Granule-aligned bursts: the second tile of a tensor row
// starts `c` bytes into the row, which no tensor shape can put on a granule boundary for every c
// of the grid; the granule enters the model only through the granules a burst straddles
// (block_dma, dma_gm_bytes), and with the granule set to the UB block every burst of the grid
// (start and length multiples of it) straddles none, as a granule-aligned burst would.
Hardware knee_machine(const Hardware& hw, KneeBursts bursts) {
  Hardware m = hw;
  if (bursts == KneeBursts::kGranuleAligned && hw.ub.align_bytes > 0)
    m.dma.gm_granule_bytes = std::min(hw.dma.gm_granule_bytes, hw.ub.align_bytes);
  return m;
}

KneePoint measure_point(const Hardware& hw, DType dtype, int cores, int64_t c) {
  const KernelSpec spec = knee_spec(dtype, cores, c);
  const RunOutcome run = run_kernel(spec, hw);
  // Useful bytes over the span of the tasks: all cores start at launch (SPMD), so gen_time_us is
  // the time the streaming takes, shared-bandwidth slowdown included. Per-core MTE2 busy time
  // would miss nothing here either, but gen_time_us is also right when cores finish unevenly.
  // With kKneeTilesPerCore tiles per core, the one exposed read latency is a fraction of a percent.
  const double bytes = static_cast<double>(product(spec.shape) * dtype_bytes(dtype));
  KneePoint p;
  p.contiguous_bytes = c;
  p.gbps = run.metrics.gen_time_us > 0 ? bytes / run.metrics.gen_time_us * 1e-3 : 0.0;
  return p;
}

void finish_curve(KneeCurve& k) {
  k.plateau_gbps = k.points.empty() ? 0.0 : k.points.back().gbps;
  for (auto& p : k.points) p.efficiency = k.plateau_gbps > 0 ? p.gbps / k.plateau_gbps : 0.0;
  k.knee90_bytes = knee_at(k.points, 0.90);
  k.knee95_bytes = knee_at(k.points, 0.95);
}

std::string scenario_name(const Hardware& hw, int cores) {
  return cores == 1              ? "idle core"
         : cores == hw.cores.aiv ? "all cores streaming"
                                 : fmt::format("{} cores streaming", cores);
}

void check_cores(const Hardware& hw, int cores) {
  if (cores < 1 || cores > hw.cores.aiv)
    throw Error(fmt::format("contiguity knee: {} streaming cores (allowed: 1..{} on {})", cores,
                            hw.cores.aiv, hw.name));
}

}  // namespace

std::vector<int64_t> knee_grid(const Hardware& hw) {
  std::vector<int64_t> grid;
  const int64_t step = std::max<int64_t>(1, hw.ub.align_bytes);
  int64_t c = step;
  for (; c <= 2048; c += step) grid.push_back(c);
  // The 95% level is crossed between 2 and 8 KiB on the shipped machines: 256 B steps there.
  for (c = 2048 + 256; c <= 8192; c += 256) grid.push_back(c);
  for (int64_t p = 16384; p <= kKneeMaxBytes; p *= 2)
    if (p > grid.back()) grid.push_back(p);
  return grid;
}

std::optional<int64_t> knee_at(const std::vector<KneePoint>& points, double level) {
  std::optional<int64_t> knee;
  for (auto it = points.rbegin(); it != points.rend() && it->efficiency >= level; ++it)
    knee = it->contiguous_bytes;
  return knee;
}

KneeCurve measure_knee_curve(const Hardware& hw, DType dtype, int cores, int threads,
                             KneeBursts bursts) {
  check_cores(hw, cores);
  const Hardware m = knee_machine(hw, bursts);
  const std::vector<int64_t> grid = knee_grid(hw);
  KneeCurve k;
  k.scenario = scenario_name(hw, cores);
  k.cores = cores;
  k.dtype = dtype;
  k.points.resize(grid.size());
  parallel_indices(grid.size(), threads,
                   [&](size_t i) { k.points[i] = measure_point(m, dtype, cores, grid[i]); });
  finish_curve(k);
  return k;
}

std::vector<KneeCurve> measure_contiguity_knees(const Hardware& hw,
                                                const std::vector<DType>& dtypes, int threads) {
  std::vector<KneeCurve> curves;
  for (DType t : dtypes)
    for (int cores : {1, static_cast<int>(hw.cores.aiv)})
      curves.push_back(measure_knee_curve(hw, t, cores, threads));
  return curves;
}

}  // namespace tilesim
