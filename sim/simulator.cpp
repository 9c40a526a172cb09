#include "sim/simulator.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <memory>
#include <optional>

#include "model/error.hpp"
#include "sim/dary_heap.hpp"
#include "sim/l2_residency.hpp"
#include "sim/shared_bandwidth.hpp"

namespace tilesim {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

enum EventType : uint8_t { kRelease, kWake, kStart, kDetect };

// 24 bytes. START and DETECT carry only the task: its core is recorded at dispatch.
struct Event {
  TimeKey key;  // time, then push order
  int32_t id;   // device task (kRelease), scheduler (kWake) or task (kStart, kDetect)
  EventType type;
};

struct EventBefore {
  bool operator()(const Event& a, const Event& b) const { return a.key < b.key; }
};

// The pending events, popped in (time, push order). Most events are pushed in nearly sorted
// order per source (a task's next start at its end + gap, a scheduler's dispatches, the
// completions it detects, wake-ups), so each source has a lane: a FIFO kept sorted by inserting
// from the back. An event that would move more than kMaxShift places goes to an overflow heap
// instead. A tournament tree over the lane fronts and the heap top yields the next event: the
// same total order as one heap, at O(1) per event in the common case and O(log n) at worst.
class EventQueue {
 public:
  static constexpr int kLanes = 7;

  EventQueue() {
    for (auto& f : front_) f = kNone;
    for (int src = 0; src < kSources; src += 2) set_front(src, kNone);
  }

  [[gnu::always_inline]] void push(int lane, const Event& e) {
    Lane& l = lanes_[lane];
    if (l.append(e)) {  // the common case: at the back
      if (l.size() == 1) set_front(lane, e.key);
      return;
    }
    const int pos = l.insert(e);
    if (pos == 0) set_front(lane, e.key);
    if (pos >= 0) return;
    heap_.push(e);
    if (e.key < front_[kLanes]) set_front(kLanes, e.key);  // the new heap top
  }

  // Time of the next event, +inf when none is pending.
  double next_time() const { return front_[tree_[1]].t(); }
  // Removes and returns the next event.
  Event pop() {
    const int src = tree_[1];
    if (src == kLanes) {
      const Event e = heap_.top();
      heap_.pop();
      set_front(kLanes, heap_.empty() ? kNone : heap_.top().key);
      return e;
    }
    Lane& l = lanes_[src];
    const Event e = l.pop();
    set_front(src, l.empty() ? kNone : l.front().key);
    return e;
  }

 private:
  static constexpr int kMaxShift = 8;
  static constexpr int kSources = kLanes + 1;  // lanes, then the heap
  static_assert(kSources == 8, "the tournament below has three levels");
  // The front of an empty source: after every event, at time +inf.
  static constexpr TimeKey kNone = {~uint64_t{0}, uint64_t{0xfff0000000000000}};

  class Lane {
   public:
    Lane() : ring_(64), data_(ring_.data()), mask_(ring_.size() - 1) {}
    size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    const Event& front() const { return data_[head_]; }
    Event pop() {
      const Event e = data_[head_];
      head_ = (head_ + 1) & mask_;
      --size_;
      return e;
    }
    // Appends `e` if it sorts after the back.
    bool append(const Event& e) {
      if (size_ > 0 && e.key < at(size_ - 1).key) return false;
      if (size_ > mask_) grow();
      at(size_++) = e;
      return true;
    }
    // Inserts `e`, which sorts before the back; returns its position, or -1 (not inserted) when
    // more than kMaxShift events follow it.
    int insert(const Event& e) {
      size_t i = size_ - 1;
      for (int shift = 1; i > 0 && e.key < at(i - 1).key; --i)
        if (++shift > kMaxShift) return -1;
      if (size_ > mask_) grow();
      for (size_t j = size_; j > i; --j) at(j) = at(j - 1);
      at(i) = e;
      ++size_;
      return static_cast<int>(i);
    }

