#include "model/task_overlap.hpp"

#include <algorithm>

#include "model/ub_budget.hpp"

namespace tilesim {

namespace {

// Bytes of `kind`'s buffers of `role` in `space`; L0C's accumulator is the stores' source.
int64_t role_bytes(const TaskKind& kind, MemSpace space, BufferRole role, const Hardware& hw) {
  int64_t total = 0;
  for (const Buffer& b : kind.buffers)
    if (b.space == space &&
        (b.role == role || (space == MemSpace::kL0c && role == BufferRole::kOutput)))
      total += (b.bytes + mem_align(space, hw) - 1) / mem_align(space, hw) * mem_align(space, hw);
  return total;
}

bool room_for(const TaskKind& prev, const TaskKind& next, BufferRole role, const Hardware& hw) {
  for (const MemSpace m : {MemSpace::kUb, MemSpace::kL1, MemSpace::kL0c})
    if (footprint(prev, m, 1, hw) + role_bytes(next, m, role, hw) > mem_capacity(m, hw))
      return false;
  return true;
}

}  // namespace

OverlapRoom overlap_room(const TaskKind& prev, const TaskKind& next, const Hardware& hw) {
  return {room_for(prev, next, BufferRole::kInput, hw),
          room_for(prev, next, BufferRole::kOutput, hw)};
}

double earliest_start(const PipeClock& clock, const StagedRun& next, OverlapRoom room) {
  const PipeStages& n = next.stages;
  if (n.load_done > 0) return room.inputs ? clock.load : std::max(clock.load, clock.compute);
  if (n.compute_start < next.cycles) return std::max(0.0, clock.compute - n.compute_start);
  if (n.store_start < next.cycles) return std::max(0.0, clock.store - n.store_start);
  return 0;
}

PipedRun run_on_pipes(const PipeClock& clock, double start, const StagedRun& run,
                      OverlapRoom room) {
  const PipeStages& n = run.stages;
  const bool loads = n.load_done > 0, computes = n.compute_start < run.cycles,
             stores = n.store_start < run.cycles;
  double compute_wait = 0;
  if (computes) {
    const double free = room.outputs ? clock.compute : std::max(clock.compute, clock.store);
    compute_wait = std::max(0.0, free - (start + n.compute_start));
  }
  // The stores follow the compute: they wait for it, and for the store pipe.
  double wait = compute_wait;
  if (stores) wait = std::max(wait, clock.store - (start + n.store_start));
  PipedRun r{run.cycles + wait, wait, clock};
  if (loads)
    r.after.load = start + n.load_done + (n.load_done > n.compute_start ? compute_wait : 0);
  if (computes) r.after.compute = start + n.compute_done + compute_wait;
  if (stores) r.after.store = start + n.store_done + wait;
  return r;
}

}  // namespace tilesim
