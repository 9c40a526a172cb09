#include "sim/simulator.hpp"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <queue>

#include "model/error.hpp"
#include "sim/dary_heap.hpp"
#include "sim/shared_bandwidth.hpp"

namespace tilesim {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

enum EventType : uint8_t { kRelease, kWake, kStart, kDetect };

struct Event {
  double t;
  uint64_t seq;
  EventType type;
  int32_t a;  // device task / scheduler / core
  int32_t b;  // task
};

struct EventBefore {
  bool operator()(const Event& a, const Event& b) const {
    return a.t != b.t ? a.t < b.t : a.seq < b.seq;
  }
};

struct Core {
  CoreType type;
  int32_t sched = 0;
  int32_t poll_slot = 0;  // position in its scheduler's polling loop
  int32_t running = -1;
  int32_t pending = -1;
  int32_t inflight = 0;  // dispatched and not yet seen complete by the scheduler (<= 2)
  double pending_arrival = 0;
  std::vector<int32_t> pinned;  // kSpmd: tasks in order
  size_t next_pinned = 0;
};

struct Scheduler {
  double free_at = 0;
  double wake_at = kInf;  // earliest queued wake-up
  std::vector<int32_t> cores;
  int64_t empty[2] = {0, 0};                        // cores with nothing dispatched, per type
  int64_t slots[2] = {0, 0};                        // free running + pending slots, per type
  std::deque<std::pair<int32_t, int32_t>> backlog;  // seen completions (core, task) to handle
};

class Engine {
 public:
  Engine(const TaskGraph& g, std::vector<TaskCost> costs, const Hardware& hw, const SimOptions& opt)
      : g_(g), hw_(hw), opt_(opt), bw_(hw.hbm_bytes_per_cycle()) {
    res_.kind_costs = std::move(costs);
    res_.tasks.assign(g.tasks.size(), TaskRecord{});
    remaining_.resize(g.tasks.size());
    for (size_t i = 0; i < g.tasks.size(); ++i) remaining_[i] = g.indegree(static_cast<int32_t>(i));
    released_.assign(g.tasks.size(), 0);
    ready_at_.assign(g.tasks.size(), 0);
    dispatch_ = hw.dispatch_cycles;
    resolve_ = hw.resolve_cycles;
    completion_ = hw.completion_cycles;
    poll_ = hw.ns_to_cycles(hw.poll_ns);
    notify_ = hw.ns_to_cycles(hw.notify_ns);
    completion_notify_ = hw.ns_to_cycles(hw.completion_notify_ns);
    gap_ = hw.ns_to_cycles(hw.task_gap_ns);
    build_cores();
  }

  SimResult run() {
    if (g_.runtime == RuntimeStyle::kSpmd)
      start_spmd();
    else
      start_mpmd();
    for (;;) {
      const double tf = bw_.next_finish();
      const double te = events_.empty() ? kInf : events_.top().t;
      if (tf == kInf && te == kInf) break;
      if (tf <= te) {
        on_task_end(bw_.finish_next(), tf);
        continue;
      }
      const Event e = events_.top();
      events_.pop();
      switch (e.type) {
        case kRelease:
          on_release(e.a, e.t);
          break;
        case kWake:
          on_wake(e.a, e.t);
          break;
        case kStart:
          on_start(e.a, e.b, e.t);
          break;
        case kDetect:
          on_detect(e.a, e.b, e.t);
          break;
      }
    }
    if (finished_ != g_.tasks.size())
      throw Error("task graph: " + std::to_string(g_.tasks.size() - finished_) +
                  " tasks never became ready (dependency cycle, or no core of their type)");
    res_.first_start = kInf;
    res_.last_end = 0;
    for (const auto& r : res_.tasks) {
      res_.first_start = std::min(res_.first_start, r.start);
      res_.last_end = std::max(res_.last_end, r.end);
    }
    if (g_.tasks.empty()) res_.first_start = 0;
    return std::move(res_);
  }

 private:
  void push(double t, EventType type, int32_t a, int32_t b = -1) {
    events_.push(Event{t, seq_++, type, a, b});
  }

