#pragma once
// PyPTO's fixed-latency task graph: a JSON array of task objects
//
//   {"taskId": 3, "funcName": "matmul", "coreType": "AIC", "execTime": 9250,
//    "remainingPredecessors": 2, "successors": [4, 5]}
//
// `execTime` is the task's execution time in cycles; tasks sharing a `funcName` are one program
// subgraph (PSG) kind. `predecessors`, `semanticLabel` and any other key are informative and
// ignored. tilesim reads it to replay the graph on its runtime model (every task takes its
// execTime; scheduling, dispatch, resolve and polling come from the hardware description) and
// writes it to hand a simulated kernel to PyPTO's cost model.
//
// Reading (decisions, also in docs/pypto-graphs.md):
//  - Tasks keep the array's order: it is the order the control AICPU releases them in.
//  - Tasks with equal (funcName, coreType, execTime) share one TaskKind; the PSG is funcName.
//  - coreType AIV and AIC run on cores of that type. MIXAICORE runs on an AIC core (the cube core
//    of a cluster; its vector partners are not reserved). HUB is a bookkeeping task: it runs for
//    zero cycles on an AIV core but still goes through the scheduler (dispatch, completion,
//    resolve of its successors); a non-zero HUB execTime is ignored with a warning.
//  - Root functions: the optional key "tilesimRoot" (written by tilesim's export) names the root
//    function (loop body) of a task; without it, tasks of one PyPTO device task (the same
//    taskId >> 32) form one root function, in increasing order.
//  - Errors (one line naming the file, the element index and taskId, and what is wrong): not an
//    array, an element that is not an object, a missing or mistyped required key, an unknown
//    coreType, a negative or non-finite execTime, a duplicate taskId, a successor that names an
//    unknown taskId or the task itself, a dependency cycle, an empty graph.
//  - Warnings (the graph still runs): remainingPredecessors differing from the in-degree the
//    successor lists give (the successor lists are what the scheduler resolves), a successor
//    listed twice (counted once), a non-zero HUB execTime.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/task_cost.hpp"
#include "model/task_graph.hpp"
#include "sim/simulator.hpp"

namespace tilesim {

// Bounds on the times a graph brings (cycles): one task at most 1e12 (~9 minutes at 1.85 GHz),
// all tasks together at most 2^52, so every time the simulator adds stays exact.
inline constexpr double kMaxTaskCycles = 1e12;
inline constexpr double kMaxGraphCycles = 4503599627370496.0;  // 2^52

struct PyptoGraph {
  TaskGraph graph;                    // finalized, kMpmd
  std::vector<TaskCost> kind_costs;   // cycles = execTime, no GM traffic
  std::vector<int64_t> task_ids;      // PyPTO taskId of each tilesim task
  std::vector<std::string> warnings;  // one line each
  int64_t mixaicore_tasks = 0;        // run on AIC cores
  int64_t hub_tasks = 0;              // zero-duration tasks on AIV cores
};

// Read with simdjson On-Demand, a batch of tasks at a time (tools/formats/json_stream.hpp), the
// batches parsed on `threads` threads (0: every core; the graph and any error are the same for
// every count), each joined in file order straight into the graph's columns: no DOM, no copy of
// the tasks, so a million-task graph takes ~70 MB while it is read (~52 B a task once built). At
// most max_tasks() tasks (--max-tasks).
PyptoGraph load_pypto_graph(const std::filesystem::path& file, int threads = 0);
PyptoGraph pypto_graph_from_text(std::string text, const std::string& origin, int threads = 0);
PyptoGraph pypto_graph_from_json(const nlohmann::json& doc, const std::string& origin);

// The simulated graph in the fixed-latency format: taskId = task index, funcName = PSG name,
// coreType AIV/AIC, execTime = the task's simulated duration (end - start, so shared-bandwidth
// slowdown is included; a number, an integer when the duration is whole cycles), successors and
// remainingPredecessors from the
// graph, semanticLabel = the kind's label, tilesimRoot = its root function.
nlohmann::ordered_json pypto_graph_to_json(const TaskGraph& graph, const SimResult& sim);
void write_pypto_graph(const std::filesystem::path& file, const TaskGraph& graph,
                       const SimResult& sim);

}  // namespace tilesim
