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
  // The blocks' core type: the type of the cores that ran them.
  const CoreType type = m.per_core.front().type;
  f.cores = type == CoreType::kAic ? hw.cores.aic : hw.cores.aiv;
  double busy = 0, wait = 0;
  for (const auto& c : m.per_core) {
    if (c.type != type) continue;
    ++f.cores_used;
    busy += c.busy_us;
    wait += c.wait_schedule_time_us;
  }
  // Tasks per (launch, core) of the blocks' type; one launch: each core's task count.
  std::map<std::pair<int32_t, int32_t>, int64_t> ran;
  for (size_t i = 0; i < graph.tasks.size(); ++i)
    if (graph.kinds[static_cast<size_t>(graph.tasks[i].kind)].core == type)
      ++ran[{graph.tasks[i].launch, sim.tasks[i].core}];
  for (const auto& [at, n] : ran) f.waves = std::max(f.waves, n);
  int32_t tail_launch = -1;
  for (const auto& [at, n] : ran)
    if (n == f.waves && (tail_launch < 0 || at.first == tail_launch)) {
      tail_launch = at.first;
      ++f.tail_blocks;
    }
  double others_done = -1;  // the latest a core outside the last wave finished
  for (const auto& c : m.per_core)
    if (c.type == type && c.execute_task_num != f.waves)
      others_done = std::max(others_done, c.core_total_work_time_us);
  if (f.waves > 1 && others_done >= 0 && graph.num_launches() == 1)
    f.tail_exposed_us = m.gen_time_us - others_done;
  f.tail_occupancy = static_cast<double>(f.tail_blocks) / static_cast<double>(f.cores);
  f.blocks_per_core = static_cast<double>(grid) / static_cast<double>(f.cores);
  f.utilisation = m.gen_time_us > 0 ? busy / (static_cast<double>(f.cores) * m.gen_time_us) : 0;
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
