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
#include <memory>
#include <optional>
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

// The graph's GM blocks as small integer ids (in order of first access), and what L2's model
// needs to know of them before the first task: built once per graph and shared by every
// simulation pass over it (and by the check whether a second pass is needed).
class L2Blocks {
 public:
  explicit L2Blocks(const TaskGraph& graph);
  // The block id of access `a` of the graph.
  int32_t id(const TaskGraph& graph, const Access* a) const {
    return ids_[static_cast<size_t>(a - graph.access_begin(0))];
  }
  // Where in its task's reads access `a` of the graph comes: the share of the task's read bytes
  // its accesses before it read (0 for the first read, and for writes). A task reads its blocks
  // in the order it records them (a matmul tile's k steps), so this share of its run is when.
  double read_share(const TaskGraph& graph, const Access* a) const {
    return static_cast<double>(shares_[static_cast<size_t>(a - graph.access_begin(0))]);
  }
  int32_t count() const { return static_cast<int32_t>(read_off_.size()) - 1; }
  // True when some block is read by two or more tasks (co-readers are possible).
  bool shared() const { return shared_; }
  // The largest bytes each allocating block is touched with, summed: the kernel's footprint.
  double footprint() const { return footprint_; }
  // Touches that allocate in L2 (accesses that do not bypass it).
  size_t touches() const { return touches_; }
  struct Input {
    int32_t block;
    int64_t bytes;
  };
  // Blocks first touched by a read (the graph's inputs), in task order, with that read's bytes.
  const std::vector<Input>& inputs() const { return inputs_; }
  // Offsets of each block's reads (reads_of(b) = read_off[b + 1] - read_off[b]).
  const RecycledVector<int32_t>& read_offsets() const { return read_off_; }

 private:
  RecycledVector<int32_t> ids_;       // per access, in the graph's access order
  RecycledVector<float> shares_;      // per access: read_share
  RecycledVector<int32_t> read_off_;  // per block: prefix sums of its read accesses
  std::vector<Input> inputs_;
  double footprint_ = 0;
  size_t touches_ = 0;
  bool shared_ = false;
};

class L2Residency {
 public:
  L2Residency(const TaskGraph& graph, double capacity_bytes, L2Start start = L2Start::kCold);
  // With the graph's blocks already known (`blocks` must be of `graph`).
  L2Residency(const TaskGraph& graph, std::shared_ptr<const L2Blocks> blocks, double capacity_bytes,
              L2Start start = L2Start::kCold);
  // Touches the task's accesses; a task without any returns nullopt (all its traffic to HBM).
  // `now` and `run` (the task's idle-machine run, cycles; `hit_run` when every read hits, < 0:
  // as run) find its co-readers: a block it reads is shared with each task that read it less
  // than (hit_run if L2 holds the block, else run) x (block bytes / the task's read bytes) ago,
  // the time the task spends on that block. A co-reader of a block whose HBM fetch began in
  // that window waits for the same fetch: its read is no hit (it streams at the miss rate), but
  // the bytes come from HBM once. Each task starts once.
  std::optional<Traffic> on_start(int32_t task, double now = 0, double run = 0,
                                  double hit_run = -1);
  bool absorbs_writes() const { return absorb_writes_; }
  // Co-readers from a finished pass: with every task's start in it, a block's co-readers are the
  // tasks that read it within the window on either side, those that start later included (cores
  // reading one region in step share its service whoever came first). A task reads a block at its
  // start plus the block's read share of its kind's idle-machine run (`kind_runs`, by kind id: the
  // `run` on_start gets). Without, only earlier reads are known.
  void use_prior_starts(const std::vector<double>& starts, const std::vector<double>& kind_runs);
  // True when some block is read by two or more tasks (co-readers are possible).
  bool has_shared_blocks() const { return blocks_->shared(); }
  // After a pass without prior starts: true when some read had a co-reader on either side, by
  // the starts and windows of this pass. When false, a pass with this pass's starts as prior
  // ones counts no co-reader either, so it would run exactly as this one did.
  bool saw_co_readers() const;

 private:
  const TaskGraph& graph_;
  std::shared_ptr<const L2Blocks> blocks_;
  double capacity_;
  bool absorb_writes_ = false;
  bool distances_ = true;  // false: the footprint is below capacity (no stack distances kept)
  // Touches in order: each block's bytes sit at its latest touch, so the sum over the touches
  // after a block's last one is its stack distance.
  void touch(int32_t block, double bytes);
  double bytes_after(int64_t pos) const;  // bytes at touches after `pos`
  void add(int64_t pos, double bytes);
  double dirty_left_ = 0;        // flushed: dirty bytes still to evict
  int64_t next_ = 0;             // the next touch's position
  double live_ = 0;              // bytes at all touches
  RecycledVector<double> tree_;  // Fenwick tree of bytes by touch position
  struct Last {
    int64_t pos = -1;  // -1: never touched
    double bytes = 0;
  };
  RecycledVector<Last> last_touch_;  // by block id
  struct Read {
    double at;
    int32_t task = -1;  // -1: none
    double window = 0;  // the reader's window on the block (reads_ only)
  };
  bool co_read_ = false;  // a read found an earlier co-reader, or one went unrecorded (no run)
  // Recent reads of each block, a queue in its slice of reads_ (L2Blocks::read_offsets: a block
  // is read at most once per reading access, so its slice holds them all): [head, tail).
  RecycledVector<Read> reads_;
  RecycledVector<int32_t> head_, tail_;
  RecycledVector<Read> fetched_;  // each block's last miss (its HBM fetch)
  RecycledVector<double> prior_;  // each task's start in the earlier pass (empty: none)
  // Each block's reads by when they happened in the earlier pass (a task's reads of it at one time
  // once), sorted, in its slice [prior_off_[b], prior_end_[b]) of prior_readers_.
  RecycledVector<std::pair<double, int32_t>> prior_readers_;
  RecycledVector<int32_t> prior_end_;
  int64_t prior_co_readers(int32_t block, int32_t task, double at, double window) const;
};

}  // namespace tilesim
