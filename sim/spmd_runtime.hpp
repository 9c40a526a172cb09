#pragma once
// The SPMD (Ascend C / Triton) runtime. No AICPU takes part and SPMD tasks have no dependencies.
//  - The launch starts the cores that get work one after another, kernel.core_start_ns apart
//    (pinned cores first, in core order; then one core per block of the first wave).
//  - A pinned task (the ascendc partition: one looping task per core) runs on its core; a
//    core starts its first when the launch starts the core and runs the rest back to back, a
//    task gap (scheduler.task_gap_ns) apart.
//  - An unpinned task is a block of an spmd launch: the hardware places it on the first free core
//    of its type (in task order), where it starts scheduler.block_start_ns later. Blocks beyond
//    the cores wait for one to free, so grid = cores + 1 runs a second wave.
//  - A block may be a run of tasks (Task::continues_block): the hardware places its first; each
//    next one starts on the same core the moment the previous ends (the block's own loop), or,
//    when their kinds overlap (TaskKind::overlap), as model/task_overlap.hpp says: once its
//    first pipe is free of the tasks before (each later stage waiting for its own pipe), up to
//    that many tasks at once; the core takes its next work when all of them have ended.
// A core runs its pinned tasks first, then takes blocks.
// A mixed block (Task::mix_lane; Triton-Ascend's and Ascend C's mix kernels) runs on a cluster:
// AIC c with AIVs 2c and 2c + 1. The hardware places it on the first cluster whose three cores
// are free. Each core runs its lane's tasks in task order; a task also waits for its
// predecessors, kernel.cross_core_flag_ns more when one ran on another core of the cluster
// (CrossCoreSetFlag / CrossCoreWaitFlag, mode 2). Consecutive tasks of a lane whose kinds
// pipeline across tasks (TaskKind::overlap) overlap as model/task_overlap.hpp says: the next
// starts once its first pipe is free of the tasks before (each later stage waiting for its own
// pipe), up to the depth the kinds allow, and an edge between them is met at the predecessor's
// start. The cluster
// takes its next block when the block's last task ends. A launch holds mixed blocks or other work,
// not both. A graph may hold several launches (Task::launch): the blocks of launch k + 1 start only
// when every task of launch k has finished, launch_gap_cycles (sim/launch_cost.hpp) later, their
// cores started kernel.core_start_ns apart like the first launch's; a core whose next block belongs
// to a later launch idles until then. Pinned tasks are launch 0; a block's continuing tasks belong
// to its launch.

#include <algorithm>
#include <array>
#include <cstdint>
#include <utility>
#include <vector>

#include "sim/task_engine.hpp"

namespace tilesim {

class SpmdRuntime : public TaskEngine {
 public:
  SpmdRuntime(const TaskGraph& g, std::vector<TaskCost> costs, const Hardware& hw,
              const SimOptions& opt);
  SimResult run() { return TaskEngine::run(*this); }

  // Builds each core's pinned task list and the blocks' queues (throws on a dependent task) and
  // starts every core.
  void start();
  void on_event(const Event& /*e*/, double /*t*/) {}  // only the engine's starts are queued
  // A started task lets its core's next one start overlapped (it needs the run it started with).
  void on_task_start(int32_t task, double t) {
    const int32_t core = record(task).core;
    if (g_.tasks[static_cast<size_t>(task)].mix_lane >= 0) {
      Cluster& cl = clusters_[static_cast<size_t>(cluster_of(core))];
      const auto l = static_cast<size_t>(g_.tasks[static_cast<size_t>(task)].mix_lane);
      if (cl.last[l] != task) return;
      cl.last_started[l] = true;
      try_lane(cluster_of(core), static_cast<int>(l), t);
      return;
    }
    CoreLoop& loop = loops_[static_cast<size_t>(core)];
    if (loop.last != task) return;
    loop.started = true;
    pre_start(core, t);
  }
  void on_task_end(int32_t task, double t) {
    const int32_t core = record(task).core;
    if (g_.tasks[static_cast<size_t>(task)].mix_lane >= 0) {
      end_mixed(task, t);
    } else {
      CoreLoop& loop = loops_[static_cast<size_t>(core)];
      --loop.running;
      const auto after = static_cast<size_t>(loop.last) + 1;
      if (after < g_.tasks.size() && g_.tasks[after].continues_block) {
        if (loop.running == 0)
          start_on(core, static_cast<int32_t>(after), t);
        else
          pre_start(core, t);
      } else if (loop.running == 0) {
        idle_[static_cast<size_t>(core)] = !start_next(core, t, gap_);
      }
    }
    if (--left_[static_cast<size_t>(g_.tasks[static_cast<size_t>(task)].launch)] == 0)
      open_next_launch(t);
  }

 private:
  // After launch `launch_` ends at `t`: the next launch with tasks starts on every idle core,
  // launch_gap_ later, the cores kernel.core_start_ns apart as at the first launch.
  void open_next_launch(double t);
  // Starts core `core`'s next pinned task `gap` after `t`, else the next block of its type if it
  // belongs to the current launch (`gap` + scheduler.block_start_ns after `t`; a core's first
  // block counts in `*started`); false when the core has nothing to start.
  bool start_next(int32_t core, double t, double gap, size_t* started = nullptr) {
    int32_t& next = next_[static_cast<size_t>(core)];
    int32_t task = -1;
    if (next < offset_[static_cast<size_t>(core) + 1]) {
      task = tasks_[static_cast<size_t>(next++)];
    } else {
      size_t& b = next_block_[core_type(core)];
      const auto& queue = blocks_[core_type(core)];
      if (b >= queue.size() || g_.tasks[static_cast<size_t>(queue[b])].launch != launch_)
        return false;
      task = queue[b++];
      gap = (started ? gap : 0) + block_start_;
      if (started) ++*started;
    }
    start_on(core, task, t + gap);
    return true;
  }