  void build_cores() {
    const int64_t counts[2] = {hw_.aiv_cores, hw_.aic_cores};
    const CoreType types[2] = {CoreType::kAiv, CoreType::kAic};
    const int64_t nsched = g_.runtime == RuntimeStyle::kSpmd ? 1 : hw_.scheduler_threads;
    sched_.resize(static_cast<size_t>(nsched));
    for (int k = 0; k < 2; ++k) {
      first_core_[k] = static_cast<int32_t>(cores_.size());
      for (int64_t j = 0; j < counts[k]; ++j) {
        Core c;
        c.type = types[k];
        c.sched = static_cast<int32_t>(j * nsched / std::max<int64_t>(counts[k], 1));
        cores_.push_back(c);
        res_.core_types.push_back(types[k]);
        ++empty_cores_[k];
      }
    }
    for (size_t c = 0; c < cores_.size(); ++c) {
      auto& s = sched_[static_cast<size_t>(cores_[c].sched)];
      const int k = cores_[c].type == CoreType::kAiv ? 0 : 1;
      cores_[c].poll_slot = static_cast<int32_t>(s.cores.size());
      s.cores.push_back(static_cast<int32_t>(c));
      ++s.empty[k];
      s.slots[k] += 2;
    }
  }

  int32_t global_core(CoreType t, int32_t index) const {
    const int k = t == CoreType::kAiv ? 0 : 1;
    const int64_t n = k == 0 ? hw_.aiv_cores : hw_.aic_cores;
    if (index < 0 || index >= n)
      throw Error("task graph: task pinned to " + std::string(core_type_name(t)) + " core " +
                  std::to_string(index) + " but the hardware has " + std::to_string(n));
    return first_core_[k] + index;
  }

  // ---- kSpmd: pinned tasks start at launch, back to back on their core.
  void start_spmd() {
    for (size_t i = 0; i < g_.tasks.size(); ++i) {
      const auto& t = g_.tasks[i];
      if (t.pinned_core < 0)
        throw Error("task graph: SPMD task " + std::to_string(i) + " has no core");
      if (g_.indegree(static_cast<int32_t>(i)) != 0)
        throw Error("task graph: SPMD tasks cannot have dependencies");
      cores_[static_cast<size_t>(
                 global_core(g_.kinds[static_cast<size_t>(t.kind)].core, t.pinned_core))]
          .pinned.push_back(static_cast<int32_t>(i));
    }
    for (size_t c = 0; c < cores_.size(); ++c) start_next_pinned(static_cast<int32_t>(c), 0);
  }

  void start_next_pinned(int32_t c, double t) {
    auto& core = cores_[static_cast<size_t>(c)];
    if (core.next_pinned >= core.pinned.size()) return;
    const int32_t task = core.pinned[core.next_pinned++];
    core.running = task;
    push(t, kStart, c, task);
  }

  // ---- kMpmd: the control AICPU builds and stitches root functions.
  void start_mpmd() {
    const int32_t roots = g_.num_roots();
    root_tasks_off_.assign(static_cast<size_t>(roots) + 1, 0);
    for (const auto& t : g_.tasks) ++root_tasks_off_[static_cast<size_t>(t.root) + 1];
    for (int32_t r = 0; r < roots; ++r) root_tasks_off_[r + 1] += root_tasks_off_[r];
    root_tasks_.resize(g_.tasks.size());
    std::vector<int64_t> fill(root_tasks_off_.begin(), root_tasks_off_.end() - 1);
    for (size_t i = 0; i < g_.tasks.size(); ++i)
      root_tasks_[static_cast<size_t>(fill[static_cast<size_t>(g_.tasks[i].root)]++)] =
          static_cast<int32_t>(i);
    const int64_t stitch = hw_.stitch_function_max_num;
    double t = 0;
    for (int32_t first = 0; first < roots; first += static_cast<int32_t>(stitch)) {
      const int32_t last = std::min<int32_t>(roots, first + static_cast<int32_t>(stitch));
      const double begin = t;
      for (int32_t r = first; r < last; ++r) {
        const double ntasks = static_cast<double>(root_tasks_off_[r + 1] - root_tasks_off_[r]);
        t += hw_.ns_to_cycles(hw_.root_build_ns + ntasks * hw_.task_build_ns);
      }
      t += hw_.ns_to_cycles(hw_.device_task_submit_ns);
      if (opt_.record_aicpu) res_.aicpu_spans.push_back({0, begin, t, -1, AicpuSpan::kBuild});
      device_first_root_.push_back(first);
      device_last_root_.push_back(last);
      push(t, kRelease, static_cast<int32_t>(device_first_root_.size() - 1));
    }
  }

  void make_ready(int32_t task, double t) {
    ready_at_[static_cast<size_t>(task)] = t;
    const int k = g_.kinds[static_cast<size_t>(g_.tasks[static_cast<size_t>(task)].kind)].core ==
                          CoreType::kAiv
                      ? 0
                      : 1;
    ready_[k].push(task);
  }

