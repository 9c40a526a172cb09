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

double overlapped_start(const TaskCost& prev, const TaskCost& next, OverlapRoom room) {
  return overlapped_start(StagedRun{prev.cycles, prev.stages}, StagedRun{next.cycles, next.stages},
                          room);
}

double overlapped_start(const StagedRun& prev, const StagedRun& next, OverlapRoom room) {
  const PipeStages& p = prev.stages;
  const PipeStages& n = next.stages;
  double start = 0;
  if (n.load_done > 0) start = std::max(start, room.inputs ? p.load_done : p.compute_done);
  if (n.compute_start < next.cycles) {
    start = std::max(start, p.compute_done - n.compute_start);
    if (!room.outputs) start = std::max(start, p.store_done - n.compute_start);
  }
  if (n.store_start < next.cycles) start = std::max(start, p.store_done - n.store_start);
  return std::min(start, prev.cycles);
}

}  // namespace tilesim