   private:
    Event& at(size_t i) { return data_[(head_ + i) & mask_]; }
    const Event& at(size_t i) const { return data_[(head_ + i) & mask_]; }
    void grow() {
      std::vector<Event> bigger(2 * ring_.size());
      for (size_t i = 0; i < size_; ++i) bigger[i] = at(i);
      ring_.swap(bigger);
      data_ = ring_.data();
      head_ = 0;
      mask_ = ring_.size() - 1;
    }
    std::vector<Event> ring_;  // power-of-two size
    Event* data_;
    size_t mask_;
    size_t head_ = 0;
    size_t size_ = 0;
  };

  // Sets a source's front key and replays its matches up the tree. The winner's key stays in
  // registers and each level loads only its sibling, so the levels do not wait on each other's
  // stores; the selection uses masks (the outcomes are unpredictable; a conditional would branch).
  [[gnu::always_inline]] void set_front(int src, const TimeKey& key) {
    front_[src] = key;
    TimeKey wk = key;
    int w = src;
    const auto play = [&](int other) {
      const TimeKey& k = front_[other];
      const uint64_t take = uint64_t{0} - static_cast<uint64_t>(k < wk);
      wk.tie ^= (wk.tie ^ k.tie) & take;
      wk.time ^= (wk.time ^ k.time) & take;
      w ^= (w ^ other) & static_cast<int>(take);
    };
    const int n4 = (src + kSources) >> 1, n2 = n4 >> 1;
    const int s4 = tree_[n4 ^ 1], s2 = tree_[n2 ^ 1];
    play(src ^ 1);
    tree_[n4] = w;
    play(s4);
    tree_[n2] = w;
    play(s2);
    tree_[1] = w;
  }

  Lane lanes_[kLanes];
  DaryHeap<Event, EventBefore> heap_;  // overflow
  TimeKey front_[kSources];            // lane fronts, then the heap top; kNone when empty
  int tree_[kSources] = {};            // tree_[n]: the source of the least front below node n
};

// Kept small (SPMD pinned lists live in Engine::pinned_): dispatch and task ends touch it.
struct Core {
  int32_t running = -1;
  int32_t pending = -1;
  int32_t inflight = 0;  // dispatched and not yet seen complete by the scheduler (<= 2)
  int32_t sched = 0;
  int32_t poll_slot = 0;  // position in its scheduler's polling loop
  int32_t bit = 0;        // position among its scheduler's cores of its type
  int32_t next_pinned = 0;
  uint8_t k = 0;  // core type: 0 AIV, 1 AIC
  double pending_arrival = 0;
};

// A scheduler's cores of one type are consecutive global indices (block partition), in poll
// order. Two bit sets over them, inflight == 0 and inflight == 1, replace scanning the cores.
struct CoreGroup {
  int32_t base = 0;   // global index of bit 0
  int32_t words = 0;  // 64-bit words per set
  size_t idle = 0;    // offset in Engine::bits_ of the inflight == 0 set
  size_t half = 0;    // offset of the inflight == 1 set
};

struct Scheduler {
  double free_at = 0;
  double wake_at = kInf;      // earliest queued wake-up
  int64_t empty[2] = {0, 0};  // cores with nothing dispatched, per type
  int64_t slots[2] = {0, 0};  // free running + pending slots, per type
  int64_t ncores = 0;
  CoreGroup group[2];
  std::vector<int32_t> backlog;  // seen completions (tasks), drained whole by each serve
};

struct KindInfo {
  uint8_t k;           // core type index
  int32_t flow_class;  // SharedBandwidth class of its run time
  double demand;       // SharedBandwidth::demand_of of its cost
};

struct Ready {
  int32_t task;
  double at;  // time it became ready
};

// The ready queue of one core type. In FIFO order it is a ring buffer whose memory follows the
// ready backlog, not the graph (and stays in cache when tasks are dispatched about as fast as
// they become ready). In oldest-root-first order (scheduler.oldest_root_first) it is one FIFO
// bucket per root function and a bit set of the non-empty ones: a finished statistics pass's
// successors overtake later roots' fresh tasks, which keeps a root's re-reads close to its first
// reads (and in L2).
class ReadyQueue {
 public:
  void set_root_order(bool on, int32_t roots) {
    by_root_ = on;
    if (!on) return;
    buckets_.assign(static_cast<size_t>(roots), {});
    nonempty_.assign((static_cast<size_t>(roots) + 63) / 64, 0);
    first_word_ = nonempty_.size();
  }
  // Room for `n` tasks before it grows (FIFO order; buckets grow with their root's backlog).
  void reserve(size_t n) {
    if (!by_root_) resize(std::bit_ceil(std::max<size_t>(n, 1024)));
  }
  bool empty() const { return size_ == 0; }
  void push(Ready r, int32_t root) {
    if (by_root_) {
      ++size_;
      Bucket& b = buckets_[static_cast<size_t>(root)];
      if (b.head == b.items.size()) {  // was empty
        const size_t w = static_cast<size_t>(root) / 64;
        nonempty_[w] |= uint64_t{1} << (root % 64);
        first_word_ = std::min(first_word_, w);
      }
      b.items.push_back(r);
      return;
    }
    if (size_ > mask_) resize(2 * (mask_ + 1));
    ring_[(head_ + size_++) & mask_] = r;
  }
  Ready pop() {
    --size_;
    if (by_root_) {
      while (nonempty_[first_word_] == 0) ++first_word_;
      const auto root =
          first_word_ * 64 + static_cast<size_t>(std::countr_zero(nonempty_[first_word_]));
      Bucket& b = buckets_[root];
      const Ready r = b.items[b.head++];
      if (b.head == b.items.size()) {
        b.items.clear();
        b.head = 0;
        nonempty_[first_word_] &= ~(uint64_t{1} << (root % 64));
      }
      return r;
    }
    const Ready r = ring_[head_];
    head_ = (head_ + 1) & mask_;
    return r;
  }

