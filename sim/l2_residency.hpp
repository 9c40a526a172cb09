#pragma once
// Which of a task's GM traffic reaches HBM, given the shared L2 in front of it.
//
// Every byte passes through L2. A read hits when its block was touched (read or written) less
// than l2.bytes of traffic ago (an LRU stack distance measured in bytes). Writes land in L2; they
// also cost HBM bandwidth unless the kernel's whole footprint fits in L2, in which case dirty
// lines are never evicted during the kernel. A task's accesses are counted when it starts.
// Tasks that record no accesses (replayed or hand-written SPMD graphs) send all traffic to HBM.
//
// Warm (a rerun without an L2 flush): the graph's inputs (blocks read before any task writes
// them) start resident when they all fit in l2.bytes, touched in task order before the kernel. When
// they do not fit, a streaming rerun evicts each line before it is read again, so nothing is
// resident: warm and cold agree.

#include <cstdint>
#include <unordered_map>

#include "model/task_graph.hpp"

namespace tilesim {

struct Traffic {
  double hbm = 0;  // bytes through HBM
  double l2 = 0;   // bytes through L2 (all of them)
};

class L2Residency {
 public:
  L2Residency(const TaskGraph& graph, double capacity_bytes, bool warm = false);
  // `bytes`: the task's modeled GM bytes (granule waste included), split in proportion.
  Traffic on_start(int32_t task, double bytes);
  bool absorbs_writes() const { return absorb_writes_; }

 private:
  const TaskGraph& graph_;
  double capacity_;
  bool absorb_writes_ = false;
  double stamp_ = 0;  // bytes moved so far
  std::unordered_map<uint64_t, double> last_touch_;
};

}  // namespace tilesim
