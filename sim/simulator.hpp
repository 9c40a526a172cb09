#pragma once
// Discrete-event simulation of a task graph on the machine.
//
// The runtime is a component chosen once per run (sim/pypto_runtime.hpp, sim/spmd_runtime.hpp) on
// a shared engine that executes tasks (sim/task_engine.hpp).
//
// kMpmd (PyPTO runtime): the control AICPU builds root functions one after another and stitches
// up to control.stitch_function_max_num of them into a device task, whose tasks are released when
// it is submitted. Scheduler AICPUs each own a block of AIV and AIC cores; they share one ready
// queue per core type. A scheduler is a serial server: it polls its cores one register read at a
// time, and for each completion it sees it pays the completion cost, one resolve per successor
// edge, and one dispatch per task it hands out. Each core holds one running and one pending task.
// kSpmd (Ascend C / Triton): pinned tasks start on their core at kernel launch; blocks take the
// first free core (sim/spmd_runtime.hpp).
//
// Running tasks share global-memory bandwidth (SharedBandwidth). Times are in core cycles.

#include <cstdint>
#include <string>
#include <vector>

#include "model/hardware.hpp"
#include "model/task_cost.hpp"
#include "model/task_graph.hpp"
#include "sim/l2_residency.hpp"

namespace tilesim {

// The order a ready queue hands out tasks: a policy of the runtime, set by the run config
// ("runtime": {"ready_order": ...}), not a fact of the hardware.
enum class ReadyOrder {
  kOldestRootFirst,  // the oldest root function (loop body) first, FIFO within a root
  kFifo,             // first ready, first dispatched
};
inline constexpr std::array<EnumName<ReadyOrder>, 2> kReadyOrderNames = {
    {{ReadyOrder::kOldestRootFirst, "oldest_root_first"}, {ReadyOrder::kFifo, "fifo"}}};
const char* ready_order_name(ReadyOrder order);

struct SimOptions {
  bool record_aicpu = false;  // keep AICPU activity spans (for traces)
  ReadyOrder ready_order = ReadyOrder::kOldestRootFirst;
  // What L2 holds at the start ("runtime": {"l2": "cold" | "warm" | "flushed"}, default cold;
  // sim/l2_residency.hpp).
  L2Start l2_start = L2Start::kCold;
  // PyPTO's runtime_options, by PyPTO's names ("runtime" in the run config); 0: the hardware
  // file's default (control.stitch_function_max_num; scheduler.max_threads).
  int64_t stitch_function_max_num = 0;
  int64_t launch_sched_aicpu_num = 0;
};

struct TaskRecord {
  int32_t core = -1;  // global core index: AIV cores first, then AIC cores
  // Writes' share of the memory traffic it waited on: of its HBM demand, or of its L2 traffic when
  // it draws nothing from HBM (sim/dma_attribution.hpp splits its shared-bandwidth delay by it).
  float write_share = 0;
  double start = 0;
  double end = 0;
  double pred_end = -1;  // latest predecessor end (-1: no predecessor)
};

struct AicpuSpan {
  int32_t aicpu;  // 0: control AICPU, 1..: scheduler threads
  double start, end;
  int32_t task;  // task dispatched or resolved, -1 for builds
  enum Kind : uint8_t { kBuild, kResolve, kDispatch } kind;
};

struct SimResult {
  std::vector<TaskRecord> tasks;
  std::vector<TaskCost> kind_costs;  // idle-machine cost of each task kind
  std::vector<CoreType> core_types;  // per global core index
  std::vector<AicpuSpan> aicpu_spans;
  int32_t scheduler_threads = 0;  // PyPTO runtime: scheduler AICPU threads (0: SPMD)
  double first_start = 0;
  double last_end = 0;  // cycles from kernel start, builds included
};

// Costs every kind (throws tilesim::Error on a capacity overflow) and simulates. Deterministic.
SimResult simulate(const TaskGraph& graph, const Hardware& hw, const SimOptions& options = {});
// Simulates with caller-supplied kind costs (for replaying fixed-latency graphs).
SimResult simulate_costed(const TaskGraph& graph, std::vector<TaskCost> kind_costs,
                          const Hardware& hw, const SimOptions& options = {});

}  // namespace tilesim
