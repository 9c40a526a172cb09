#include "sim/pypto_runtime.hpp"

#include "sim/launch_cost.hpp"

namespace tilesim {

int64_t scheduler_threads(const Hardware& hw, const SimOptions& opt) {
  int64_t most = hw.scheduler.max_threads;
  if (opt.launch_sched_aicpu_num > 0) most = std::min(most, opt.launch_sched_aicpu_num);
  const int64_t per = hw.scheduler.aic_per_thread;
  const int64_t aic = std::max<int64_t>(hw.cores.aic, 1);
  return aic > (most - 1) * per ? most : (aic + per - 1) / per;
}

PyptoMachine::PyptoMachine(const TaskGraph& g, std::vector<TaskCost> costs, const Hardware& hw,
                           const SimOptions& opt)
    : TaskEngine(g, std::move(costs), hw, opt) {
  dispatch_ = hw.scheduler.dispatch_cycles;
  resolve_ = hw.scheduler.resolve_cycles;
  resolve_last_ = hw.scheduler.resolve_last_cycles;
  completion_ = hw.scheduler.completion_cycles;
  poll_ = hw.ns_to_cycles(hw.scheduler.poll_ns);
  notify_ = hw.ns_to_cycles(hw.scheduler.notify_ns);
  completion_notify_ = hw.ns_to_cycles(hw.scheduler.completion_notify_ns);
  gap_ = hw.ns_to_cycles(hw.scheduler.task_gap_ns);
  // Each core type's cores are split into consecutive blocks, one per scheduler thread
  // (aicore_manager.h UpdateAiCoreBlockIndexSection).
  const int64_t nsched = scheduler_threads(hw, opt);
  res_.scheduler_threads = static_cast<int32_t>(nsched);
  sched_.resize(static_cast<size_t>(nsched));
  cores_.resize(static_cast<size_t>(num_cores()));
  for (size_t c = 0; c < cores_.size(); ++c) {
    Core& core = cores_[c];
    core.type = core_type(static_cast<int32_t>(c));
    const int64_t j = static_cast<int64_t>(c) - global_core(core.type, 0);
    core.sched = static_cast<int32_t>(scheduler_of_core(j, cores_of(core.type), nsched));
    ++empty_cores_[core.type];
  }
  // Poll order: a scheduler's cores in global order (its AIV block, then its AIC block).
  for (size_t c = 0; c < cores_.size(); ++c) {
    auto& core = cores_[c];
    auto& s = sched_[static_cast<size_t>(core.sched)];
    const CoreType t = core.type;
    ++s.ncores;
    if (s.empty[t] == 0) s.group[t].base = static_cast<int32_t>(c);
    core.bit = static_cast<int32_t>(c) - s.group[t].base;
    ++s.empty[t];
    s.slots[t] += 2;
  }
  for (auto& s : sched_)
    for (const CoreType t : kCoreTypes) {
      auto& grp = s.group[t];
      grp.size = static_cast<int32_t>(s.empty[t]);
      grp.words = static_cast<int32_t>((s.empty[t] + 63) / 64);
      grp.idle = bits_.size();
      grp.half = grp.idle + static_cast<size_t>(grp.words);
      bits_.resize(grp.half + static_cast<size_t>(grp.words), 0);
    }
  for (const auto& core : cores_)
    set_bit(sched_[static_cast<size_t>(core.sched)].group[core.type].idle, core.bit);
}

ByCoreType<size_t> PyptoMachine::count_conditions() {
  const size_t n = g_.tasks.size();
  const int32_t roots = g_.num_roots();
  remaining_.resize(n);
  root_tasks_off_.assign(static_cast<size_t>(roots) + 1, 0);
  bool roots_in_order = true;  // tasks numbered root by root: the order needs no array
  ByCoreType<size_t> at_release;
  for (size_t i = 0; i < n; ++i) {
    const auto& t = g_.tasks[i];
    const int32_t preds = g_.indegree(static_cast<int32_t>(i));
    const CoreType type = core_type_of_task(static_cast<int32_t>(i));
    remaining_[i] = static_cast<uint32_t>(preds + 1) | (static_cast<uint32_t>(type) << kTypeShift);
    if (preds == 0) ++at_release[type];
    // Each task: one dispatch and one completion; its predecessors resolve its edges, the last
    // of them cheaper.
    res_.scheduler_work +=
        dispatch_ + completion_ + (preds > 0 ? (preds - 1) * resolve_ + resolve_last_ : 0.0);
    ++root_tasks_off_[static_cast<size_t>(t.root) + 1];
    roots_in_order = roots_in_order && (i == 0 || g_.tasks[i - 1].root <= t.root);
  }
  for (int32_t r = 0; r < roots; ++r) root_tasks_off_[r + 1] += root_tasks_off_[r];
  if (!roots_in_order) {
    root_tasks_.resize(n);
    std::vector<int64_t> fill(root_tasks_off_.begin(), root_tasks_off_.end() - 1);
    for (size_t i = 0; i < n; ++i)
      root_tasks_[static_cast<size_t>(fill[static_cast<size_t>(g_.tasks[i].root)]++)] =
          static_cast<int32_t>(i);
  }
  return at_release;
}

void PyptoMachine::build_device_tasks() {
  const Hardware& hw = hw_;
  const int32_t roots = g_.num_roots();
  const auto stitch =
      static_cast<int32_t>(opt_.stitch_function_max_num > 0 ? opt_.stitch_function_max_num
                                                            : hw.control.stitch_function_max_num);
  double t = 0;
  // The scheduler threads shake hands with their cores while the control AICPU builds: no
  // device task is taken before both are done (sim/launch_cost.hpp).
  const double handshake = hw.ns_to_cycles(1000 * aicpu_handshake_us(g_, hw));
  device_of_root_.assign(static_cast<size_t>(roots), 0);
  for (int32_t first = 0; first < roots; first += stitch) {
    const int32_t last = std::min<int32_t>(roots, first + stitch);
    const double begin = t;
    for (int32_t r = first; r < last; ++r) {
      const double ntasks = static_cast<double>(root_tasks_off_[r + 1] - root_tasks_off_[r]);
      t += hw.ns_to_cycles(hw.control.root_build_ns + ntasks * hw.control.task_build_ns);
    }
    t += hw.ns_to_cycles(hw.control.device_task_submit_ns);
    const double release = std::max(t, handshake);
    if (first == 0) {
      res_.first_ready = release;
      res_.handshake_wait = release - t;
    }
    if (opt_.record_aicpu) res_.aicpu_spans.push_back({0, begin, t, -1, AicpuSpan::kBuild});
    const auto device_task = static_cast<int32_t>(device_first_root_.size());
    device_first_root_.push_back(first);
    device_last_root_.push_back(last);
    device_left_.push_back(root_tasks_off_[last] - root_tasks_off_[first]);
    for (int32_t r = first; r < last; ++r) device_of_root_[static_cast<size_t>(r)] = device_task;
    push(kControlLane, release, kBuilt, device_task);
  }
  device_built_.assign(device_first_root_.size(), false);
  res_.build_end = t;
}

double PyptoMachine::release_tail(const SimResult& r) const {
  if (r.tasks.empty()) return 0;
  // The task that ends last (the first listed among equal ends).
  size_t last = 0;
  for (size_t i = 1; i < r.tasks.size(); ++i)
    if (r.tasks[i].end > r.tasks[last].end) last = i;
  const TaskRecord& t = r.tasks[last];
  const Scheduler& s = sched_[static_cast<size_t>(cores_[static_cast<size_t>(t.core)].sched)];
  const double stopped = t.start + poll_ + static_cast<double>(s.ncores) * notify_;
  return std::max(gap_, stopped - t.end);
}

}  // namespace tilesim
