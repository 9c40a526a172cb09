#include "sim/span_path.hpp"

#include <algorithm>
#include <vector>

namespace tilesim {

SpanPath span_path(const TaskGraph& graph, const SimResult& sim) {
  SpanPath p;
  const auto n = static_cast<int32_t>(sim.tasks.size());
  if (n == 0) return p;
  // Each task's predecessor that ended last (its pred_end), if any.
  std::vector<int32_t> cause(static_cast<size_t>(n), -1);
  for (int32_t a = 0; a < n; ++a)
    for (const int32_t* b = graph.succ_begin(a); b != graph.succ_end(a); ++b) {
      const TaskRecord& rb = sim.tasks[static_cast<size_t>(*b)];
      if (cause[static_cast<size_t>(*b)] < 0 &&
          sim.tasks[static_cast<size_t>(a)].end == rb.pred_end)
        cause[static_cast<size_t>(*b)] = a;
    }
  // Each task's predecessor on its core: the one before it in start order.
  std::vector<int32_t> order(static_cast<size_t>(n));
  for (int32_t i = 0; i < n; ++i) order[static_cast<size_t>(i)] = i;
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const TaskRecord &ra = sim.tasks[static_cast<size_t>(a)],
                     &rb = sim.tasks[static_cast<size_t>(b)];
    if (ra.core != rb.core) return ra.core < rb.core;
    return ra.start != rb.start ? ra.start < rb.start : a < b;
  });
  std::vector<int32_t> before(static_cast<size_t>(n), -1);
  for (size_t k = 1; k < order.size(); ++k)
    if (sim.tasks[static_cast<size_t>(order[k])].core ==
        sim.tasks[static_cast<size_t>(order[k - 1])].core)
      before[static_cast<size_t>(order[k])] = order[k - 1];
  // The task that ends last (the first listed among equal ends).
  int32_t t = 0;
  for (int32_t i = 1; i < n; ++i)
    if (sim.tasks[static_cast<size_t>(i)].end > sim.tasks[static_cast<size_t>(t)].end) t = i;
  // Each step goes to a task that started no later; the bound stops a cycle of zero-length
  // tasks starting together.
  for (int32_t step = 0; step < n; ++step) {
    const TaskRecord& r = sim.tasks[static_cast<size_t>(t)];
    ++p.tasks;
    p.task_cycles += r.end - r.start;
    const int32_t pred = cause[static_cast<size_t>(t)], prev = before[static_cast<size_t>(t)];
    const double prev_end = prev < 0 ? -1 : sim.tasks[static_cast<size_t>(prev)].end;
    if (pred >= 0 && r.pred_end >= prev_end) {
      ++p.handoffs;
      p.handoff_cycles += r.start - r.pred_end;
      t = pred;
    } else if (prev >= 0) {
      p.core_wait_cycles += r.start - prev_end;
      t = prev;
    } else {
      p.head_cycles = r.start - sim.first_start;
      break;
    }
  }
  return p;
}

}  // namespace tilesim
