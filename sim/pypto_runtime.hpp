#pragma once
// The PyPTO (MPMD) runtime, after PyPTO's device runtime (machine/device/dynamic): a control AICPU
// and scheduler AICPUs.
//
// The control AICPU builds root functions one after another (control.root_build_ns +
// control.task_build_ns per task) and stitches up to control.stitch_function_max_num of them into
// a device task, whose tasks are released when it is submitted (control.device_task_submit_ns).
// Scheduler AICPUs each own a block of AIV and AIC cores and share one ready queue per core type.
// A scheduler is a serial server: it polls its cores one register read at a time
// (scheduler.poll_ns), and for each completion it sees it pays the completion cost, one resolve
// per successor edge, and one dispatch per task it hands out. Each core holds one running and one
// pending task.
//
// In PyPTO's terms: a Scheduler here is one scheduler thread's AiCoreManager (its block of cores,
// their running and pending task ids: two tasks per core register); the ready queues are the
// device task's readyAivCoreFunctionQue / readyAicCoreFunctionQue; dispatch() is its
// DispatchAiCoreTask. PyptoMachine is the part that does not depend on the ready order (cores,
// schedulers, the control AICPU's build schedule); PyptoRuntime<ReadyQueue> adds the scheduler
// threads' hot path for one ready-queue type (sim/ready_queue.hpp).

#include <algorithm>
#include <bit>
#include <cstdint>
#include <vector>

#include "sim/by_core_type.hpp"
#include "sim/ready_queue.hpp"
#include "sim/task_engine.hpp"

namespace tilesim {

// Scheduler AICPU threads for `hw`'s AIC cores (device_common.h CalcSchAicpuNumByBlockDim).
int64_t scheduler_threads(const Hardware& hw, const SimOptions& opt);
// The scheduler thread that manages core `index` of the `cores` of one type among `threads`:
// consecutive blocks, the first cores % threads threads one core larger (aicore_manager.h
// UpdateAiCoreBlockIndexSection; 910B4, 3 threads: AIC 7/7/6, AIV 14/13/13).
inline int64_t scheduler_of_core(int64_t index, int64_t cores, int64_t threads) {
  const int64_t size = cores / threads, larger = cores % threads;  // larger blocks come first
  const int64_t in_larger = larger * (size + 1);
  return index < in_larger ? index / (size + 1) : larger + (index - in_larger) / size;
}

class PyptoMachine : public TaskEngine {
 protected:
  // Event types and lanes (see EventQueue): each source pushes in nearly increasing time.
  static constexpr uint8_t kBuilt = TaskEngine::kFirstRuntimeEvent;  // id: device task
  static constexpr uint8_t kWake = kBuilt + 1;                       // id: scheduler
  static constexpr uint8_t kDetect = kWake + 1;                      // id: task
  enum Lane : int { kEndStartLane, kDispatchLane, kControlLane, kDetectLane };
  static constexpr int kDetectLanes = EventQueue::kLanes - kDetectLane;

  // Kept small: dispatch and task ends touch it.
  struct Core {
    int32_t running = -1;
    int32_t pending = -1;
    int32_t inflight = 0;  // dispatched and not yet seen complete by the scheduler (<= 2)
    int32_t sched = 0;
    int32_t bit = 0;  // position among its scheduler's cores of its type
    CoreType type = CoreType::kAiv;
    double pending_arrival = 0;
  };

  // A scheduler's cores of one type are consecutive global indices (block partition), in poll
  // order. Two bit sets over them, inflight == 0 and inflight == 1, replace scanning the cores.
  struct CoreGroup {
    int32_t base = 0;   // global index of bit 0
    int32_t words = 0;  // 64-bit words per set
    int32_t size = 0;   // cores
    size_t idle = 0;    // offset in bits_ of the inflight == 0 set
    size_t half = 0;    // offset of the inflight == 1 set
  };

  struct Scheduler {
    double free_at = 0;
    double wake_at = kInf;      // earliest queued wake-up
    ByCoreType<int64_t> empty;  // cores with nothing dispatched
    ByCoreType<int64_t> slots;  // free running + pending slots
    int64_t ncores = 0;
    ByCoreType<CoreGroup> group;
    std::vector<int32_t> backlog;  // seen completions (tasks), drained whole by each serve
  };

  PyptoMachine(const TaskGraph& g, std::vector<TaskCost> costs, const Hardware& hw,
               const SimOptions& opt);

