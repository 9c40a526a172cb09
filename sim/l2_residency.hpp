#pragma once
// Which of a task's GM traffic reaches HBM, given the shared L2 in front of it.
//
// Every byte passes through L2. A read hits when fewer than l2.bytes of other data were touched
// (read or written) since its block's last touch: its LRU stack distance, the distinct bytes in
// between (a block re-read many times in between counts once), kept in a Fenwick tree over the
// touches. Writes land in L2; they
// also cost HBM bandwidth unless the kernel's whole footprint fits in L2, in which case dirty
// lines are never evicted during the kernel. A task's accesses are counted when it starts.
// A bypassing read (Access::bypass_l2) hits only a block L2 already holds and allocates nothing:
// it neither evicts nor counts towards the footprint, nor refreshes the block's recency.
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
#include <deque>
#include <optional>
#include <unordered_map>
#include <vector>

#include "model/enum_names.hpp"
#include "model/task_graph.hpp"

namespace tilesim {

// HBM traffic of a task as shares of all its GM access bytes: L2 read misses, and writes that
// reach HBM (writes not absorbed, plus dirty lines its allocations evict). Every byte passes
// through L2.
struct Traffic {
  double read_hbm = 0;
  double write_hbm = 0;
  double read_hit = 0;  // share of the task's read bytes that hit L2
  // Co-readers: other tasks reading the same blocks at the same time (started within the time
  // this task takes to read each block). L2 serves concurrent requests for one line one after
  // another, so a shared block's requests queue behind its co-readers' (sim/task_engine.hpp).
  double shared_read = 0;  // share of the task's read bytes that have co-readers
  // Its read bytes weighted by the readers of each block (co-readers + 1), over shared blocks
  // only, as a share of its read bytes: the queue its shared requests stand in.
  double queued_reads = 0;
};

// What L2 holds when the kernel starts.
enum class L2Start {
  kCold,   // empty (clean): first reads miss
  kWarm,   // a rerun without a flush: the inputs are resident when they all fit
  kDirty,  // flushed by writing a buffer larger than L2 (as benchmark harnesses do): full of
           // dirty lines, so each line the kernel allocates first writes one back to HBM
};
inline constexpr std::array<EnumName<L2Start>, 3> kL2StartNames = {
    {{L2Start::kCold, "cold"}, {L2Start::kWarm, "warm"}, {L2Start::kDirty, "flushed"}}};
const char* l2_start_name(L2Start s);

class L2Residency {
 public:
  L2Residency(const TaskGraph& graph, double capacity_bytes, L2Start start = L2Start::kCold);
  // Touches the task's accesses; a task without any returns nullopt (all its traffic to HBM).
  // `now` and `run` (the task's idle-machine run, cycles; `hit_run` when every read hits, < 0:
  // as run) find its co-readers: a block it reads is shared with each task that read it less
  // than (hit_run if L2 holds the block, else run) x (block bytes / the task's read bytes) ago,
  // the time the task spends on that block. A co-reader of a block whose HBM fetch began in
  // that window waits for the same fetch: its read is no hit (it streams at the miss rate), but
  // the bytes come from HBM once.
  std::optional<Traffic> on_start(int32_t task, double now = 0, double run = 0,
                                  double hit_run = -1);
  bool absorbs_writes() const { return absorb_writes_; }
  // Co-readers from a finished pass: with every task's start in it, a block's co-readers are the
  // tasks that started within the window on either side, those that start later included (cores
  // reading one region in step share its service whoever came first). Without, only earlier
  // starters are known.
  void use_prior_starts(std::vector<double> starts);
  // True when some block is read by two or more tasks (co-readers are possible).
  bool has_shared_blocks() const { return shared_blocks_; }

 private:
  const TaskGraph& graph_;
  double capacity_;
  bool absorb_writes_ = false;
  // Touches in order: each block's bytes sit at its latest touch, so the sum over the touches
  // after a block's last one is its stack distance.
  void touch(uint64_t block, double bytes);
  double bytes_after(int64_t pos) const;  // bytes at touches after `pos`
  void add(int64_t pos, double bytes);
  double dirty_left_ = 0;     // flushed: dirty bytes still to evict
  int64_t next_ = 0;          // the next touch's position
  double live_ = 0;           // bytes at all touches
  std::vector<double> tree_;  // Fenwick tree of bytes by touch position
  struct Last {
    int64_t pos;
    double bytes;
  };
  std::unordered_map<uint64_t, Last> last_touch_;
  struct Read {
    double at;
    int32_t task;
  };
  std::unordered_map<uint64_t, std::deque<Read>> readers_;  // recent reads of each block
  std::unordered_map<uint64_t, Read> fetched_;  // each block's last miss (its HBM fetch)
  bool shared_blocks_ = false;
  std::vector<double> prior_;  // each task's start in the earlier pass (empty: none)
  // Each block's readers by their earlier-pass start (one entry per task), sorted.
  std::unordered_map<uint64_t, std::vector<std::pair<double, int32_t>>> prior_readers_;
  int64_t prior_co_readers(uint64_t block, int32_t task, double window) const;
};

}  // namespace tilesim