 private:
  struct Bucket {
    std::vector<Ready> items;
    size_t head = 0;
  };

  void resize(size_t capacity) {  // a power of two, at least size_
    auto bigger = std::make_unique_for_overwrite<Ready[]>(capacity);  // pages touched on use
    for (size_t i = 0; i < size_; ++i) bigger[i] = ring_[(head_ + i) & mask_];
    ring_ = std::move(bigger);
    mask_ = capacity - 1;
    head_ = 0;
  }
  bool by_root_ = false;
  size_t size_ = 0;
  std::unique_ptr<Ready[]> ring_;
  size_t mask_ = 0;
  size_t head_ = 0;
  std::vector<Bucket> buckets_;
  std::vector<uint64_t> nonempty_;
  size_t first_word_ = 0;  // no non-empty bucket below this word
};

class Engine {
 public:
  Engine(const TaskGraph& g, std::vector<TaskCost> costs, const Hardware& hw, const SimOptions& opt)
      : g_(g), hw_(hw), opt_(opt), bw_(hw.hbm_bytes_per_cycle()) {
    res_.kind_costs = std::move(costs);
    res_.tasks.assign(g.tasks.size(), TaskRecord{});
    spmd_ = g.runtime == RuntimeStyle::kSpmd;
    for (size_t i = 0; i < g.kinds.size(); ++i) {
      const auto& cost = res_.kind_costs[i];
      kinds_.push_back({static_cast<uint8_t>(g.kinds[i].core == CoreType::kAiv ? 0 : 1),
                        bw_.flow_class(SharedBandwidth::run_time(cost.cycles)),
                        SharedBandwidth::demand_of(cost.cycles, cost.gm_bytes())});
    }
    dispatch_ = hw.scheduler.dispatch_cycles;
    resolve_ = hw.scheduler.resolve_cycles;
    completion_ = hw.scheduler.completion_cycles;
    poll_ = hw.ns_to_cycles(hw.scheduler.poll_ns);
    notify_ = hw.ns_to_cycles(hw.scheduler.notify_ns);
    completion_notify_ = hw.ns_to_cycles(hw.scheduler.completion_notify_ns);
    gap_ = hw.ns_to_cycles(hw.scheduler.task_gap_ns);
    if (g.has_accesses()) l2_.emplace(g, static_cast<double>(hw.l2.bytes));
    build_cores();
  }

