#pragma once
// A 4-ary min-heap: half the depth of a binary heap and siblings on one cache line, which is
// where the simulator spends its time (event and flow queues of a few dozen entries).

#include <cstddef>
#include <utility>
#include <vector>

namespace tilesim {

template <typename T, typename Less>
class DaryHeap {
 public:
  bool empty() const { return v_.empty(); }
  size_t size() const { return v_.size(); }
  const T& top() const { return v_.front(); }

  void push(T x) {
    size_t i = v_.size();
    v_.push_back(std::move(x));
    while (i > 0) {
      const size_t parent = (i - 1) / kArity;
      if (!less_(v_[i], v_[parent])) break;
      std::swap(v_[i], v_[parent]);
      i = parent;
    }
  }

  void pop() {
    v_.front() = std::move(v_.back());
    v_.pop_back();
    const size_t n = v_.size();
    size_t i = 0;
    for (;;) {
      const size_t first = i * kArity + 1;
      if (first >= n) break;
      size_t best = first;
      const size_t last = first + kArity < n ? first + kArity : n;
      for (size_t c = first + 1; c < last; ++c)
        if (less_(v_[c], v_[best])) best = c;
      if (!less_(v_[best], v_[i])) break;
      std::swap(v_[i], v_[best]);
      i = best;
    }
  }

 private:
  static constexpr size_t kArity = 4;
  std::vector<T> v_;
  Less less_;
};

}  // namespace tilesim
