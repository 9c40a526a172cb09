#pragma once
// Metrics of a simulated run, in PyPTO's vocabulary (definitions: shared/HARDWARE.md,
// "Per-core metrics PyPTO's swimlane tool prints"):
//  - gen_time_us: max(end) - min(start) over all tasks;
//  - per core: Execute task num; Core Total Work Time = last end - global first start;
//    Total Wait Time = sum(start - previous end on the core, the first measured from the global
//    first start); Wait Schedule Time = sum(start - max(previous end, latest predecessor end));
//    Wait Predecessor Time = Total Wait - Wait Schedule;
//  - per PSG (program subgraph kind): count, sum_dur, avg_dur;
//  - per pipe busy time; achieved GM bandwidth.

#include <cstdint>
#include <string>
#include <vector>

#include "model/hardware.hpp"
#include "model/task_graph.hpp"
#include "sim/simulator.hpp"

namespace tilesim {

struct CoreMetrics {
  int32_t core = 0;  // global index (AIV first, then AIC)
  CoreType type = CoreType::kAiv;
  int64_t execute_task_num = 0;
  double core_total_work_time_us = 0;
  double total_wait_time_us = 0;
  double wait_schedule_time_us = 0;
  double wait_predecessor_time_us = 0;
  double busy_us = 0;
  double mte2_us = 0, vec_us = 0, cube_us = 0, mte3_us = 0;
  double mte1_us = 0;  // AIC: L1 -> L0A / L0B loads
};

struct PsgMetrics {
  std::string name;
  int64_t count = 0;
  double sum_dur_us = 0;
  double avg_dur_us = 0;
};

struct PipeMetrics {
  std::string pipe;    // MTE2, V, CUBE, MTE3
  double mean_us = 0;  // mean over cores that ran at least one task using the pipe's core type
  double max_us = 0;
  double total_us = 0;
};

struct Metrics {
  double gen_time_us = 0;
  double kernel_time_us = 0;  // from launch to the kernel's end (sim/launch_cost.hpp)
  // kernel_time_us in six parts: launch_us + handshake_us + head_us (root_build_us +
  // dispatch_us) + gen_time_us + completion_us + end_us.
  double launch_us = 0;      // the kernel type's start
  double handshake_us = 0;   // PyPTO: the AICPU schedulers' hand-shake with their cores
  double head_us = 0;        // kernel start to the first task's start: root_build + dispatch
  double root_build_us = 0;  // PyPTO: the first device task's root and task builds and submit
  double dispatch_us = 0;    // the first task's dispatch (PyPTO) or block start (SPMD)
  double completion_us = 0;  // PyPTO: the last task's end to its core's release by the runtime
  double end_us = 0;         // the runtime seeing the last end to the kernel's end
  // PyPTO, from kernel start: the control AICPU building every device task (root_build_us is the
  // first's), and each scheduler thread's completions, resolves and dispatches (mean over threads).
  double aicpu_build_us = 0;
  double aicpu_schedule_us = 0;
  int64_t tasks = 0;
  int64_t edges = 0;
  int64_t root_functions = 0;
  double gm_read_bytes = 0;
  double gm_write_bytes = 0;
  double achieved_gm_gbps = 0;        // GM bytes / gen_time
  std::vector<CoreMetrics> per_core;  // cores that executed at least one task
  std::vector<PsgMetrics> psg;
  std::vector<PipeMetrics> pipes;
};

Metrics compute_metrics(const TaskGraph& graph, const SimResult& sim, const Hardware& hw);
// The mean busy time of one pipe ("MTE2", "V", "CUBE", "MTE3", "MTE1"); 0 when the run has none.
double pipe_mean_us(const Metrics& m, const std::string& pipe);
// The mean of one per-core figure over the cores that executed a task; 0 when none did.
double mean_per_core(const Metrics& m, double CoreMetrics::*field);
double mean_tasks_per_core(const Metrics& m);

// The scalar figures of a run by name, in the order every result lists them (run and sweep JSON,
// sweep CSV columns, calibration metrics): a new figure is added here and every writer has it.
// `group` nests it in JSON ("gm", "breakdown"; empty: top level) under `key`.
struct MetricField {
  const char* name;  // CSV column and lookup name
  const char* group;
  const char* key;
  bool integer;
  double (*get)(const Metrics&);
};
const std::vector<MetricField>& metric_fields();
// The value of the field named `name`; throws InternalError for an unknown name.
double metric_field_value(const Metrics& m, const std::string& name);

}  // namespace tilesim