  SimResult run() {
    if (spmd_)
      start_spmd();
    else
      start_mpmd();
    for (;;) {
      const double tf = bw_.next_finish();
      const double te = events_.next_time();
      if (tf <= te) {
        if (tf == kInf) break;  // then te is +inf too
        on_task_end(bw_.finish_next(), tf);
        continue;
      }
      const Event e = events_.pop();
      switch (e.type) {
        case kRelease:
          on_release(e.id, te);
          break;
        case kWake:
          on_wake(e.id, te);
          break;
        case kStart:
          on_start(e.id, te);
          break;
        case kDetect:
          on_detect(e.id, te);
          break;
      }
    }
    if (finished_ != g_.tasks.size())
      throw Error("task graph: " + std::to_string(g_.tasks.size() - finished_) +
                  " tasks never became ready (dependency cycle, or no core of their type)");
    // Each task's latest predecessor end, in one pass once all ends are known (a max does not
    // depend on the order it is taken in; the pass walks the graph in order, which the cache
    // prefers to the resolution order), with the span.
    res_.first_start = kInf;
    res_.last_end = 0;
    for (size_t i = 0; i < res_.tasks.size(); ++i) {
      const TaskRecord& r = res_.tasks[i];
      res_.first_start = std::min(res_.first_start, r.start);
      res_.last_end = std::max(res_.last_end, r.end);
      for (const int32_t* succ = g_.succ_begin(static_cast<int32_t>(i));
           succ != g_.succ_end(static_cast<int32_t>(i)); ++succ) {
        auto& pe = res_.tasks[static_cast<size_t>(*succ)].pred_end;
        pe = std::max(pe, r.end);
      }
    }
    if (g_.tasks.empty()) res_.first_start = 0;
    return std::move(res_);
  }

 private:
  // Event lanes (see EventQueue): each source pushes in nearly increasing time.
  enum Lane : int { kEndStartLane, kDispatchLane, kControlLane, kDetectLane };
  static constexpr int kDetectLanes = EventQueue::kLanes - kDetectLane;

  [[gnu::always_inline]] void push(int lane, double t, EventType type, int32_t id) {
    events_.push(lane, Event{TimeKey::make(t, seq_++), id, type});
  }

  void build_cores() {
    const int64_t counts[2] = {hw_.cores.aiv, hw_.cores.aic};
    const CoreType types[2] = {CoreType::kAiv, CoreType::kAic};
    const int64_t nsched = spmd_ ? 1 : hw_.scheduler.threads;
    sched_.resize(static_cast<size_t>(nsched));
    cores_.reserve(static_cast<size_t>(counts[0] + counts[1]));
    for (int k = 0; k < 2; ++k) {
      first_core_[k] = static_cast<int32_t>(cores_.size());
      for (int64_t j = 0; j < counts[k]; ++j) {
        Core c;
        c.k = static_cast<uint8_t>(k);
        c.sched = static_cast<int32_t>(j * nsched / std::max<int64_t>(counts[k], 1));
        cores_.push_back(c);
        res_.core_types.push_back(types[k]);
        ++empty_cores_[k];
      }
    }
    // Poll order: a scheduler's cores in global order (its AIV block, then its AIC block).
    for (size_t c = 0; c < cores_.size(); ++c) {
      auto& core = cores_[c];
      auto& s = sched_[static_cast<size_t>(core.sched)];
      const int k = core.k;
      core.poll_slot = static_cast<int32_t>(s.ncores++);
      if (s.empty[k] == 0) s.group[k].base = static_cast<int32_t>(c);
      core.bit = static_cast<int32_t>(c) - s.group[k].base;
      ++s.empty[k];
      s.slots[k] += 2;
    }
    for (auto& s : sched_)
      for (int k = 0; k < 2; ++k) {
        auto& grp = s.group[k];
        grp.words = static_cast<int32_t>((s.empty[k] + 63) / 64);
        grp.idle = bits_.size();
        grp.half = grp.idle + static_cast<size_t>(grp.words);
        bits_.resize(grp.half + static_cast<size_t>(grp.words), 0);
      }
    for (const auto& core : cores_) set_bit(group_of(core).idle, core.bit);
  }

