#pragma once
// Shared global-memory bandwidth as a fluid (processor-sharing) resource with two stages.
//
// Every running task is a flow that, alone, would move its GM bytes over its idle-machine
// duration: every byte passes through L2 (its L2 demand is bytes / duration; its reads alone
// have a bound of their own: L2 serves mixed reads and writes faster than reads only) and its
// L2 misses and write-backs through HBM (its HBM demand, in read-byte equivalents: a written byte
// costs hbm read / write bandwidth times a read byte). While any bound's summed demand exceeds its
// capacity, every flow is slowed by the same factor, the smallest of capacity / demand (the
// memory serves all cores' requests interleaved, so each sees the same stretch). Because all flows
// share one factor, progress is one virtual clock: a task finishes when the virtual clock has
// advanced by its duration, so each start and finish costs O(log n).
//
// A loaded HBM also queues requests, and a task that waits for its memory (its
// latency_exposures: loads and stores on its critical path, model/task_cost.hpp) waits longer at
// each: an M/M/1 queue adds q u / (1 - u) per wait at utilization u (q: gm.hbm_queue_ns). With
// D the HBM demand, B the capacity, a = D / B, X the sum of each flow's demand times its waits
// per cycle (X / D: the demand-weighted waits per cycle), the common stretch S obeys
// S = 1 + (X / D) q u / (1 - u) with u = D / (S B), so (S - 1)(S - a) = q X / B and
//   S = ((1 + a) + sqrt((1 - a)^2 + 4 q X / B)) / 2.
// With no waits (X = 0) that is max(1, a), plain bandwidth sharing; with waits it rises smoothly
// above it, most where many short iterations each wait for memory (add_8192 case 2: one buffer,
// 8 KiB copies). Flows of different kinds share one stretch weighted by their demand.
//
// Flows finish in (virtual finish, task) order. The virtual clock never goes back, so flows of
// equal run time finish in the order they started (up to ties, ordered by task): each run time
// is a class with a FIFO queue, and a heap holds only the head of each class. A graph has a
// handful of kinds, so starts and finishes are O(1) in practice and O(log classes) at worst.

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <unordered_map>
#include <vector>

#include "sim/dary_heap.hpp"

namespace tilesim {

class SharedBandwidth {
 public:
  // HBM capacity; L2 capacity for all traffic and for reads (+inf: never binds), in bytes per
  // cycle; HBM's queueing delay scale in cycles (0: no queueing).
  explicit SharedBandwidth(double capacity_bytes_per_cycle,
                           double l2_capacity = std::numeric_limits<double>::infinity(),
                           double queue_cycles = 0,
                           double l2_read_capacity = std::numeric_limits<double>::infinity())
      : capacity_(capacity_bytes_per_cycle),
        l2_capacity_(l2_capacity),
        l2_read_capacity_(l2_read_capacity),
        queue_(queue_cycles) {}

  void start(int32_t task, double now, double duration, double gm_bytes);
  // start() with its per-kind terms precomputed: run_time(), demand_of() and flow_class().
  // `waiting`: the flow's HBM demand times its memory waits per cycle of run time;
  // `l2_read_demand`: the part of `l2_demand` that reads.
  [[gnu::always_inline]] void start_flow(int32_t task, double now, int32_t cls, double demand,
                                         double l2_demand = 0, double waiting = 0,
                                         double l2_read_demand = 0) {
    advance(now);
    demand_ += demand;
    l2_demand_ += l2_demand;
    l2_read_demand_ += l2_read_demand;
    waiting_ += waiting;
    auto& q = classes_[static_cast<size_t>(cls)];
    const bool was_empty = q.empty();
    if (q.push(Flow{TimeKey::make(vclock_ + q.run, static_cast<uint32_t>(task)), demand, l2_demand,
                    l2_read_demand, waiting})) {
      if (was_empty)
        heads_.insert(cls, q.front().key);
      else
        heads_.decrease(cls, q.front().key);
    }
    ++running_;
    update_rate();
  }
  static double run_time(double duration) { return std::max(duration, 0.0); }
  static double demand_of(double duration, double gm_bytes) {
    return duration > 0 ? gm_bytes / duration : 0.0;
  }
  // The class of flows lasting `run_time` virtual cycles.
  int32_t flow_class(double run_time);

  // Time of the next finish, +inf when nothing runs. Cached: the simulator asks once per event.
  double next_finish() const { return next_; }
  // Removes the flow finishing next; call at time next_finish().
  [[gnu::always_inline]] int32_t finish_next() {
    advance(next_);
    const int32_t cls = heads_.top_class();
    auto& q = classes_[static_cast<size_t>(cls)];
    const Flow f = q.pop();
    if (q.empty())
      heads_.pop();
    else
      heads_.increase_top(q.front().key);
    demand_ -= f.demand;
    l2_demand_ -= f.l2_demand;
    l2_read_demand_ -= f.l2_read_demand;
    waiting_ -= f.waiting;
    --running_;
    update_rate();
    return static_cast<int32_t>(f.key.tie);
  }
  double slowdown() const { return 1.0 / rate_; }
  size_t running() const { return running_; }

