#pragma once
// The part of the simulation every runtime shares: the machine's cores (global index: AIV cores
// first, then AIC cores), the event queue, and task execution. A task starts on a kStart event,
// runs as a flow of the shared global-memory bandwidth (sim/shared_bandwidth.hpp) with its HBM
// share set by L2 (sim/l2_residency.hpp), and its end is handed to the runtime.
//
// A runtime derives from TaskEngine (one object, so the hot loop reaches the engine's state and
// the runtime's through one pointer) and provides
//   start()                  queues the first events;
//   on_event(event, t)       handles an event of one of its own types (>= kFirstRuntimeEvent);
//   on_task_start(task, t)   reacts to a task's start (a core that overlaps its tasks starts
//                            the next from here);
//   on_task_end(task, t)     reacts to a task's end (its record's end is already set);
// and runs with TaskEngine::run(*this), a template: the event loop makes direct calls only.

#include <cstdint>
#include <limits>
#include <optional>
#include <unordered_map>
#include <vector>

#include "model/hardware.hpp"
#include "model/stop.hpp"
#include "model/task_cost.hpp"
#include "model/task_graph.hpp"
#include "model/task_overlap.hpp"
#include "sim/by_core_type.hpp"
#include "sim/event_queue.hpp"
#include "sim/l2_residency.hpp"
#include "sim/shared_bandwidth.hpp"
#include "sim/simulator.hpp"

namespace tilesim {

class TaskEngine {
 public:
  static constexpr double kInf = std::numeric_limits<double>::infinity();
  static constexpr uint8_t kStart = 0;  // event: the task `id` starts on its recorded core
  static constexpr uint8_t kFirstRuntimeEvent = 1;

  TaskEngine(const TaskGraph& g, std::vector<TaskCost> costs, const Hardware& hw,
             const SimOptions& opt);

  TaskRecord& record(int32_t task) { return res_.tasks[static_cast<size_t>(task)]; }
  CoreType core_type_of_task(int32_t task) const {
    return kinds_[static_cast<size_t>(g_.tasks[static_cast<size_t>(task)].kind)].core;
  }

  int32_t num_cores() const { return static_cast<int32_t>(res_.core_types.size()); }
  CoreType core_type(int32_t core) const { return res_.core_types[static_cast<size_t>(core)]; }
  int64_t cores_of(CoreType t) const { return count_[t]; }
  // The global index of core `index` of type `t`; throws naming the task graph when out of range.
  int32_t global_core(CoreType t, int32_t index) const;

  // Overlap of a core's consecutive tasks `prev` then `next` (model/task_overlap.hpp): the tasks
  // the core may hold at once (TaskKind::overlap of both kinds; 1: serial).
  int overlap_depth(int32_t prev, int32_t next) const {
    return std::min(g_.kinds[static_cast<size_t>(kind_of(prev))].overlap,
                    g_.kinds[static_cast<size_t>(kind_of(next))].overlap);
  }
  // The earliest start of `next` on `core` once the core's last task has started: its first pipe
  // free of the work the core's tasks have issued (model/task_overlap.hpp earliest_start), its
  // stages at the L2 hit share the task before started with (it has not started: its own is
  // not known) and stretched as that run was by queueing at L2.
  double overlap_start(int32_t core, int32_t next);
  int32_t kind_of(int32_t task) const { return g_.tasks[static_cast<size_t>(task)].kind; }

  [[gnu::always_inline]] void push(int lane, double t, uint8_t type, int32_t id) {
    events_.push(lane, t, type, id);
  }

  // The event loop; `runtime` is this engine.
  template <class Runtime>
  SimResult run(Runtime& runtime) {
    runtime.start();
    for (;;) {
      const double tf = bw_.next_finish();
      const double te = events_.next_time();
      if (tf <= te) {
        if (tf == kInf) break;  // then te is +inf too
        const int32_t task = bw_.finish_next();
        record(task).end = tf;
        ++finished_;
        check_stop();  // a cancelled sweep stops its running simulation
        runtime.on_task_end(task, tf);
        continue;
      }
      const Event e = events_.pop();
      if (e.type == kStart) {
        start_task(e.id, te);
        runtime.on_task_start(e.id, te);
      } else
        runtime.on_event(e, te);
    }
    return finish();
  }

 protected:
  struct KindInfo {
    CoreType core;
    int32_t flow_class;  // SharedBandwidth class of its run time
    double read_demand;  // GM read bytes per cycle of its idle-machine run
    double write_demand;
    double cycles;      // idle-machine run when every read misses L2
    double hit_cycles;  // ... when every read hits
    double waits;       // memory waits on its critical path per cycle of its run
    double load;        // cycles its load pipe is busy when every read misses
    double hit_load;    // ... when every read hits
    double requests;    // GM read requests (line pieces)
    bool overlaps;      // TaskKind::overlap > 1: its stages run on its core's pipe clock
  };
  // A core's pipes as its overlapping tasks leave them, and its last such task (-1: none).
  struct CorePipes {
    PipeClock clock;
    int32_t last = -1;
  };