  const CoreGroup& group_of(const Core& core) const {
    return sched_[static_cast<size_t>(core.sched)].group[core.k];
  }
  void set_bit(size_t set, int32_t bit) {
    bits_[set + static_cast<size_t>(bit >> 6)] |= uint64_t{1} << (bit & 63);
  }
  void clear_bit(size_t set, int32_t bit) {
    bits_[set + static_cast<size_t>(bit >> 6)] &= ~(uint64_t{1} << (bit & 63));
  }
  // Lowest set bit of a non-empty set.
  int32_t first_bit(size_t set, int32_t words) const {
    for (int32_t w = 0;; ++w)
      if (const uint64_t x = bits_[set + static_cast<size_t>(w)]; x != 0 || w + 1 == words)
        return w * 64 + std::countr_zero(x);
  }

  int32_t global_core(CoreType t, int32_t index) const {
    const int k = t == CoreType::kAiv ? 0 : 1;
    const int64_t n = k == 0 ? hw_.cores.aiv : hw_.cores.aic;
    if (index < 0 || index >= n)
      throw InternalError("task graph: task pinned to " + std::string(core_type_name(t)) +
                          " core " + std::to_string(index) + " but the hardware has " +
                          std::to_string(n));
    return first_core_[k] + index;
  }

  // ---- kSpmd: pinned tasks start at launch, back to back on their core.
  void start_spmd() {
    // Pinned lists as one array per core (counting pass, then fill), in task order.
    std::vector<int32_t> core_of(g_.tasks.size());
    pinned_off_.assign(cores_.size() + 1, 0);
    for (size_t i = 0; i < g_.tasks.size(); ++i) {
      const auto& t = g_.tasks[i];
      if (t.pinned_core < 0)
        throw InternalError("task graph: SPMD task " + std::to_string(i) + " has no core");
      if (g_.indegree(static_cast<int32_t>(i)) != 0)
        throw InternalError("task graph: SPMD tasks cannot have dependencies");
      core_of[i] = global_core(g_.kinds[static_cast<size_t>(t.kind)].core, t.pinned_core);
      ++pinned_off_[static_cast<size_t>(core_of[i]) + 1];
    }
    for (size_t c = 0; c < cores_.size(); ++c) {
      pinned_off_[c + 1] += pinned_off_[c];
      cores_[c].next_pinned = pinned_off_[c];
    }
    pinned_.resize(g_.tasks.size());
    {
      std::vector<int32_t> fill(pinned_off_.begin(), pinned_off_.end() - 1);
      for (size_t i = 0; i < g_.tasks.size(); ++i)
        pinned_[static_cast<size_t>(fill[static_cast<size_t>(core_of[i])]++)] =
            static_cast<int32_t>(i);
    }
    for (size_t c = 0; c < cores_.size(); ++c) start_next_pinned(static_cast<int32_t>(c), 0);
  }

  void start_next_pinned(int32_t c, double t) {
    auto& core = cores_[static_cast<size_t>(c)];
    if (core.next_pinned >= pinned_off_[static_cast<size_t>(c) + 1]) return;
    const int32_t task = pinned_[static_cast<size_t>(core.next_pinned++)];
    core.running = task;
    res_.tasks[static_cast<size_t>(task)].core = c;
    push(kEndStartLane, t, kStart, task);
  }

