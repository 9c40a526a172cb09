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

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/enum_names.hpp"
#include "model/hardware.hpp"
#include "model/task_cost.hpp"
#include "model/task_graph.hpp"
#include "sim/l2_residency.hpp"
#include "sim/ready_queue.hpp"

namespace tilesim {

// The order a ready queue hands out tasks: a policy of the runtime, set by the run config
// ("runtime": {"ready_order": ...}), not a fact of the hardware. Each policy is a type
// (ReadyQueuePolicy, sim/ready_queue.hpp); a ReadyOrder is its place among the policies: the
// built-ins (BuiltinReadyQueues, which the enumerators name) first, then those registered
// (register_ready_order) in the order they were.
enum class ReadyOrder : int32_t {
  kOldestRootFirst,  // the oldest root function (loop body) first, FIFO within a root
  kFifo,             // first ready, first dispatched
};

// The built-in policies' names, read from their types.
template <class... Q>
constexpr std::array<EnumName<ReadyOrder>, sizeof...(Q)> ready_order_table(ReadyQueueList<Q...>) {
  const std::array<std::string_view, sizeof...(Q)> names = {Q::kName...};
  std::array<EnumName<ReadyOrder>, sizeof...(Q)> table{};
  for (size_t i = 0; i < names.size(); ++i) table[i] = {static_cast<ReadyOrder>(i), names[i]};
  return table;
}
inline constexpr auto kReadyOrderNames = ready_order_table(BuiltinReadyQueues{});
static_assert(std::string_view(enum_name(kReadyOrderNames, ReadyOrder::kOldestRootFirst)) ==
                  OldestRootFirstReadyQueue::kName &&
              std::string_view(enum_name(kReadyOrderNames, ReadyOrder::kFifo)) ==
                  FifoReadyQueue::kName);

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
  // Each task's start in an earlier pass of the same graph: co-readers of a block are then counted
  // on both sides (sim/l2_residency.hpp). simulate_costed sets it for its second pass.
  std::vector<double> prior_starts;
  // Set SimResult::l2_co_readers from this pass (simulate_costed's first of two).
  bool find_co_readers = false;
  // The graph's L2 blocks, when the caller has them (simulate_costed builds them once for the
  // check and both passes); null: each pass builds its own.
  std::shared_ptr<const L2Blocks> l2_blocks;
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
  // Per task: the share of its GM reads that hit L2, which sets its idle-machine run between its
  // kind's all-miss and all-hit runs (empty: no L2 model, every read misses).
  std::vector<float> read_hit;
  double hit_share(size_t task) const { return read_hit.empty() ? 0.0 : read_hit[task]; }
  // Per task: cycles of its span its stages waited for its core's pipes, busy with the tasks
  // before it (model/task_overlap.hpp run_on_pipes; empty: no task overlaps another).
  std::vector<float> pipe_wait;
  double pipe_wait_of(size_t task) const { return pipe_wait.empty() ? 0.0 : pipe_wait[task]; }
  // The tasks in the order they started (the simulator's; empty for a result built otherwise):
  // compute_metrics walks each core's tasks in start order from it instead of sorting them.
  std::vector<int32_t> start_order;
  std::vector<TaskCost> kind_costs;  // idle-machine cost of each task kind
  std::vector<CoreType> core_types;  // per global core index
  std::vector<AicpuSpan> aicpu_spans;
  int32_t scheduler_threads = 0;  // PyPTO runtime: scheduler AICPU threads (0: SPMD)
  double first_ready =
      0;  // cycles: the first task could be dispatched (PyPTO: built, submitted, hand-shaken)
  // PyPTO: cycles of first_ready the scheduler threads' hand-shake adds to the first device
  // task's build (0 when the build outlasts it, sim/launch_cost.hpp).
  double handshake_wait = 0;
  double first_start = 0;
  double last_end = 0;  // cycles from kernel start, builds included
  double tail = 0;      // cycles from last_end to the runtime releasing the last core (PyPTO)
  // PyPTO: the control AICPU's builds of every device task (they run back to back from the
  // kernel's start), and the scheduler threads' completions, resolves and dispatches, in cycles
  // summed over the threads (polling apart): what the zones name when waits grow.
  double build_end = 0;
  double scheduler_work = 0;
  // A pass without prior starts: whether a read of a shared block may have a co-reader
  // (L2Residency::saw_co_readers); when not, a second pass would repeat this one.
  bool l2_co_readers = true;
};

// Every ready-queue policy, built-in or registered: the run config's names and the dispatch of
// simulate() read the same list.
//   ready_order_name: the policy's name ("?" for a value that is none)
//   ready_order_names: every name, in ReadyOrder order
//   ready_order_named: the policy of a name, if any
const char* ready_order_name(ReadyOrder order);
std::vector<std::string> ready_order_names();
std::optional<ReadyOrder> ready_order_named(std::string_view name);

// What simulates a checked PyPTO graph under one policy (simulate_ready_queue<Q>,
// sim/ready_orders.hpp).
using ReadyOrderRun = SimResult (*)(const TaskGraph& graph, std::vector<TaskCost> kind_costs,
                                    const Hardware& hw, const SimOptions& options);
// Adds a policy after those there are, returning its ReadyOrder; its name is then a run config's
// ready_order. A name taken is an InternalError. Register before simulating with it (a static
// initialiser: register_ready_order<Q>() in sim/ready_orders.hpp).
ReadyOrder register_ready_order(std::string_view name, ReadyOrderRun run);

// Costs every kind (throws tilesim::Error on a capacity overflow) and simulates. Deterministic.
SimResult simulate(const TaskGraph& graph, const Hardware& hw, const SimOptions& options = {});
// Simulates with caller-supplied kind costs (for replaying fixed-latency graphs).
SimResult simulate_costed(const TaskGraph& graph, std::vector<TaskCost> kind_costs,
                          const Hardware& hw, const SimOptions& options = {});

}  // namespace tilesim
