#pragma once
// Runs body(i) for every i in [0, n) on oneTBB workers: `threads` of them (0: every core; 1: in
// order on the calling thread). Each i must write only its own result slot, so the results do
// not depend on the thread count.

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <cstddef>

namespace tilesim {

template <class Body>
void parallel_indices(size_t n, int threads, const Body& body) {
  if (n == 0) return;
  auto range_body = [&](const tbb::blocked_range<size_t>& range) {
    for (size_t i = range.begin(); i != range.end(); ++i) body(i);
  };
  const tbb::blocked_range<size_t> all(0, n, 1);
  if (threads == 1) {
    range_body(all);
    return;
  }
  tbb::task_arena arena(threads > 0 ? threads : tbb::task_arena::automatic);
  arena.execute([&] { tbb::parallel_for(all, range_body); });
}

}  // namespace tilesim