  // Per task: its unresolved conditions (below) and core type; the tasks of each root. Returns,
  // per core type, how many tasks are ready as soon as their device task is released.
  ByCoreType<size_t> count_conditions();
  // The control AICPU: builds and stitches every device task and queues its release.
  void build_device_tasks();
  // Cycles from the last task's end to its core's release. On the last device task a scheduler
  // stops every core it manages, one register write each (scheduler.notify_ns), once it has seen
  // the last pending task's ACK, which arrives as that task starts (aicore_manager.h
  // SyncTaskFinish, BatchStopAllManagedCores); so the stops overlap the last task, and its core
  // reads its stop a turnaround (scheduler.task_gap_ns) after its end at the earliest.
  double release_tail(const SimResult& r) const;

  void set_bit(size_t set, int32_t bit) {
    bits_[set + static_cast<size_t>(bit >> 6)] |= uint64_t{1} << (bit & 63);
  }
  void clear_bit(size_t set, int32_t bit) {
    bits_[set + static_cast<size_t>(bit >> 6)] &= ~(uint64_t{1} << (bit & 63));
  }
  // Set bits below `bit`.
  int32_t bits_below(size_t set, int32_t bit) const {
    int32_t n = 0;
    for (int32_t w = 0; w < bit >> 6; ++w) n += ones(bits_[set + static_cast<size_t>(w)]);
    const uint64_t low = (uint64_t{1} << (bit & 63)) - 1;
    return n + ones(bits_[set + static_cast<size_t>(bit >> 6)] & low);
  }
  // std::popcount inline: the baseline x86-64 build has no popcnt instruction and would call
  // libgcc's __popcountdi2 once per task end.
  static int32_t ones(uint64_t x) {
    x -= (x >> 1) & 0x5555555555555555ULL;
    x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
    x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
    return static_cast<int32_t>((x * 0x0101010101010101ULL) >> 56);
  }
  // Lowest set bit of a non-empty set.
  int32_t first_bit(size_t set, int32_t words) const {
    for (int32_t w = 0;; ++w)
      if (const uint64_t x = bits_[set + static_cast<size_t>(w)]; x != 0 || w + 1 == words)
        return w * 64 + std::countr_zero(x);
  }

  std::vector<Core> cores_;
  std::vector<Scheduler> sched_;
  std::vector<uint64_t> bits_;       // CoreGroup bit sets
  ByCoreType<int64_t> empty_cores_;  // cores with nothing dispatched
  // A task becomes ready when its device task is released and its last predecessor resolved: per
  // task, unresolved predecessors + 1 until released (low bits) and its core type (top bit).
  static constexpr int kTypeShift = 31;
  static constexpr uint32_t kCountMask = (uint32_t{1} << kTypeShift) - 1;
  std::vector<uint32_t> remaining_;
  std::vector<int64_t> root_tasks_off_;
  std::vector<int32_t> root_tasks_;  // tasks by root; empty when numbered root by root
  std::vector<int32_t> device_first_root_, device_last_root_;
  std::vector<int64_t> device_left_;  // per device task: tasks not yet seen complete
  std::vector<int32_t> device_of_root_;
  std::vector<bool> device_built_;
  int32_t released_ = 0;  // device tasks released so far (in order)
  double dispatch_, resolve_, resolve_last_, completion_, poll_, notify_, completion_notify_, gap_;
};

template <ReadyQueuePolicy ReadyQueue>
class PyptoRuntime : public PyptoMachine {
 public:
  PyptoRuntime(const TaskGraph& g, std::vector<TaskCost> costs, const Hardware& hw,
               const SimOptions& opt)
      : PyptoMachine(g, std::move(costs), hw, opt) {}
  SimResult run() {
    SimResult r = TaskEngine::run(*this);
    r.tail = release_tail(r);
    return r;
  }

  void start() {
    const ByCoreType<size_t> at_release = count_conditions();
    for (const CoreType t : kCoreTypes) ready_[t].init(g_.num_roots(), at_release[t]);
    build_device_tasks();
  }

  void on_event(const Event& e, double t) {
    switch (e.type) {
      case kBuilt:
        device_built_[static_cast<size_t>(e.id)] = true;
        release_ready_device_tasks(t);
        break;
      case kWake:
        on_wake(e.id, t);
        break;
      case kDetect:
        on_detect(e.id, t);
        break;
    }
  }

