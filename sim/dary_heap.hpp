#pragma once
// A 4-ary min-heap (half the depth of a binary heap, siblings on one cache line) and the
// 128-bit time keys the simulator orders events and flows by.
//
// Sifts move a hole instead of swapping. pop() walks the hole down to a leaf along the smaller
// children and then sifts the last element up (Floyd): new entries are mostly late, so the last
// element rarely climbs and each level costs only the sibling comparisons. Keys must be unique
// (ties broken by a sequence number or id) so the pop order does not depend on the layout.

#include <bit>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace tilesim {

// A heap key ordered by a time, then by a unique tie-breaker, compared as one 128-bit integer
// (branch-free, where the heaps' comparisons of siblings are unpredictable). The time is mapped to
// an integer of the same order: -0.0 is taken as +0.0 (as == does) and times are never NaN.
struct TimeKey {
  uint64_t tie;   // low half: sequence number or id
  uint64_t time;  // high half: ordered bits of the time

  static TimeKey make(double t, uint64_t tie) {
    const auto b = std::bit_cast<uint64_t>(t + 0.0);  // + 0.0 turns -0.0 into +0.0
    return {tie, b >> 63 ? ~b : b | kSign};
  }
  double t() const { return std::bit_cast<double>(time >> 63 ? time & ~kSign : ~time); }
  friend bool operator<(const TimeKey& a, const TimeKey& b) {
    __extension__ using U128 = unsigned __int128;
    return ((U128{a.time} << 64) | a.tie) < ((U128{b.time} << 64) | b.tie);
  }

 private:
  static constexpr uint64_t kSign = uint64_t{1} << 63;
};

template <typename T, typename Less>
class DaryHeap {
 public:
  bool empty() const { return v_.empty(); }
  size_t size() const { return v_.size(); }
  const T& top() const { return v_.front(); }
  void reserve(size_t n) { v_.reserve(n); }

  void push(T x) {
    size_t i = v_.size();
    v_.push_back(x);
    T* v = v_.data();
    while (i > 0) {
      const size_t parent = (i - 1) / kArity;
      if (!less_(x, v[parent])) break;
      v[i] = std::move(v[parent]);
      i = parent;
    }
    v[i] = std::move(x);
  }

  void pop() {
    const size_t n = v_.size() - 1;
    if (n == 0) {
      v_.pop_back();
      return;
    }
    T x = std::move(v_.back());
    v_.pop_back();
    T* v = v_.data();
    size_t i = 0;
    for (;;) {
      const size_t first = i * kArity + 1;
      if (first + kArity <= n) {
        // Full family: a tournament of two pairs.
        const size_t a = first + (less_(v[first + 1], v[first]) ? 1 : 0);
        const size_t b = first + 2 + (less_(v[first + 3], v[first + 2]) ? 1 : 0);
        const size_t best = a ^ ((a ^ b) & (size_t{0} - less_(v[b], v[a])));  // no branch
        v[i] = std::move(v[best]);
        i = best;
        continue;
      }
      if (first < n) {
        size_t best = first;
        for (size_t c = first + 1; c < n; ++c)
          if (less_(v[c], v[best])) best = c;
        v[i] = std::move(v[best]);
        i = best;
      }
      break;
    }
    while (i > 0) {
      const size_t parent = (i - 1) / kArity;
      if (!less_(x, v[parent])) break;
      v[i] = std::move(v[parent]);
      i = parent;
    }
    v[i] = std::move(x);
  }

 private:
  static constexpr size_t kArity = 4;
  std::vector<T> v_;
  Less less_;
};

}  // namespace tilesim