  // ---- kMpmd: the control AICPU builds and stitches root functions.
  void start_mpmd() {
    const size_t n = g_.tasks.size();
    // A task becomes ready when its device task is released and its last predecessor resolved:
    // one count for each.
    const int32_t roots = g_.num_roots();
    remaining_.resize(n);
    root_tasks_off_.assign(static_cast<size_t>(roots) + 1, 0);
    bool roots_in_order = true;  // tasks numbered root by root: the order needs no array
    for (size_t i = 0; i < n; ++i) {
      const auto& t = g_.tasks[i];
      remaining_[i] = static_cast<uint32_t>(g_.indegree(static_cast<int32_t>(i)) + 1) |
                      (static_cast<uint32_t>(kinds_[static_cast<size_t>(t.kind)].k) << kTypeShift);
      ++root_tasks_off_[static_cast<size_t>(t.root) + 1];
      roots_in_order = roots_in_order && (i == 0 || g_.tasks[i - 1].root <= t.root);
    }
    for (int32_t r = 0; r < roots; ++r) root_tasks_off_[r + 1] += root_tasks_off_[r];
    // Room in each ready queue for every task that is ready on release (a backlog of
    // independent tasks can reach that); tasks made ready by their predecessors come and go.
    {
      size_t at_release[2] = {0, 0};
      for (size_t i = 0; i < n; ++i)
        if ((remaining_[i] & kCountMask) == 1) ++at_release[remaining_[i] >> kTypeShift];
      for (int k = 0; k < 2; ++k) {
        ready_[k].set_root_order(hw_.scheduler.oldest_root_first != 0 && roots > 1, roots);
        ready_[k].reserve(at_release[k]);
      }
    }
    if (!roots_in_order) {
      root_tasks_.resize(n);
      std::vector<int64_t> fill(root_tasks_off_.begin(), root_tasks_off_.end() - 1);
      for (size_t i = 0; i < n; ++i)
        root_tasks_[static_cast<size_t>(fill[static_cast<size_t>(g_.tasks[i].root)]++)] =
            static_cast<int32_t>(i);
    }
    const int64_t stitch = hw_.control.stitch_function_max_num;
    double t = 0;
    for (int32_t first = 0; first < roots; first += static_cast<int32_t>(stitch)) {
      const int32_t last = std::min<int32_t>(roots, first + static_cast<int32_t>(stitch));
      const double begin = t;
      for (int32_t r = first; r < last; ++r) {
        const double ntasks = static_cast<double>(root_tasks_off_[r + 1] - root_tasks_off_[r]);
        t += hw_.ns_to_cycles(hw_.control.root_build_ns + ntasks * hw_.control.task_build_ns);
      }
      t += hw_.ns_to_cycles(hw_.control.device_task_submit_ns);
      if (opt_.record_aicpu) res_.aicpu_spans.push_back({0, begin, t, -1, AicpuSpan::kBuild});
      device_first_root_.push_back(first);
      device_last_root_.push_back(last);
      push(kControlLane, t, kRelease, static_cast<int32_t>(device_first_root_.size() - 1));
    }
  }

  // Counts down one of `task`'s conditions; the last makes it ready at `t`.
  void resolve(int32_t task, double t) {
    const uint32_t left = --remaining_[static_cast<size_t>(task)];
    if ((left & kCountMask) == 0)
      ready_[left >> kTypeShift].push({task, t}, g_.tasks[static_cast<size_t>(task)].root);
  }

  // Whether scheduler `s` could hand out a ready task of type k now: to an empty core, or to a
  // pending slot once no scheduler has an empty core of that type left (those threads would take
  // it first).
  bool can_dispatch(const Scheduler& sc, int k) const {
    return !ready_[k].empty() && (sc.empty[k] > 0 || (empty_cores_[k] == 0 && sc.slots[k] > 0));
  }

  void wake(int32_t s, double t) {
    auto& sc = sched_[static_cast<size_t>(s)];
    const double when = std::max(t, sc.free_at);
    if (sc.wake_at <= when) return;
    sc.wake_at = when;
    push(kControlLane, when, kWake, s);
  }

  void wake_all(double t) {
    for (size_t s = 0; s < sched_.size(); ++s)
      if (can_dispatch(sched_[s], 0) || can_dispatch(sched_[s], 1))
        wake(static_cast<int32_t>(s), t);
  }

  void on_release(int32_t device_task, double t) {
    for (int32_t r = device_first_root_[static_cast<size_t>(device_task)];
         r < device_last_root_[static_cast<size_t>(device_task)]; ++r) {
      for (int64_t i = root_tasks_off_[r]; i < root_tasks_off_[r + 1]; ++i)
        resolve(root_tasks_.empty() ? static_cast<int32_t>(i) : root_tasks_[static_cast<size_t>(i)],
                t);
    }
    wake_all(t);
  }