 private:
  void advance(double now) {
    // No branch on whether time moved (it often does not): adding +0.0 leaves the clock, which
    // is never -0.0, unchanged.
    vclock_ += std::max(now - now_, 0.0) * rate_;
    now_ = std::max(now_, now);
  }
  void update_rate() {
    const bool idle = running_ == 0;
    if (idle) demand_ = l2_demand_ = l2_read_demand_ = waiting_ = 0;  // drop accumulated rounding
    rate_ = demand_ > capacity_ ? capacity_ / demand_ : 1.0;
    if (waiting_ > 0 && queue_ > 0) {
      const double a = demand_ / capacity_;
      rate_ = 2.0 / ((1 + a) + std::sqrt((1 - a) * (1 - a) + 4 * queue_ * waiting_ / capacity_));
    }
    if (l2_demand_ > l2_capacity_) rate_ = std::min(rate_, l2_capacity_ / l2_demand_);
    if (l2_read_demand_ > l2_read_capacity_)
      rate_ = std::min(rate_, l2_read_capacity_ / l2_read_demand_);
    if (idle) {
      next_ = std::numeric_limits<double>::infinity();
      return;
    }
    // Dividing by a rate of exactly 1 changes nothing: skip the division on the unsaturated path.
    const double ahead = std::max(0.0, heads_.top_key().t() - vclock_);
    next_ = now_ + (rate_ == 1.0 ? ahead : ahead / rate_);
  }

  struct Flow {
    TimeKey key;  // virtual finish time, then task
    double demand;
    double l2_demand;
    double l2_read_demand;
    double waiting;
  };

  // Flows of one run time in finish order: a ring buffer, appended at the back.
  struct ClassQueue {
    double run = 0;
    std::vector<Flow> ring = std::vector<Flow>(16);  // power-of-two size
    size_t mask = 15;
    size_t head = 0;
    size_t size = 0;

    bool empty() const { return size == 0; }
    const Flow& front() const { return ring[head]; }
    Flow& at(size_t i) { return ring[(head + i) & mask]; }
    Flow pop() {
      const Flow f = ring[head];
      head = (head + 1) & mask;
      --size;
      return f;
    }
    // Inserts in order: at the back, or one place earlier when it ties with the back's virtual
    // finish and has a lower task (flows starting at the same time do, often), without a branch
    // on that; further only in the rare longer tie. True if it is the new front.
    bool push(const Flow& f) {
      if (size > mask) grow();
      const size_t i = size++;
      const Flow back = at(i - 1);  // any slot when i == 0: the ring wraps
      const bool before = (i > 0) & (f.key < back.key);
      at(i) = back;
      size_t pos = i - before;
      at(pos) = f;
      if ((pos > 0) & before & (f.key < at(pos - 1).key)) {
        for (; pos > 0 && f.key < at(pos - 1).key; --pos) at(pos) = at(pos - 1);
        at(pos) = f;
      }
      return pos == 0;
    }
    void grow() {
      std::vector<Flow> bigger(2 * ring.size());
      for (size_t i = 0; i < size; ++i) bigger[i] = at(i);
      ring.swap(bigger);
      mask = ring.size() - 1;
      head = 0;
    }
  };

  // Min-heap of the classes' front keys, indexed by class so a front can change in place.
  class Heads {
   public:
    void add_class() { pos_.push_back(-1); }
    int32_t top_class() const { return heap_.front().cls; }
    const TimeKey& top_key() const { return heap_.front().key; }
    void insert(int32_t cls, const TimeKey& key) {
      const size_t i = heap_.size();
      heap_.push_back({key, cls});
      pos_[static_cast<size_t>(cls)] = static_cast<int32_t>(i);
      if (i > 0) sift_up(i);
    }
    // Lowers the key of `cls`, which is present.
    void decrease(int32_t cls, const TimeKey& key) {
      const auto i = static_cast<size_t>(pos_[static_cast<size_t>(cls)]);
      heap_[i].key = key;
      sift_up(i);
    }
    // Raises the top key: the finishing class has a later front now.
    void increase_top(const TimeKey& key) {
      heap_.front().key = key;
      if (heap_.size() > 1) sift_down(0);
    }
    void pop() {
      pos_[static_cast<size_t>(heap_.front().cls)] = -1;
      const Entry last = heap_.back();
      heap_.pop_back();
      if (heap_.empty()) return;
      place(0, last);
      sift_down(0);
    }

   private:
    struct Entry {
      TimeKey key;
      int32_t cls;
    };
    void place(size_t i, const Entry& e) {
      heap_[i] = e;
      pos_[static_cast<size_t>(e.cls)] = static_cast<int32_t>(i);
    }
    void sift_up(size_t i) {
      const Entry e = heap_[i];
      while (i > 0 && e.key < heap_[(i - 1) / 2].key) {
        place(i, heap_[(i - 1) / 2]);
        i = (i - 1) / 2;
      }
      place(i, e);
    }
    void sift_down(size_t i) {
      const Entry e = heap_[i];
      const size_t n = heap_.size();
      for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && heap_[c + 1].key < heap_[c].key) ++c;
        if (!(heap_[c].key < e.key)) break;
        place(i, heap_[c]);
        i = c;
      }
      place(i, e);
    }
    std::vector<Entry> heap_;
    std::vector<int32_t> pos_;  // index in heap_, -1 when the class has no flow
  };

  double capacity_;
  double l2_capacity_;
  double l2_read_capacity_;
  double now_ = 0;
  double vclock_ = 0;
  double rate_ = 1;
  double demand_ = 0;
  double l2_demand_ = 0;
  double l2_read_demand_ = 0;
  double queue_;
  double waiting_ = 0;
  double next_ = std::numeric_limits<double>::infinity();
  size_t running_ = 0;
  std::vector<ClassQueue> classes_;
  std::unordered_map<uint64_t, int32_t> class_of_run_;  // run time bits -> class
  Heads heads_;
};

}  // namespace tilesim