  void on_task_start(int32_t /*task*/, double /*t*/) {}
  [[gnu::always_inline]] void on_task_end(int32_t task, double t) {
    auto& core = cores_[static_cast<size_t>(record(task).core)];
    core.running = -1;
    if (core.pending >= 0) {
      core.running = core.pending;
      core.pending = -1;
      push(kEndStartLane, std::max(t + gap_, core.pending_arrival), kStart, core.running);
    }
    // The owning scheduler sees the completion when its polling loop next reaches this core. The
    // loop reads only cores with a task outstanding (aicore_manager.h ResolveDepForAllAiCore),
    // this one among them: its period is one read per busy core.
    const double seen = t + completion_notify_;
    double td = seen;
    if (poll_ > 0) {
      const auto& sc = sched_[static_cast<size_t>(core.sched)];
      const auto& aiv = sc.group[CoreType::kAiv];
      const int64_t n = sc.ncores - sc.empty[CoreType::kAiv] - sc.empty[CoreType::kAic];
      const auto& grp = sc.group[core.type];
      int64_t rank = core.bit - bits_below(grp.idle, core.bit);  // busy cores before it
      if (core.type == CoreType::kAic) rank += aiv.size - sc.empty[CoreType::kAiv];
      const auto slot = static_cast<int64_t>(td / poll_);  // poll reads since time 0
      int64_t ahead = rank - slot % n;
      if (ahead < 0) ahead += n;  // slot >= 0, so this is the remainder modulo n
      td = static_cast<double>(slot + ahead) * poll_;
      if (td < seen) td += static_cast<double>(n) * poll_;
    }
    push(kDetectLane + core.sched % kDetectLanes, td, kDetect, task);
    // Its scheduler resolves its successors once it sees the end, many events later: their
    // list (a cache miss in serve, which waited on it) is fetched now.
    __builtin_prefetch(g_.succ_begin(task));
  }

 private:
  // Counts down one of `task`'s conditions; the last makes it ready at `t`.
  // Returns true when it was the last.
  bool resolve(int32_t task, double t) {
    const uint32_t left = --remaining_[static_cast<size_t>(task)];
    if ((left & kCountMask) != 0) return false;
    ready_[static_cast<CoreType>(left >> kTypeShift)].push(
        {task, t}, g_.tasks[static_cast<size_t>(task)].root);
    return true;
  }

  // Whether scheduler `sc` could hand out a ready task of type `t` now: to an empty core, or to a
  // pending slot once no scheduler has an empty core of that type left (those threads would take
  // it first).
  bool can_dispatch(const Scheduler& sc, CoreType t) const {
    return !ready_[t].empty() && (sc.empty[t] > 0 || (empty_cores_[t] == 0 && sc.slots[t] > 0));
  }
  bool any_ready() const {
    return !ready_[CoreType::kAiv].empty() || !ready_[CoreType::kAic].empty();
  }

  void wake(int32_t s, double t) {
    auto& sc = sched_[static_cast<size_t>(s)];
    const double when = std::max(t, sc.free_at);
    if (sc.wake_at <= when) return;
    sc.wake_at = when;
    push(kControlLane, when, kWake, s);
  }

  void wake_all(double t) {
    for (size_t s = 0; s < sched_.size(); ++s)
      if (can_dispatch(sched_[s], CoreType::kAiv) || can_dispatch(sched_[s], CoreType::kAic))
        wake(static_cast<int32_t>(s), t);
  }

  // Releases built device tasks in order, each once the one before has drained: a scheduler
  // runs one (non-parallel) device task at a time and waits for all its cores and for the other
  // schedulers before taking the next (device_sche.h RunTask: WAIT_TAIL_TASK_FINISH,
  // WAIT_ALL_SCH_FINISH).
  void release_ready_device_tasks(double t) {
    while (static_cast<size_t>(released_) < device_built_.size() &&
           device_built_[static_cast<size_t>(released_)] &&
           (released_ == 0 || device_left_[static_cast<size_t>(released_ - 1)] == 0))
      on_release(released_++, t);
  }