  void on_wake(int32_t s, double t) {
    auto& sc = sched_[static_cast<size_t>(s)];
    if (sc.wake_at == t) sc.wake_at = kInf;
    if (sc.free_at > t) {
      wake(s, sc.free_at);
      return;
    }
    serve(s, t);
  }

  // The scheduler thread's turn: handle the completions it has seen, in order (completion cost,
  // one resolve per successor edge), then hand ready tasks to free slots of its cores.
  void serve(int32_t s, double t) {
    auto& sc = sched_[static_cast<size_t>(s)];
    double tt = t;
    for (const int32_t task : sc.backlog) {
      const double begin = tt;
      const auto& rec = res_.tasks[static_cast<size_t>(task)];
      auto& core = cores_[static_cast<size_t>(rec.core)];
      const int k = core.k;
      const auto& grp = sc.group[k];
      ++sc.slots[k];
      if (--core.inflight == 0) {
        ++sc.empty[k];
        ++empty_cores_[k];
        clear_bit(grp.half, core.bit);
        set_bit(grp.idle, core.bit);
      } else {
        set_bit(grp.half, core.bit);
      }
      tt += completion_;
      for (const int32_t* succ = g_.succ_begin(task); succ != g_.succ_end(task); ++succ) {
        tt += resolve_;
        resolve(*succ, tt);
      }
      if (opt_.record_aicpu)
        res_.aicpu_spans.push_back({s + 1, begin, tt, task, AicpuSpan::kResolve});
    }
    sc.backlog.clear();
    tt = dispatch(s, tt);
    sc.free_at = tt;
    // Others may take what is left: new ready tasks, or pending slots now that cores are taken.
    if (!ready_[0].empty() || !ready_[1].empty()) wake_all(tt);
  }

  // Hands ready tasks to free slots of this scheduler's cores, one dispatch cost each; returns the
  // time the thread is done. The target is the first core in poll order with nothing in flight,
  // else (no such core) the first with one task in flight.
  double dispatch(int32_t s, double t) {
    auto& sc = sched_[static_cast<size_t>(s)];
    double tt = t;
    for (int k = 0; k < 2; ++k) {
      auto& q = ready_[k];
      const auto& grp = sc.group[k];
      while (can_dispatch(sc, k)) {
        const bool to_empty = sc.empty[k] > 0;
        const int32_t bit = first_bit(to_empty ? grp.idle : grp.half, grp.words);
        const int32_t target = grp.base + bit;
        const auto [task, ready_at] = q.pop();
        auto& rec = res_.tasks[static_cast<size_t>(task)];
        // START reads its kind no earlier than a notify later: fetch it now.
        __builtin_prefetch(&g_.tasks[static_cast<size_t>(task)]);
        const double begin = std::max(tt, ready_at);
        tt = begin + dispatch_;
        if (opt_.record_aicpu)
          res_.aicpu_spans.push_back({s + 1, begin, tt, task, AicpuSpan::kDispatch});
        const double arrival = tt + notify_;
        auto& core = cores_[static_cast<size_t>(target)];
        --sc.slots[k];
        if (core.inflight++ == 0) {
          --sc.empty[k];
          --empty_cores_[k];
          clear_bit(grp.idle, bit);
          set_bit(grp.half, bit);
        } else {
          clear_bit(grp.half, bit);
        }
        rec.core = target;
        if (core.running < 0) {
          core.running = task;
          push(kDispatchLane, arrival, kStart, task);
        } else {
          core.pending = task;
          core.pending_arrival = arrival;
        }
      }
    }
    return tt;
  }

  void on_start(int32_t task, double t) {
    auto& rec = res_.tasks[static_cast<size_t>(task)];
    rec.start = t;
    const auto& kind = kinds_[static_cast<size_t>(g_.tasks[static_cast<size_t>(task)].kind)];
    // Only L2 misses and write-backs draw on HBM (sim/l2_residency.hpp).
    const double hbm_share = l2_ ? l2_->on_start(task, 1.0).hbm : 1.0;
    bw_.start_flow(task, t, kind.flow_class, kind.demand * hbm_share);
  }

