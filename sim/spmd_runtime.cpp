#include "sim/spmd_runtime.hpp"

#include <string>

#include "model/error.hpp"

namespace tilesim {

SpmdRuntime::SpmdRuntime(const TaskGraph& g, std::vector<TaskCost> costs, const Hardware& hw,
                         const SimOptions& opt)
    : TaskEngine(g, std::move(costs), hw, opt),
      gap_(hw.ns_to_cycles(hw.scheduler.task_gap_ns)),
      block_start_(hw.ns_to_cycles(hw.scheduler.block_start_ns)),
      core_start_(hw.ns_to_cycles(hw.kernel.core_start_ns)) {}

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
                              g.kinds[static_cast<size_t>(g.tasks[i - 1].kind)].core != type))
      throw InternalError("task graph: task " + std::to_string(i) +
                          " continues a block but does not follow an unpinned task of its type");
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
  // The launch starts the cores that get work one after another (kernel.core_start_ns apart):
  // pinned cores in core order, then as many more as there are blocks.
  size_t started = 0;
  for (size_t c = 0; c < ncores; ++c)
    if (offset_[c + 1] > offset_[c])
      start_next(static_cast<int32_t>(c), 0, static_cast<double>(started++) * core_start_);
  for (size_t c = 0; c < ncores; ++c)
    if (offset_[c + 1] == offset_[c])
      start_next(static_cast<int32_t>(c), 0, static_cast<double>(started) * core_start_, &started);
}

}  // namespace tilesim