  void on_release(int32_t device_task, double t) {
    for (int32_t r = device_first_root_[static_cast<size_t>(device_task)];
         r < device_last_root_[static_cast<size_t>(device_task)]; ++r) {
      for (int64_t i = root_tasks_off_[r]; i < root_tasks_off_[r + 1]; ++i)
        resolve(root_tasks_.empty() ? static_cast<int32_t>(i) : root_tasks_[static_cast<size_t>(i)],
                t);
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

  void on_detect(int32_t task, double t) {
    const int32_t s = cores_[static_cast<size_t>(record(task).core)].sched;
    auto& sc = sched_[static_cast<size_t>(s)];
    sc.backlog.push_back(task);
    if (sc.free_at > t)  // busy: it handles the completion when free again
      wake(s, sc.free_at);
    else
      serve(s, t);
  }

  // The scheduler thread's turn (aicore_manager.h ResolveDepForAllAiCore): it frees the slots of
  // the completions it has seen (completion cost each), resolves their successors (one resolve
  // per edge), then hands ready tasks to free slots. (PyPTO's default mode refills freed slots
  // from the shared FIFO queue before resolving; under tilesim's oldest-root-first order that
  // would hand the slots to younger roots first, so the refill waits for the resolves: see
  // docs/model.md.)
  void serve(int32_t s, double t) {
    auto& sc = sched_[static_cast<size_t>(s)];
    const bool keep_spans = opt_.record_aicpu;
    double tt = t;
    bool drained = false;
    for (const int32_t task : sc.backlog) {
      auto& core = cores_[static_cast<size_t>(record(task).core)];
      const CoreType type = core.type;
      const auto& grp = sc.group[type];
      ++sc.slots[type];
      if (--core.inflight == 0) {
        ++sc.empty[type];
        ++empty_cores_[type];
        clear_bit(grp.half, core.bit);
        set_bit(grp.idle, core.bit);
      } else {
        set_bit(grp.half, core.bit);
      }
      if (keep_spans && completion_ > 0)
        res_.aicpu_spans.push_back({s + 1, tt, tt + completion_, task, AicpuSpan::kResolve});
      tt += completion_;
      const auto device_task =
          device_of_root_[static_cast<size_t>(g_.tasks[static_cast<size_t>(task)].root)];
      drained |= --device_left_[static_cast<size_t>(device_task)] == 0;
    }
    if (drained) release_ready_device_tasks(tt);
    for (const int32_t task : sc.backlog) {
      const double begin = tt;
      // A successor whose count is down to this edge is made ready without the atomic
      // decrement (aicore_manager.h ResolveDepDyn skips it when predCount is 1).
      for (const int32_t* succ = g_.succ_begin(task); succ != g_.succ_end(task); ++succ) {
        const bool last = (remaining_[static_cast<size_t>(*succ)] & kCountMask) == 1;
        tt += last ? resolve_last_ : resolve_;
        resolve(*succ, tt);
      }
      if (keep_spans && tt > begin)
        res_.aicpu_spans.push_back({s + 1, begin, tt, task, AicpuSpan::kResolve});
    }
    sc.backlog.clear();
    tt = dispatch(s, tt);
    sc.free_at = tt;
    // Others may take what is left: new ready tasks, or pending slots now that cores are taken.
    if (any_ready()) wake_all(tt);
  }

  // Hands ready tasks to free slots of this scheduler's cores, one dispatch cost each; returns the
  // time the thread is done. The target is the first core in poll order with nothing in flight,
  // else (no such core) the first with one task in flight.
  [[gnu::always_inline]] double dispatch(int32_t s, double t) {
    auto& sc = sched_[static_cast<size_t>(s)];
    const bool keep_spans = opt_.record_aicpu;
    double tt = t;
    for (const CoreType type : kCoreTypes) {
      auto& q = ready_[type];
      const auto& grp = sc.group[type];
      while (can_dispatch(sc, type)) {
        const bool to_empty = sc.empty[type] > 0;
        const int32_t bit = first_bit(to_empty ? grp.idle : grp.half, grp.words);
        const int32_t target = grp.base + bit;
        const auto [task, ready_at] = q.pop();
        // START reads its kind no earlier than a notify later: fetch it now, and the offsets of
        // its successors, which its end reads (on_task_end).
        __builtin_prefetch(&g_.tasks[static_cast<size_t>(task)]);
        g_.prefetch_succ_off(task);
        const double begin = std::max(tt, ready_at);
        tt = begin + dispatch_;
        if (keep_spans) res_.aicpu_spans.push_back({s + 1, begin, tt, task, AicpuSpan::kDispatch});
        const double arrival = tt + notify_;
        auto& core = cores_[static_cast<size_t>(target)];
        --sc.slots[type];
        if (core.inflight++ == 0) {
          --sc.empty[type];
          --empty_cores_[type];
          clear_bit(grp.idle, bit);
          set_bit(grp.half, bit);
        } else {
          clear_bit(grp.half, bit);
        }
        record(task).core = target;
        if (core.running < 0) {
          core.running = task;
          push(kDispatchLane, arrival, kStart, task);
        } else {
          core.pending = task;
          core.pending_arrival = arrival;
        }
      }
    }
    return tt;
  }

  ByCoreType<ReadyQueue> ready_;
};

}  // namespace tilesim
