#include "sim/dma_attribution.hpp"

#include <algorithm>

#include "model/task_cost.hpp"

namespace tilesim {

DmaBusy shared_dma_busy(const TaskCost& cost, double dur, double read_hit, double write_share) {
  const double cycles = at_read_hit(cost.cycles, cost.hit_cycles, read_hit);
  const double mte2 = at_read_hit(cost.mte2_busy, cost.hit_mte2_busy, read_hit);
  if (cycles <= 0) return {std::min(dur, mte2), std::min(dur, cost.mte3_busy)};
  const double lost = std::max(0.0, dur - cycles);
  const double w = std::clamp(write_share, 0.0, 1.0);
  const double mixed = std::clamp(cost.mixed_share, 0.0, 1.0);
  const double lost_writes = lost * w, lost_reads = lost - lost_writes;
  // Waiting through all of the delay is the uniform stretch of the whole run.
  auto stretched = [&](double busy, double waits) {
    const double stretch = waits >= lost ? dur / cycles : 1 + waits / cycles;
    return std::min(dur, busy * std::max(1.0, stretch));
  };
  // Each pipe waits for its own traffic's delay, and for the other's where they are mixed.
  return {stretched(mte2, lost_reads + mixed * lost_writes),
          stretched(cost.mte3_busy, lost_writes + mixed * lost_reads)};
}

void CoreDmaBusy::add(const TaskCost& cost, double start, double dur, double read_hit,
                      double write_share) {
  const DmaBusy busy = shared_dma_busy(cost, dur, read_hit, write_share);
  const double scale = cost.cycles > 0 ? dur / cost.cycles : 1;
  auto count = [&](double& total, double& until, double own, double from, double to) {
    if (own <= 0) return;
    total += own - std::clamp(until - (start + from * scale), 0.0, own);
    until = std::max(until, start + to * scale);
  };
  const PipeStages& s = cost.stages;
  count(total_.mte2, mte2_until_, busy.mte2, s.load_start, s.load_ready);
  count(total_.mte3, mte3_until_, busy.mte3, s.store_start, s.store_ready);
}

}  // namespace tilesim
