#pragma once
// Ready queues: the tasks of one core type that may be dispatched, in the order a runtime policy
// (SimOptions::ready_order) gives them out. Each policy is a type that models ReadyQueuePolicy, so
// the simulator picks one once per run and its hot loop makes no indirect call:
//   kName                          the policy's name in the run config ("runtime": {"ready_order"})
//   init(roots, ready_at_release)  set up for a graph of `roots` root functions, of which
//                                  `ready_at_release` tasks are ready as soon as released
//   push(ready, root), pop(), empty()
// and, optionally, kFifoWithOneRoot = true: with one root function the order is FIFO's (the
// simulator then runs the cheaper FifoReadyQueue).
// A new built-in policy is its class plus one entry of BuiltinReadyQueues (below); a policy
// defined elsewhere (a test, an experiment) is its class plus one register_ready_order<Q>() line
// (sim/ready_orders.hpp).

#include <algorithm>
#include <bit>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

namespace tilesim {

struct Ready {
  int32_t task;
  double at;  // time it became ready
};

// What the PyPTO runtime (sim/pypto_runtime.hpp) calls on its ready queues.
template <class Q>
concept ReadyQueuePolicy = std::default_initializable<Q> &&
    requires(Q q, const Q& cq, Ready r, int32_t root, size_t n) {
  { Q::kName } -> std::convertible_to<std::string_view>;
  q.init(root, n);
  { cq.empty() } -> std::same_as<bool>;
  q.push(r, root);
  { q.pop() } -> std::same_as<Ready>;
};

// A list of policies: the order of its types is the order of their ReadyOrder values.
template <ReadyQueuePolicy... Q>
struct ReadyQueueList {};

// First ready, first out. A ring buffer whose memory follows the ready backlog, not the graph (and
// stays in cache when tasks are dispatched about as fast as they become ready).
class FifoReadyQueue {
 public:
  static constexpr std::string_view kName = "fifo";
  // Room for every task that is ready on release (a backlog of independent tasks can reach that);
  // tasks made ready by their predecessors come and go.
  void init(int32_t /*roots*/, size_t ready_at_release) {
    resize(std::bit_ceil(std::max<size_t>(ready_at_release, 1024)));
  }
  bool empty() const { return size_ == 0; }
  void push(Ready r, int32_t /*root*/) {
    if (size_ > mask_) resize(2 * (mask_ + 1));
    ring_[(head_ + size_++) & mask_] = r;
  }
  Ready pop() {
    --size_;
    const Ready r = ring_[head_];
    head_ = (head_ + 1) & mask_;
    return r;
  }

 private:
  void resize(size_t capacity) {  // a power of two, at least size_
    auto bigger = std::make_unique_for_overwrite<Ready[]>(capacity);  // pages touched on use
    for (size_t i = 0; i < size_; ++i) bigger[i] = ring_[(head_ + i) & mask_];
    ring_ = std::move(bigger);
    mask_ = capacity - 1;
    head_ = 0;
  }
  size_t size_ = 0;
  std::unique_ptr<Ready[]> ring_;
  size_t mask_ = 0;
  size_t head_ = 0;
};

// The oldest root function (loop body) first, first ready first out within a root: one FIFO bucket
// per root and a bit set of the non-empty ones. A finished statistics pass's successors overtake
// later roots' fresh tasks, which keeps a root's re-reads close to its first reads (and in L2).
class OldestRootFirstReadyQueue {
 public:
  static constexpr std::string_view kName = "oldest_root_first";
  static constexpr bool kFifoWithOneRoot = true;
  void init(int32_t roots, size_t /*ready_at_release*/) {  // buckets grow with their backlog
    buckets_.assign(static_cast<size_t>(roots), {});
    nonempty_.assign((static_cast<size_t>(roots) + 63) / 64, 0);
    first_word_ = nonempty_.size();
  }
  bool empty() const { return size_ == 0; }
  void push(Ready r, int32_t root) {
    ++size_;
    Bucket& b = buckets_[static_cast<size_t>(root)];
    if (b.head == b.items.size()) {  // was empty
      const size_t w = static_cast<size_t>(root) / 64;
      nonempty_[w] |= uint64_t{1} << (root % 64);
      first_word_ = std::min(first_word_, w);
    }
    b.items.push_back(r);
  }
  Ready pop() {
    --size_;
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

 private:
  struct Bucket {
    std::vector<Ready> items;
    size_t head = 0;
  };
  size_t size_ = 0;
  std::vector<Bucket> buckets_;
  std::vector<uint64_t> nonempty_;
  size_t first_word_ = 0;  // no non-empty bucket below this word
};

// The built-in policies: the run config's names (kReadyOrderNames) and the simulator's dispatch
// both read this list, and a policy's ReadyOrder is its place in it (ReadyOrder's enumerators name
// the first ones, sim/simulator.hpp). A new policy is one entry, at the end.
using BuiltinReadyQueues = ReadyQueueList<OldestRootFirstReadyQueue, FifoReadyQueue>;

}  // namespace tilesim
