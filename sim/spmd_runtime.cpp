#include "sim/spmd_runtime.hpp"

#include <algorithm>
#include <string>

#include "model/error.hpp"
#include "sim/launch_cost.hpp"

namespace tilesim {

SpmdRuntime::SpmdRuntime(const TaskGraph& g, std::vector<TaskCost> costs, const Hardware& hw,
                         const SimOptions& opt)
    : TaskEngine(g, std::move(costs), hw, opt),
      gap_(hw.ns_to_cycles(hw.scheduler.task_gap_ns)),
      block_start_(hw.ns_to_cycles(hw.scheduler.block_start_ns)),
      core_start_(hw.ns_to_cycles(hw.kernel.core_start_ns)),
      launch_gap_(launch_gap_cycles(hw, g)) {}

void SpmdRuntime::start() {
  const TaskGraph& g = g_;
  const auto ncores = static_cast<size_t>(num_cores());
  // One array of pinned tasks per core (counting pass, then fill), in task order; blocks queue
  // per core type.
  std::vector<int32_t> core_of(g.tasks.size(), -1);
  offset_.assign(ncores + 1, 0);
  for (size_t i = 0; i < g.tasks.size(); ++i) {
    const auto& t = g.tasks[i];
    if (g.indegree(static_cast<int32_t>(i)) != 0)
      throw InternalError("task graph: SPMD tasks cannot have dependencies");
    const CoreType type = g.kinds[static_cast<size_t>(t.kind)].core;
    if (t.continues_block && (i == 0 || t.pinned_core >= 0 || g.tasks[i - 1].pinned_core >= 0 ||
                              g.kinds[static_cast<size_t>(g.tasks[i - 1].kind)].core != type ||
                              g.tasks[i - 1].launch != t.launch))
      throw InternalError("task graph: task " + std::to_string(i) +
                          " continues a block but does not follow an unpinned task of its type"
                          " and launch");
    left_.resize(std::max(left_.size(), static_cast<size_t>(t.launch) + 1), 0);
    ++left_[static_cast<size_t>(t.launch)];
    if (t.pinned_core >= 0 && t.launch != 0)
      throw InternalError("task graph: a pinned SPMD task belongs to launch 0");
    if (t.pinned_core < 0) {
      if (!t.continues_block) blocks_[type].push_back(static_cast<int32_t>(i));
      continue;
    }
    core_of[i] = global_core(type, t.pinned_core);
    ++offset_[static_cast<size_t>(core_of[i]) + 1];
  }
  for (size_t c = 0; c < ncores; ++c) offset_[c + 1] += offset_[c];
  next_.assign(offset_.begin(), offset_.end() - 1);
  tasks_.resize(static_cast<size_t>(offset_.back()));
  std::vector<int32_t> fill = next_;
  for (size_t i = 0; i < g.tasks.size(); ++i)
    if (core_of[i] >= 0)
      tasks_[static_cast<size_t>(fill[static_cast<size_t>(core_of[i])]++)] =
          static_cast<int32_t>(i);
  for (const CoreType type : kCoreTypes)
    std::stable_sort(blocks_[type].begin(), blocks_[type].end(), [&](int32_t a, int32_t b) {
      return g.tasks[static_cast<size_t>(a)].launch < g.tasks[static_cast<size_t>(b)].launch;
    });
  // The first launch that has tasks opens at 0. It starts the cores that get work one after
  // another (kernel.core_start_ns apart): pinned cores in core order, then as many more as
  // there are blocks.
  while (static_cast<size_t>(launch_) < left_.size() && left_[static_cast<size_t>(launch_)] == 0)
    ++launch_;
  idle_.assign(ncores, false);
  size_t started = 0;
  for (size_t c = 0; c < ncores; ++c)
    if (offset_[c + 1] > offset_[c])
      start_next(static_cast<int32_t>(c), 0, static_cast<double>(started++) * core_start_);
  for (size_t c = 0; c < ncores; ++c)
    if (offset_[c + 1] == offset_[c])
      idle_[c] = !start_next(static_cast<int32_t>(c), 0, static_cast<double>(started) * core_start_,
                             &started);
}

void SpmdRuntime::open_next_launch(double t) {
  do {
    ++launch_;
  } while (static_cast<size_t>(launch_) < left_.size() && left_[static_cast<size_t>(launch_)] == 0);
  if (static_cast<size_t>(launch_) >= left_.size()) return;
  // Every core is idle here (pinned tasks are launch 0): the launch starts them as the first did.
  size_t started = 0;
  for (size_t c = 0; c < idle_.size(); ++c)
    if (idle_[c])
      idle_[c] = !start_next(static_cast<int32_t>(c), t + launch_gap_,
                             static_cast<double>(started) * core_start_, &started);
}

}  // namespace tilesim