  [[gnu::always_inline]] void start_task(int32_t task, double t) {
    record(task).start = t;
    res_.start_order.push_back(task);
    const auto& kind = kinds_[static_cast<size_t>(g_.tasks[static_cast<size_t>(task)].kind)];
    // Every byte passes through L2; only L2 misses and write-backs draw on HBM
    // (sim/l2_residency.hpp), a written byte costing write_weight_ read bytes.
    const std::optional<Traffic> hbm =
        l2_ ? l2_->on_start(task, t, kind.cycles, kind.hit_cycles) : std::nullopt;
    // Reads that hit L2 stream at the L2-hit rate: the run interpolates between the all-miss
    // and all-hit runs by the task's hit share; its byte rates scale with it.
    int32_t cls = kind.flow_class;
    double scale = 1;
    const double h = hbm ? hbm->read_hit : 0;
    if (hbm) res_.read_hit[static_cast<size_t>(task)] = static_cast<float>(h);
    const double unqueued = at_read_hit(kind.cycles, kind.hit_cycles, h);
    double run = unqueued;
    // Requests for lines other cores request at the same moment queue at L2, one served per
    // l2.same_line_request_ns: the load pipe's shared part takes at least its requests times
    // the readers in line, and the run at least the load pipe's time.
    if (hbm && hbm->shared_read > 0) {
      const double load = at_read_hit(kind.load, kind.hit_load, h);
      const double own = load * hbm->shared_read;
      const double queue = kind.requests * hbm->queued_reads * request_cycles_;
      run = std::max(run, load - own + std::max(own, queue));
    }
    if (kind.overlaps) run = run_on_core_pipes(task, t, h, unqueued > 0 ? run / unqueued : 1);
    if (run != kind.cycles && kind.cycles > 0) {
      cls = bw_.flow_class(SharedBandwidth::run_time(run));
      scale = run > 0 ? kind.cycles / run : 1;
    }
    if (l2_) run_stretch_[static_cast<size_t>(task)] = unqueued > 0 ? run / unqueued : 1;
    const double reads = kind.read_demand * scale, writes = kind.write_demand * scale;
    const double all = reads + writes;
    const double hbm_demand = hbm ? all * (hbm->read_hbm + hbm->write_hbm * write_weight_)
                                  : reads + writes * write_weight_;
    const double hbm_writes = hbm ? all * hbm->write_hbm * write_weight_ : writes * write_weight_;
    record(task).write_share = static_cast<float>(hbm_demand > 0 ? hbm_writes / hbm_demand
                                                  : all > 0      ? writes / all
                                                                 : 0.0);
    bw_.start_flow(task, t, cls, hbm_demand, all, hbm_demand * kind.waits * scale, reads);
  }
  // An overlapping task started at `t` on its core, its stages at read-hit share `h` stretched by
  // `stretch` (queueing at L2): each stage waits for its pipe (model/task_overlap.hpp
  // run_on_pipes); the core's pipe clock moves on. Returns its run.
  double run_on_core_pipes(int32_t task, double t, double h, double stretch);
  // Which of `prev` and `next`'s buffers fit beside each other (cached by kind pair).
  OverlapRoom room(int32_t prev_kind, int32_t next_kind);
  // Checks every task ran; fills the predecessor ends and the span.
  SimResult finish();

  const TaskGraph& g_;
  const Hardware& hw_;
  SimOptions opt_;
  SharedBandwidth bw_;
  double write_weight_;    // HBM read bandwidth / HBM write bandwidth
  double request_cycles_;  // l2.same_line_request_ns in cycles
  std::optional<L2Residency> l2_;
  SimResult res_;
  std::vector<KindInfo> kinds_;
  ByCoreType<int32_t> first_core_;
  ByCoreType<int64_t> count_;
  EventQueue events_;
  size_t finished_ = 0;
  std::unordered_map<uint64_t, OverlapRoom> overlap_rooms_;  // by kind pair
  std::vector<CorePipes> pipes_;  // per core, when some kind overlaps (else empty)
  // Per task: its run over the run its L2 hits alone give (above 1 when requests queue at L2);
  // kept only with L2 (without it the run is its kind's), which spares a fixed-latency replay
  // 8 B a task of fresh memory.
  std::vector<double> run_stretch_;
};

}  // namespace tilesim
