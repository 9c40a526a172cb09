#pragma once
// The simulator's pending events, popped in (time, push order): deterministic, ties go to the
// event pushed first.

#include <cstdint>
#include <vector>

#include "sim/dary_heap.hpp"

namespace tilesim {

// 24 bytes. What `id` names (a task, a scheduler, a device task) depends on `type`, whose values
// the engine and the runtime define.
struct Event {
  TimeKey key;  // time, then push order
  int32_t id;
  uint8_t type;
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

  // Queues an event at time `t` on `lane` (0 .. kLanes-1): a source whose events come in nearly
  // increasing time should keep to one lane.
  [[gnu::always_inline]] void push(int lane, double t, uint8_t type, int32_t id) {
    const Event e{TimeKey::make(t, seq_++), id, type};
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
  uint64_t seq_ = 0;                   // push order, the tie-breaker
};

}  // namespace tilesim
