#pragma once
// A ready-queue policy as the simulator runs it: the PyPTO runtime compiled for its queue type,
// chosen once per simulation, so the per-task queue operations are direct calls. A policy defined
// outside sim/ready_queue.hpp (a test, an experiment) is its class plus one line:
//   static const ReadyOrder kLifo = register_ready_order<LifoReadyQueue>();
// after which its kName is a run config's "ready_order" and SimOptions::ready_order = kLifo runs
// it.

#include <utility>
#include <vector>

#include "sim/pypto_runtime.hpp"
#include "sim/ready_queue.hpp"
#include "sim/simulator.hpp"

namespace tilesim {

// Simulates a graph simulate_costed has checked (a PyPTO graph) with ready queues of type Q.
template <ReadyQueuePolicy Q>
SimResult simulate_ready_queue(const TaskGraph& graph, std::vector<TaskCost> kind_costs,
                               const Hardware& hw, const SimOptions& options) {
  if constexpr (requires { Q::kFifoWithOneRoot; })
    if (Q::kFifoWithOneRoot && graph.num_roots() <= 1)  // the same order, and FIFO is cheaper
      return simulate_ready_queue<FifoReadyQueue>(graph, std::move(kind_costs), hw, options);
  PyptoRuntime<Q> runtime(graph, std::move(kind_costs), hw, options);
  return runtime.run();
}

// Registers Q under its kName (sim/simulator.hpp register_ready_order).
template <ReadyQueuePolicy Q>
ReadyOrder register_ready_order() {
  return register_ready_order(Q::kName, &simulate_ready_queue<Q>);
}

}  // namespace tilesim
