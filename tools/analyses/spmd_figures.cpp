#include "tools/analyses/spmd_figures.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <utility>

namespace tilesim {

SpmdFigures spmd_figures(const TaskGraph& graph, const SimResult& sim, const Metrics& m,
                         const Hardware& hw, int64_t grid) {
  SpmdFigures f;
  if (graph.runtime != RuntimeStyle::kSpmd || grid < 1 || m.per_core.empty()) return f;
  f.valid = true;
  f.grid = grid;
  // The units blocks land on: cores of the blocks' type (the type of the cores that ran them),
  // or for a mixed launch clusters (an AIC and its two AIVs, sim/spmd_runtime.hpp).
  const bool mixed = std::any_of(graph.tasks.begin(), graph.tasks.end(),
                                 [](const Task& t) { return t.mix_lane >= 0; });
  const CoreType type = mixed ? CoreType::kAic : m.per_core.front().type;
  f.cores = type == CoreType::kAic ? hw.cores.aic : hw.cores.aiv;
  const auto unit = [&](int32_t core) -> int32_t {
    if (!mixed) return core;
    return sim.core_types[static_cast<size_t>(core)] == CoreType::kAic
               ? core - static_cast<int32_t>(hw.cores.aiv)
               : core / 2;
  };
  double busy = 0, wait = 0;
  for (const auto& c : m.per_core) {
    if (!mixed && c.type != type) continue;
    busy += c.busy_us;
    wait += c.wait_schedule_time_us;
  }
  // Blocks per (launch, unit) (a block's first task; a block of several tasks counts once), and
  // each unit's blocks and last end.
  std::map<std::pair<int32_t, int32_t>, int64_t> ran;
  std::map<int32_t, std::pair<int64_t, double>> per_unit;
  for (size_t i = 0; i < graph.tasks.size(); ++i) {
    const Task& t = graph.tasks[i];
    if (!mixed && graph.kinds[static_cast<size_t>(t.kind)].core != type) continue;
    const int32_t u = unit(sim.tasks[i].core);
    auto& [blocks, end] = per_unit[u];
    end = std::max(end, sim.tasks[i].end);
    if (t.continues_block) continue;
    ++ran[{t.launch, u}];
    ++blocks;
  }
  f.cores_used = static_cast<int64_t>(per_unit.size());
  for (const auto& [at, n] : ran) f.waves = std::max(f.waves, n);
  int32_t tail_launch = -1;
  for (const auto& [at, n] : ran)
    if (n == f.waves && (tail_launch < 0 || at.first == tail_launch)) {
      tail_launch = at.first;
      ++f.tail_blocks;
    }
  double others_done = -1;  // the latest a unit outside the last wave finished
  for (const auto& [u, ue] : per_unit)
    if (ue.first != f.waves)
      others_done = std::max(others_done, hw.cycles_to_us(ue.second - sim.first_start));
  if (f.waves > 1 && others_done >= 0 && graph.num_launches() == 1)
    f.tail_exposed_us = m.gen_time_us - others_done;
  f.tail_occupancy = static_cast<double>(f.tail_blocks) / static_cast<double>(f.cores);
  f.blocks_per_core = static_cast<double>(grid) / static_cast<double>(f.cores);
  const auto all_cores = static_cast<double>(mixed ? hw.cores.aic + hw.cores.aiv : f.cores);
  f.utilisation = m.gen_time_us > 0 ? busy / (all_cores * m.gen_time_us) : 0;
  f.core_time_us = busy + wait;
  f.block_busy_us = busy / static_cast<double>(grid);
  f.block_overhead_share = f.core_time_us > 0 ? wait / f.core_time_us : 0;
  f.subtiles_min = std::numeric_limits<int64_t>::max();
  f.copy_bytes = std::numeric_limits<int64_t>::max();
  f.burst_bytes = std::numeric_limits<int64_t>::max();
  for (const auto& t : graph.tasks) {
    const TaskKind& kind = graph.kinds[static_cast<size_t>(t.kind)];
    int64_t steps = 0;
    for (const auto& s : kind.steps) {
      steps += s.repeat;
      // A step's sub-tile copy is its largest load: a reduction's few-byte result write (a step
      // of its own) or a broadcast operand's row is not the sub-tile.
      const DmaOp* main = nullptr;
      for (const auto& op : s.loads)
        if (op.bytes() > 0 && (!main || op.bytes() > main->bytes())) main = &op;
      if (!main) continue;
      f.copy_bytes = std::min(f.copy_bytes, main->bytes());
      f.burst_bytes = std::min(f.burst_bytes, main->burst_bytes);
    }
    f.subtiles_min = std::min(f.subtiles_min, steps);
    f.subtiles_max = std::max(f.subtiles_max, steps);
  }
  if (graph.tasks.empty()) f.subtiles_min = 0;
  if (f.copy_bytes == std::numeric_limits<int64_t>::max()) f.copy_bytes = f.burst_bytes = 0;
  f.block_gm_bytes = (m.gm_read_bytes + m.gm_write_bytes) / static_cast<double>(grid);
  return f;
}

const std::vector<SpmdField>& spmd_fields() {
  static const std::vector<SpmdField> fields = {
      {"cores", true, [](const SpmdFigures& f) { return static_cast<double>(f.cores); }},
      {"cores_used", true, [](const SpmdFigures& f) { return static_cast<double>(f.cores_used); }},
      {"waves", true, [](const SpmdFigures& f) { return static_cast<double>(f.waves); }},
      {"tail_blocks", true,
       [](const SpmdFigures& f) { return static_cast<double>(f.tail_blocks); }},
      {"tail_occupancy", false, [](const SpmdFigures& f) { return f.tail_occupancy; }},
      {"tail_exposed_us", false, [](const SpmdFigures& f) { return f.tail_exposed_us; }},
      {"blocks_per_core", false, [](const SpmdFigures& f) { return f.blocks_per_core; }},
      {"subtiles_min", true,
       [](const SpmdFigures& f) { return static_cast<double>(f.subtiles_min); }},
      {"subtiles_max", true,
       [](const SpmdFigures& f) { return static_cast<double>(f.subtiles_max); }},
      {"block_copy_bytes", true,
       [](const SpmdFigures& f) { return static_cast<double>(f.copy_bytes); }},
      {"block_burst_bytes", true,
       [](const SpmdFigures& f) { return static_cast<double>(f.burst_bytes); }},
      {"block_gm_bytes", false, [](const SpmdFigures& f) { return f.block_gm_bytes; }},
      {"block_busy_us", false, [](const SpmdFigures& f) { return f.block_busy_us; }},
      {"utilisation", false, [](const SpmdFigures& f) { return f.utilisation; }},
      {"core_time_us", false, [](const SpmdFigures& f) { return f.core_time_us; }},
      {"block_overhead_share", false, [](const SpmdFigures& f) { return f.block_overhead_share; }},
  };
  return fields;
}

namespace {

std::string bytes_text(double b) {
  if (b >= 1024.0 * 1024.0) return fmt::format("{:.1f} MiB", b / (1024.0 * 1024.0));
  if (b >= 1024.0) return fmt::format("{:.1f} KiB", b / 1024.0);
  return fmt::format("{:.0f} B", b);
}

}  // namespace

std::string spmd_summary(const SpmdFigures& f) {
  if (!f.valid) return "";
  const std::string subtiles = f.subtiles_min == f.subtiles_max
                                   ? fmt::format("{}", f.subtiles_min)
                                   : fmt::format("{}-{}", f.subtiles_min, f.subtiles_max);
  return fmt::format(
      "grid {} on {} cores: {:.2f} blocks/core, {} wave{}, tail wave {}/{} ({:.0f}%), {} "
      "sub-tiles/block, copies {} (bursts {}), {} GM per block, block starts {:.1f}% of core "
      "time",
      f.grid, f.cores, f.blocks_per_core, f.waves, f.waves == 1 ? "" : "s", f.tail_blocks, f.cores,
      f.tail_occupancy * 100.0, subtiles, bytes_text(static_cast<double>(f.copy_bytes)),
      bytes_text(static_cast<double>(f.burst_bytes)), bytes_text(f.block_gm_bytes),
      f.block_overhead_share * 100.0);
}

}  // namespace tilesim
