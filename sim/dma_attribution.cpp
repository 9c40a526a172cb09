#include "sim/dma_attribution.hpp"

#include <algorithm>

#include "model/task_cost.hpp"

namespace tilesim {

DmaBusy shared_dma_busy(const TaskCost& cost, double dur, double write_share) {
  if (cost.cycles <= 0) return {std::min(dur, cost.mte2_busy), std::min(dur, cost.mte3_busy)};
  const double lost = std::max(0.0, dur - cost.cycles);
  const double w = std::clamp(write_share, 0.0, 1.0);
  const double mixed = std::clamp(cost.mixed_share, 0.0, 1.0);
  const double lost_writes = lost * w, lost_reads = lost - lost_writes;
  // Waiting through all of the delay is the uniform stretch of the whole run.
  auto stretched = [&](double busy, double waits) {
    const double stretch = waits >= lost ? dur / cost.cycles : 1 + waits / cost.cycles;
    return std::min(dur, busy * std::max(1.0, stretch));
  };
  // Each pipe waits for its own traffic's delay, and for the other's where they are mixed.
  return {stretched(cost.mte2_busy, lost_reads + mixed * lost_writes),
          stretched(cost.mte3_busy, lost_writes + mixed * lost_reads)};
}

}  // namespace tilesim
