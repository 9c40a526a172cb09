#pragma once
// The SPMD (Ascend C / Triton) runtime: every task is pinned to its core by the launch and all
// cores start at kernel launch, running their tasks back to back in task order, a task gap
// (scheduler.task_gap_ns) apart. No AICPU takes part; SPMD tasks have no dependencies.

#include <cstdint>
#include <vector>

#include "sim/task_engine.hpp"

namespace tilesim {

class SpmdRuntime : public TaskEngine {
 public:
  SpmdRuntime(const TaskGraph& g, std::vector<TaskCost> costs, const Hardware& hw,
              const SimOptions& opt);
  SimResult run() { return TaskEngine::run(*this); }

  // Builds each core's task list (throws on an unpinned or dependent task) and starts every core.
  void start();
  void on_event(const Event& /*e*/, double /*t*/) {}  // only the engine's starts are queued
  void on_task_end(int32_t task, double t) { start_next(record(task).core, t + gap_); }

 private:
  void start_next(int32_t core, double t) {
    int32_t& next = next_[static_cast<size_t>(core)];
    if (next >= offset_[static_cast<size_t>(core) + 1]) return;
    const int32_t task = tasks_[static_cast<size_t>(next++)];
    record(task).core = core;
    push(kLane, t, kStart, task);
  }

  static constexpr int kLane = 0;
  double gap_;
  std::vector<int32_t> offset_;  // tasks_[offset_[c], offset_[c + 1]) run on core c, in order
  std::vector<int32_t> tasks_;
  std::vector<int32_t> next_;  // per core: index in tasks_ of its next task
};

}  // namespace tilesim
