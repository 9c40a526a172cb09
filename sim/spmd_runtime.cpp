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
      launch_gap_(launch_gap_cycles(hw, g)),
      flag_(hw.ns_to_cycles(hw.kernel.cross_core_flag_ns)) {}

void SpmdRuntime::start() {
  const TaskGraph& g = g_;
  const auto ncores = static_cast<size_t>(num_cores());
  // One array of pinned tasks per core (counting pass, then fill), in task order; blocks queue
  // per core type.
  std::vector<int32_t> core_of(g.tasks.size(), -1);
  offset_.assign(ncores + 1, 0);
  std::vector<bool> plain_launch;  // per launch: it holds tasks outside mixed blocks
  for (size_t i = 0; i < g.tasks.size(); ++i) {
    const auto& t = g.tasks[i];
    const auto task = static_cast<int32_t>(i);
    const CoreType type = g.kinds[static_cast<size_t>(t.kind)].core;
    const auto launch = static_cast<size_t>(t.launch);
    left_.resize(std::max(left_.size(), launch + 1), 0);
    mixed_launch_.resize(left_.size(), false);
    plain_launch.resize(left_.size(), false);
    ++left_[launch];
    if (t.mix_lane >= 0) {
      if (t.mix_lane > 2 || t.pinned_core >= 0 || (type == CoreType::kAic) != (t.mix_lane == 0))
        throw InternalError("task graph: task " + std::to_string(i) +
                            " of a mixed block has lane " + std::to_string(t.mix_lane) + " on a " +
                            core_type_name(type) +
                            " core (0: the AIC, 1 and 2: the AIVs; never pinned)");
      if (t.continues_block &&
          (i == 0 || g.tasks[i - 1].mix_lane < 0 || g.tasks[i - 1].launch != t.launch))
        throw InternalError("task graph: task " + std::to_string(i) +
                            " continues a mixed block but does not follow one of its launch");
      if (t.continues_block)
        mixed_.back().second = task + 1;
      else
        mixed_.emplace_back(task, task + 1);
      mixed_launch_[launch] = true;
      continue;
    }
    plain_launch[launch] = true;
    if (g.indegree(task) != 0)
      throw InternalError("task graph: SPMD tasks outside a mixed block cannot have dependencies");
    if (t.continues_block && (i == 0 || t.pinned_core >= 0 || g.tasks[i - 1].pinned_core >= 0 ||
                              g.tasks[i - 1].mix_lane >= 0 ||
                              g.kinds[static_cast<size_t>(g.tasks[i - 1].kind)].core != type ||
                              g.tasks[i - 1].launch != t.launch))
      throw InternalError("task graph: task " + std::to_string(i) +
                          " continues a block but does not follow an unpinned task of its type"
                          " and launch");
    if (t.pinned_core >= 0 && t.launch != 0)
      throw InternalError("task graph: a pinned SPMD task belongs to launch 0");
    if (t.pinned_core < 0) {
      if (!t.continues_block) blocks_[type].push_back(task);
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
  if (!mixed_.empty()) start_mixed(plain_launch);
  // The first launch that has tasks opens at 0. It starts the cores that get work one after
  // another (kernel.core_start_ns apart): pinned cores in core order, then as many more as
  // there are blocks.
  while (static_cast<size_t>(launch_) < left_.size() && left_[static_cast<size_t>(launch_)] == 0)
    ++launch_;
  idle_.assign(ncores, false);
  loops_.assign(ncores, CoreLoop{});
  size_t started = 0;
  if (static_cast<size_t>(launch_) < left_.size() && mixed_launch_[static_cast<size_t>(launch_)]) {
    idle_.assign(ncores, true);
    open_clusters(0, started);
    return;
  }
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
  if (mixed_launch_[static_cast<size_t>(launch_)]) {
    open_clusters(t + launch_gap_, started);
    return;
  }
  for (size_t c = 0; c < idle_.size(); ++c)
    if (idle_[c])
      idle_[c] = !start_next(static_cast<int32_t>(c), t + launch_gap_,
                             static_cast<double>(started) * core_start_, &started);
}

void SpmdRuntime::start_mixed(const std::vector<bool>& plain_launch) {
  const TaskGraph& g = g_;
  for (size_t l = 0; l < mixed_launch_.size(); ++l)
    if (mixed_launch_[l] && plain_launch[l])
      throw InternalError("task graph: launch " + std::to_string(l) +
                          " holds mixed blocks and other tasks (a launch is one or the other)");
  const int64_t aic = cores_of(CoreType::kAic), aiv = cores_of(CoreType::kAiv);
  if (aic < 1 || aiv != 2 * aic)
    throw Error("task graph: a mixed block runs on an AIC and its two AIVs, but the hardware has " +
                    std::to_string(aic) + " AIC and " + std::to_string(aiv) +
                    " AIV cores (a mixed launch needs two AIV per AIC)",
                ErrorKind::kLimits);
  // Edges stay inside their mixed block.
  for (const auto& [first, end] : mixed_)
    for (int32_t i = first; i < end; ++i)
      for (const int32_t* s = g.succ_begin(i); s != g.succ_end(i); ++s)
        if (*s < first || *s >= end)
          throw InternalError("task graph: task " + std::to_string(i) + " of a mixed block has a " +
                              "successor " + std::to_string(*s) + " outside it");
  std::stable_sort(mixed_.begin(), mixed_.end(), [&](const auto& a, const auto& b) {
    return g.tasks[static_cast<size_t>(a.first)].launch <
           g.tasks[static_cast<size_t>(b.first)].launch;
  });
  clusters_.resize(static_cast<size_t>(aic));
  pending_.resize(g.tasks.size());
  for (size_t i = 0; i < g.tasks.size(); ++i) pending_[i] = g.indegree(static_cast<int32_t>(i));
  flags_at_.assign(g.tasks.size(), 0.0);
}

bool SpmdRuntime::open_clusters(double t, size_t& started) {
  bool any = false;
  for (size_t c = 0; c < clusters_.size(); ++c) {
    const auto ci = static_cast<int32_t>(c);
    bool free = true;
    for (int l = 0; l < 3; ++l) free = free && idle_[static_cast<size_t>(lane_core(ci, l))];
    if (!free) continue;
    const std::array<double, 3> starts{static_cast<double>(started) * core_start_,
                                       static_cast<double>(started + 1) * core_start_,
                                       static_cast<double>(started + 2) * core_start_};
    if (!start_cluster(ci, t, starts)) break;
    any = true;
    started += 3;
    for (int l = 0; l < 3; ++l) idle_[static_cast<size_t>(lane_core(ci, l))] = false;
  }
  return any;
}

bool SpmdRuntime::start_cluster(int32_t c, double t, const std::array<double, 3>& starts) {
  if (next_mixed_ >= mixed_.size() ||
      g_.tasks[static_cast<size_t>(mixed_[next_mixed_].first)].launch != launch_)
    return false;
  const auto [first, end] = mixed_[next_mixed_++];
  Cluster& cl = clusters_[static_cast<size_t>(c)];
  cl.left = end - first;
  for (size_t l = 0; l < 3; ++l) {
    cl.lane[l].clear();
    cl.next[l] = 0;
    cl.running[l] = 0;
    cl.free_at[l] = t + starts[l] + block_start_;
    cl.last[l] = -1;
  }
  for (int32_t i = first; i < end; ++i)
    cl.lane[static_cast<size_t>(g_.tasks[static_cast<size_t>(i)].mix_lane)].push_back(i);
  for (int l = 0; l < 3; ++l) try_lane(c, l, t);
  return true;
}

void SpmdRuntime::try_lane(int32_t c, int lane, double t) {
  Cluster& cl = clusters_[static_cast<size_t>(c)];
  const auto l = static_cast<size_t>(lane);
  while (cl.next[l] < cl.lane[l].size()) {
    const int32_t task = cl.lane[l][cl.next[l]];
    if (pending_[static_cast<size_t>(task)] > 0) return;
    double at = std::max(t, flags_at_[static_cast<size_t>(task)]);
    const int32_t prev = cl.last[l];
    if (cl.running[l] == 0) {
      at = std::max(at, cl.free_at[l]);
    } else {
      // Overlapped: after the task before has started (the core's pipes hold its work).
      if (!cl.last_started[l] || cl.running[l] >= overlap_depth(prev, task)) return;
      at = std::max(at, overlap_start(lane_core(c, lane), task));
    }
    ++cl.next[l];
    ++cl.running[l];
    cl.last[l] = task;
    cl.last_started[l] = false;
    record(task).core = lane_core(c, lane);
    push(kLane, at, kStart, task);
    for (const int32_t* s = g_.succ_begin(task); s != g_.succ_end(task); ++s)
      if (released_at_start(task, *s)) {
        --pending_[static_cast<size_t>(*s)];
        flags_at_[static_cast<size_t>(*s)] = std::max(flags_at_[static_cast<size_t>(*s)], at);
      }
  }
}

void SpmdRuntime::end_mixed(int32_t task, double t) {
  const int32_t c = cluster_of(record(task).core);
  Cluster& cl = clusters_[static_cast<size_t>(c)];
  const int8_t lane = g_.tasks[static_cast<size_t>(task)].mix_lane;
  --cl.running[static_cast<size_t>(lane)];
  cl.free_at[static_cast<size_t>(lane)] = std::max(cl.free_at[static_cast<size_t>(lane)], t);
  for (const int32_t* s = g_.succ_begin(task); s != g_.succ_end(task); ++s) {
    if (released_at_start(task, *s)) continue;
    const auto si = static_cast<size_t>(*s);
    --pending_[si];
    flags_at_[si] = std::max(flags_at_[si], t + (g_.tasks[si].mix_lane != lane ? flag_ : 0.0));
  }
  if (--cl.left > 0) {
    for (int l = 0; l < 3; ++l) try_lane(c, l, t);
    return;
  }
  // The block's last task: the cluster takes the next block, or its three cores idle.
  if (!start_cluster(c, t, {0, 0, 0}))
    for (int l = 0; l < 3; ++l) idle_[static_cast<size_t>(lane_core(c, l))] = true;
}

}  // namespace tilesim