  // Whether scheduler `s` could hand out a ready task now: to an empty core, or to a pending slot
  // once no scheduler has an empty core of that type left (those threads would take it first).
  bool can_dispatch(const Scheduler& sc) const {
    for (int k = 0; k < 2; ++k)
      if (!ready_[k].empty() && (sc.empty[k] > 0 || (empty_cores_[k] == 0 && sc.slots[k] > 0)))
        return true;
    return false;
  }

  void wake(int32_t s, double t) {
    auto& sc = sched_[static_cast<size_t>(s)];
    const double when = std::max(t, sc.free_at);
    if (sc.wake_at <= when) return;
    sc.wake_at = when;
    push(when, kWake, s);
  }

  void wake_all(double t) {
    for (size_t s = 0; s < sched_.size(); ++s)
      if (can_dispatch(sched_[s])) wake(static_cast<int32_t>(s), t);
  }

  void on_release(int32_t device_task, double t) {
    for (int32_t r = device_first_root_[static_cast<size_t>(device_task)];
         r < device_last_root_[static_cast<size_t>(device_task)]; ++r) {
      for (int64_t i = root_tasks_off_[r]; i < root_tasks_off_[r + 1]; ++i) {
        const int32_t task = root_tasks_[static_cast<size_t>(i)];
        released_[static_cast<size_t>(task)] = 1;
        if (remaining_[static_cast<size_t>(task)] == 0) make_ready(task, t);
      }
    }
    wake_all(t);
  }

  void on_wake(int32_t s, double t) {
    auto& sc = sched_[static_cast<size_t>(s)];
    if (sc.wake_at == t) sc.wake_at = kInf;
    if (sc.free_at > t) {
      wake(s, sc.free_at);
      return;
    }
    serve(s, t);
  }

  // The scheduler thread's turn: handle the completions it has seen, in order (completion cost,
  // one resolve per successor edge), then hand ready tasks to free slots of its cores.
  void serve(int32_t s, double t) {
    auto& sc = sched_[static_cast<size_t>(s)];
    double tt = t;
    while (!sc.backlog.empty()) {
      const auto [c, task] = sc.backlog.front();
      sc.backlog.pop_front();
      const double begin = tt;
      auto& core = cores_[static_cast<size_t>(c)];
      const int k = core.type == CoreType::kAiv ? 0 : 1;
      ++sc.slots[k];
      if (--core.inflight == 0) {
        ++sc.empty[k];
        ++empty_cores_[k];
      }
      tt += completion_;
      const double end = res_.tasks[static_cast<size_t>(task)].end;
      for (const int32_t* succ = g_.succ_begin(task); succ != g_.succ_end(task); ++succ) {
        tt += resolve_;
        auto& pe = res_.tasks[static_cast<size_t>(*succ)].pred_end;
        pe = std::max(pe, end);
        if (--remaining_[static_cast<size_t>(*succ)] == 0 && released_[static_cast<size_t>(*succ)])
          make_ready(*succ, tt);
      }
      if (opt_.record_aicpu)
        res_.aicpu_spans.push_back({s + 1, begin, tt, task, AicpuSpan::kResolve});
    }
    tt = dispatch(s, tt);
    sc.free_at = tt;
    // Others may take what is left: new ready tasks, or pending slots now that cores are taken.
    if (!ready_[0].empty() || !ready_[1].empty()) wake_all(tt);
  }

  // Hands ready tasks to free slots of this scheduler's cores, one dispatch cost each; returns the
  // time the thread is done.
  double dispatch(int32_t s, double t) {
    auto& sc = sched_[static_cast<size_t>(s)];
    double tt = t;
    for (int k = 0; k < 2; ++k) {
      auto& q = ready_[k];
      const CoreType type = k == 0 ? CoreType::kAiv : CoreType::kAic;
      while (!q.empty() && (sc.empty[k] > 0 || (empty_cores_[k] == 0 && sc.slots[k] > 0))) {
        int32_t target = -1;
        for (int32_t c : sc.cores) {
          const auto& core = cores_[static_cast<size_t>(c)];
          if (core.type != type || core.inflight >= 2) continue;
          if (core.inflight == 0) {
            target = c;
            break;
          }
          if (target < 0 && sc.empty[k] == 0) target = c;
        }
        const int32_t task = q.front();
        q.pop();
        const double begin = std::max(tt, ready_at_[static_cast<size_t>(task)]);
        tt = begin + dispatch_;
        if (opt_.record_aicpu)
          res_.aicpu_spans.push_back({s + 1, begin, tt, task, AicpuSpan::kDispatch});
        const double arrival = tt + notify_;
        auto& core = cores_[static_cast<size_t>(target)];
        --sc.slots[k];
        if (core.inflight++ == 0) {
          --sc.empty[k];
          --empty_cores_[k];
        }
        if (core.running < 0) {
          core.running = task;
          push(arrival, kStart, target, task);
        } else {
          core.pending = task;
          core.pending_arrival = arrival;
        }
      }
    }
    return tt;
  }

