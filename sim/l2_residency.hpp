#pragma once
// Which of a task's GM traffic reaches HBM, given the shared L2 in front of it.
//
// Every byte passes through L2. A read hits when its block was touched (read or written) less
// than l2.bytes of traffic ago (an LRU stack distance measured in bytes). Writes land in L2; they
// also cost HBM bandwidth unless the kernel's whole footprint fits in L2, in which case dirty
// lines are never evicted during the kernel. A task's accesses are counted when it starts.
// Tasks that record no accesses (replayed or hand-written SPMD graphs) send all traffic to HBM.
//
// Flushed (L2Start::kDirty): the harness wrote a buffer larger than L2 before the kernel (Triton's
// do_bench zeroes 256 MB), so until l2.bytes have been allocated every allocation (a read miss, a
// write to a block not in L2) first writes a dirty line back.
//
// Warm (a rerun without an L2 flush): the graph's inputs (blocks read before any task writes
// them) start resident when they all fit in l2.bytes, touched in task order before the kernel. When
// they do not fit, a streaming rerun evicts each line before it is read again, so nothing is
// resident: warm and cold agree.

#include <cstdint>
#include <optional>
#include <unordered_map>

#include "model/task_graph.hpp"

namespace tilesim {

// HBM traffic of a task as shares of all its GM access bytes: L2 read misses, and writes that
// reach HBM (writes not absorbed, plus dirty lines its allocations evict). Every byte passes
// through L2.
struct Traffic {
  double read_hbm = 0;
  double write_hbm = 0;
  double read_hit = 0;  // share of the task's read bytes that hit L2
};

// What L2 holds when the kernel starts.
enum class L2Start {
  kCold,   // empty (clean): first reads miss
  kWarm,   // a rerun without a flush: the inputs are resident when they all fit
  kDirty,  // flushed by writing a buffer larger than L2 (as benchmark harnesses do): full of
           // dirty lines, so each line the kernel allocates first writes one back to HBM
};
const char* l2_start_name(L2Start s);  // "cold", "warm", "flushed"

class L2Residency {
 public:
  L2Residency(const TaskGraph& graph, double capacity_bytes, L2Start start = L2Start::kCold);
  // Touches the task's accesses; a task without any returns nullopt (all its traffic to HBM).
  std::optional<Traffic> on_start(int32_t task);
  bool absorbs_writes() const { return absorb_writes_; }

 private:
  const TaskGraph& graph_;
  double capacity_;
  bool absorb_writes_ = false;
  double stamp_ = 0;       // bytes moved so far
  double dirty_left_ = 0;  // flushed: dirty bytes still to evict
  std::unordered_map<uint64_t, double> last_touch_;
};

}  // namespace tilesim