  void on_task_end(int32_t task, double t) {
    auto& rec = res_.tasks[static_cast<size_t>(task)];
    rec.end = t;
    ++finished_;
    const int32_t c = rec.core;
    auto& core = cores_[static_cast<size_t>(c)];
    core.running = -1;
    if (spmd_) {
      start_next_pinned(c, t + gap_);
      return;
    }
    if (core.pending >= 0) {
      core.running = core.pending;
      core.pending = -1;
      push(kEndStartLane, std::max(t + gap_, core.pending_arrival), kStart, core.running);
    }
    // The owning scheduler sees the completion when its polling loop next reaches this core.
    const double seen = t + completion_notify_;
    double td = seen;
    if (poll_ > 0) {
      const int64_t n = sched_[static_cast<size_t>(core.sched)].ncores;
      const auto slot = static_cast<int64_t>(td / poll_);  // poll reads since time 0
      int64_t ahead = core.poll_slot - slot % n;
      if (ahead < 0) ahead += n;  // slot >= 0, so this is the remainder modulo n
      td = static_cast<double>(slot + ahead) * poll_;
      if (td < seen) td += static_cast<double>(n) * poll_;
    }
    push(kDetectLane + core.sched % kDetectLanes, td, kDetect, task);
  }

  void on_detect(int32_t task, double t) {
    const int32_t s = cores_[static_cast<size_t>(res_.tasks[static_cast<size_t>(task)].core)].sched;
    auto& sc = sched_[static_cast<size_t>(s)];
    sc.backlog.push_back(task);
    if (sc.free_at > t)  // busy: it handles the completion when free again
      wake(s, sc.free_at);
    else
      serve(s, t);
  }

  const TaskGraph& g_;
  const Hardware& hw_;
  SimOptions opt_;
  SharedBandwidth bw_;
  std::optional<L2Residency> l2_;
  SimResult res_;
  bool spmd_ = false;
  std::vector<KindInfo> kinds_;
  std::vector<Core> cores_;
  std::vector<Scheduler> sched_;
  std::vector<uint64_t> bits_;  // CoreGroup bit sets
  int32_t first_core_[2] = {0, 0};
  int64_t empty_cores_[2] = {0, 0};  // cores with nothing dispatched, per type
  ReadyQueue ready_[2];
  // Per task: unresolved predecessors + 1 until released (low bits), core type (top bit).
  static constexpr int kTypeShift = 31;
  static constexpr uint32_t kCountMask = (uint32_t{1} << kTypeShift) - 1;
  std::vector<uint32_t> remaining_;
  std::vector<int64_t> root_tasks_off_;
  std::vector<int32_t> root_tasks_;  // tasks by root; empty when numbered root by root
  std::vector<int32_t> device_first_root_, device_last_root_;
  std::vector<int32_t> pinned_off_, pinned_;  // kSpmd: tasks of each core, in order
  EventQueue events_;
  uint64_t seq_ = 0;
  size_t finished_ = 0;
  double dispatch_, resolve_, completion_, poll_, notify_, completion_notify_, gap_;
};

}  // namespace

SimResult simulate_costed(const TaskGraph& graph, std::vector<TaskCost> kind_costs,
                          const Hardware& hw, const SimOptions& options) {
  if (!graph.finalized()) throw InternalError("task graph: simulate() needs a finalized graph");
  if (kind_costs.size() != graph.kinds.size())
    throw InternalError("task graph: one cost per task kind is required");
  Engine engine(graph, std::move(kind_costs), hw, options);
  return engine.run();
}

SimResult simulate(const TaskGraph& graph, const Hardware& hw, const SimOptions& options) {
  std::vector<TaskCost> costs;
  costs.reserve(graph.kinds.size());
  for (const auto& k : graph.kinds) costs.push_back(cost_task_kind(k, hw));
  return simulate_costed(graph, std::move(costs), hw, options);
}

}  // namespace tilesim