  void on_start(int32_t c, int32_t task, double t) {
    auto& rec = res_.tasks[static_cast<size_t>(task)];
    rec.core = c;
    rec.start = t;
    const auto& cost =
        res_.kind_costs[static_cast<size_t>(g_.tasks[static_cast<size_t>(task)].kind)];
    bw_.start(task, t, cost.cycles, cost.gm_bytes());
  }

  void on_task_end(int32_t task, double t) {
    auto& rec = res_.tasks[static_cast<size_t>(task)];
    rec.end = t;
    ++finished_;
    const int32_t c = rec.core;
    auto& core = cores_[static_cast<size_t>(c)];
    core.running = -1;
    if (g_.runtime == RuntimeStyle::kSpmd) {
      start_next_pinned(c, t + gap_);
      return;
    }
    if (core.pending >= 0) {
      core.running = core.pending;
      core.pending = -1;
      push(std::max(t + gap_, core.pending_arrival), kStart, c, core.running);
    }
    // The owning scheduler sees the completion when its polling loop next reaches this core.
    const auto& sc = sched_[static_cast<size_t>(core.sched)];
    double td = t + completion_notify_;
    if (poll_ > 0) {
      const auto n = static_cast<int64_t>(sc.cores.size());
      const auto slot = static_cast<int64_t>(td / poll_);  // poll reads since time 0
      const int64_t ahead = ((core.poll_slot - slot % n) % n + n) % n;
      td = static_cast<double>(slot + ahead) * poll_;
      if (td < t + completion_notify_) td += static_cast<double>(n) * poll_;
    }
    push(td, kDetect, c, task);
  }

  void on_detect(int32_t c, int32_t task, double t) {
    const int32_t s = cores_[static_cast<size_t>(c)].sched;
    auto& sc = sched_[static_cast<size_t>(s)];
    sc.backlog.emplace_back(c, task);
    if (sc.free_at > t)  // busy: it handles the completion when free again
      wake(s, sc.free_at);
    else
      serve(s, t);
  }

  const TaskGraph& g_;
  const Hardware& hw_;
  SimOptions opt_;
  SharedBandwidth bw_;
  SimResult res_;
  std::vector<Core> cores_;
  std::vector<Scheduler> sched_;
  int32_t first_core_[2] = {0, 0};
  int64_t empty_cores_[2] = {0, 0};  // cores with nothing dispatched, per type
  std::queue<int32_t> ready_[2];
  std::vector<int32_t> remaining_;
  std::vector<uint8_t> released_;
  std::vector<double> ready_at_;
  std::vector<int64_t> root_tasks_off_;
  std::vector<int32_t> root_tasks_;
  std::vector<int32_t> device_first_root_, device_last_root_;
  DaryHeap<Event, EventBefore> events_;
  uint64_t seq_ = 0;
  size_t finished_ = 0;
  double dispatch_, resolve_, completion_, poll_, notify_, completion_notify_, gap_;
};

}  // namespace

SimResult simulate_costed(const TaskGraph& graph, std::vector<TaskCost> kind_costs,
                          const Hardware& hw, const SimOptions& options) {
  if (!graph.finalized()) throw Error("task graph: simulate() needs a finalized graph");
  if (kind_costs.size() != graph.kinds.size())
    throw Error("task graph: one cost per task kind is required");
  Engine engine(graph, std::move(kind_costs), hw, options);
  return engine.run();
}

SimResult simulate(const TaskGraph& graph, const Hardware& hw, const SimOptions& options) {
  std::vector<TaskCost> costs;
  costs.reserve(graph.kinds.size());
  for (const auto& k : graph.kinds) costs.push_back(cost_task_kind(k, hw));
  return simulate_costed(graph, std::move(costs), hw, options);
}

}  // namespace tilesim
