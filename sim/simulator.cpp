#include "sim/simulator.hpp"

#include "model/error.hpp"
#include "sim/pypto_runtime.hpp"
#include "sim/ready_queue.hpp"
#include "sim/spmd_runtime.hpp"
#include "sim/task_engine.hpp"

namespace tilesim {

namespace {

template <class Runtime>
SimResult run(const TaskGraph& graph, std::vector<TaskCost> kind_costs, const Hardware& hw,
              const SimOptions& options) {
  Runtime runtime(graph, std::move(kind_costs), hw, options);
  return runtime.run();
}

}  // namespace

const char* ready_order_name(ReadyOrder order) {
  return enum_name(kReadyOrderNames, order);
}

SimResult simulate_costed(const TaskGraph& graph, std::vector<TaskCost> kind_costs,
                          const Hardware& hw, const SimOptions& options) {
  if (!graph.finalized()) throw InternalError("task graph: simulate() needs a finalized graph");
  if (kind_costs.size() != graph.kinds.size())
    throw InternalError("task graph: one cost per task kind is required");
  // The runtime and its ready order are chosen here, once: each is a type, so the event loop is
  // compiled for it. With one root function the two orders agree and the FIFO is cheaper.
  if (graph.runtime == RuntimeStyle::kSpmd)
    return run<SpmdRuntime>(graph, std::move(kind_costs), hw, options);
  if (options.ready_order == ReadyOrder::kOldestRootFirst && graph.num_roots() > 1)
    return run<PyptoRuntime<OldestRootFirstReadyQueue>>(graph, std::move(kind_costs), hw, options);
  return run<PyptoRuntime<FifoReadyQueue>>(graph, std::move(kind_costs), hw, options);
}

SimResult simulate(const TaskGraph& graph, const Hardware& hw, const SimOptions& options) {
  std::vector<TaskCost> costs;
  costs.reserve(graph.kinds.size());
  for (const auto& k : graph.kinds) costs.push_back(cost_task_kind(k, hw));
  return simulate_costed(graph, std::move(costs), hw, options);
}

}  // namespace tilesim