  // A core's run of tasks (a pinned list, a block's continuing tasks): the task queued last on
  // it, whether it has started, and how many of its tasks are queued and not ended.
  struct CoreLoop {
    int32_t last = -1;
    bool started = false;
    int running = 0;
  };
  // Queues `task` on `core` at `at`.
  void start_on(int32_t core, int32_t task, double at) {
    record(task).core = core;
    push(kLane, at, kStart, task);
    CoreLoop& loop = loops_[static_cast<size_t>(core)];
    ++loop.running;
    loop.last = task;
    loop.started = false;
  }
  // Once the core's last task has started: the block's next task too if the two overlap
  // (TaskKind::overlap, model/task_overlap.hpp) and the core holds fewer tasks than they allow.
  void pre_start(int32_t core, double now) {
    const CoreLoop& loop = loops_[static_cast<size_t>(core)];
    if (!loop.started) return;
    const auto after = static_cast<size_t>(loop.last) + 1;
    if (after >= g_.tasks.size() || !g_.tasks[after].continues_block) return;
    const auto next = static_cast<int32_t>(after);
    if (loop.running >= overlap_depth(loop.last, next)) return;
    start_on(core, next, std::max(now, overlap_start(core, next)));
  }

  // Mixed blocks. The cluster of a core, and the core of lane `lane` of cluster `c`.
  int32_t cluster_of(int32_t core) const {
    const int32_t i = core - global_core(core_type(core), 0);
    return core_type(core) == CoreType::kAic ? i : i / 2;
  }
  int32_t lane_core(int32_t c, int lane) const {
    return lane == 0 ? global_core(CoreType::kAic, c)
                     : global_core(CoreType::kAiv, 2 * c + lane - 1);
  }
  // Places the next mixed block of the current launch on cluster `c`, its lane l starting
  // starts[l] after `t`; false when there is none.
  bool start_cluster(int32_t c, double t, const std::array<double, 3>& starts);
  // Starts lane `lane`'s next task of cluster c's block if its predecessors have ended, at the
  // later of `t` and its flags' arrival.
  void try_lane(int32_t c, int lane, double t);
  void end_mixed(int32_t task, double t);
  // Opens the current launch's mixed blocks on free clusters (`started` counts the cores
  // started, for the launch's stagger); false when the launch has none.
  bool open_clusters(double t, size_t& started);
  // Checks the mixed blocks (launches, hardware, edges) and sets up their state.
  void start_mixed(const std::vector<bool>& plain_launch);

  struct Cluster {
    int32_t left = 0;                          // tasks of its block not yet ended
    std::array<std::vector<int32_t>, 3> lane;  // its block's tasks by lane, in task order
    std::array<size_t, 3> next{};              // per lane: the next task to start
    std::array<int, 3> running{};              // per lane: tasks started and not yet ended
    std::array<double, 3> free_at{};           // per lane: its core free from then
    std::array<int32_t, 3> last{};             // per lane: the task queued last (-1: none)
    std::array<bool, 3> last_started{};        // ... whether it has started
  };
  // An edge between two tasks of one lane whose kinds overlap: the core's pipes keep their order
  // (the successor's compute after the predecessor's, model/task_overlap.hpp) and the state
  // they pass stays on chip, so the successor is released when the predecessor starts.
  bool released_at_start(int32_t from, int32_t to) const {
    return g_.tasks[static_cast<size_t>(from)].mix_lane ==
               g_.tasks[static_cast<size_t>(to)].mix_lane &&
           g_.kinds[static_cast<size_t>(kind_of(from))].overlap > 1 &&
           g_.kinds[static_cast<size_t>(kind_of(to))].overlap > 1;
  }

  static constexpr int kLane = 0;
  std::vector<Cluster> clusters_;
  std::vector<std::pair<int32_t, int32_t>> mixed_;  // [first, end) of each mixed block, by
                                                    // launch, in task order
  size_t next_mixed_ = 0;
  std::vector<bool> mixed_launch_;  // per launch: its blocks are mixed blocks
  std::vector<int32_t> pending_;    // per task: predecessors not yet ended
  std::vector<double> flags_at_;    // per task: when its predecessors' flags have all arrived
  double gap_;
  double block_start_;
  double core_start_;
  double launch_gap_;
  double flag_;
  int32_t launch_ = 0;           // the launch whose blocks are being placed
  std::vector<int64_t> left_;    // per launch: tasks not yet finished
  std::vector<bool> idle_;       // per core: nothing started since its last task ended
  std::vector<CoreLoop> loops_;  // per core
  std::vector<int32_t> offset_;  // tasks_[offset_[c], offset_[c + 1]) are pinned to core c
  std::vector<int32_t> tasks_;
  std::vector<int32_t> next_;                // per core: index in tasks_ of its next task
  ByCoreType<std::vector<int32_t>> blocks_;  // unpinned tasks per core type, by launch, then
                                             // in task order
  ByCoreType<size_t> next_block_;
};

}  // namespace tilesim
