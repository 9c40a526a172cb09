#pragma once
// The time of one task on an idle machine, from its tile steps.
//
// Each iteration of a tile step runs three stages on three pipes: loads (MTE2), compute (vector or
// cube) and stores (MTE3). With multi-buffering depth B, iteration i may load while iteration i-1
// computes, as long as iteration i-B has released its input buffers (after its compute) and
// iteration i-B has released its output buffers (after its store). Fill and drain are therefore
// exposed and a depth of 1 serialises load and compute. A load whose data nobody consumes (a pure
// copy-in) streams without waiting for buffers. A Triton-Ascend compiled kind
// (TaskKind::compiler_multibuffer) adds kernel.triton_op_cycles per operation per iteration.
// On a cube core the compute stage is the L0 pipeline of MTE1 loads and mmads
// (model/cube_cost.hpp), the loads are GM -> L1 and the stores leave L0C through the fixpipe.

#include <cstdint>
#include <optional>

#include "model/hardware.hpp"
#include "model/task_graph.hpp"

namespace tilesim {

// When each pipe of a task is busy, in cycles from its start on an idle machine: what a core
// that overlaps consecutive tasks (model/task_overlap.hpp) needs to know of each.
struct PipeStages {
  double load_done = 0;      // the load pipe's last copy-in issued (0: no loads)
  double compute_start = 0;  // the first vector / cube work starts (cycles: none)
  double compute_done = 0;   // the last ends (0: none), which releases the input buffers
  double store_start = 0;    // the first copy-out starts (cycles: none)
  double store_done = 0;     // the store pipe's last copy-out issued (0: no stores)
  // Where each DMA pipe has work outstanding (sim/dma_attribution.hpp counts it once per core).
  double load_start = 0;   // the first copy-in issued
  double load_ready = 0;   // the last copy-in's data arrived (0: no loads)
  double store_ready = 0;  // the last copy-out completed (0: no stores)
};

struct TaskCost {
  double cycles = 0;          // duration on an idle machine
  double hit_cycles = -1;     // the same when every GM read hits L2 (< 0: not known, as cycles)
  double mte2_busy = 0;       // cycles the load pipe has work outstanding
  double hit_mte2_busy = -1;  // the same when every GM read hits L2 (< 0: not known, as mte2_busy)
  double vec_busy = 0;        // vector pipe busy cycles
  double cube_busy = 0;       // cube pipe (mmad) busy cycles
  double mte1_busy = 0;       // MTE1 (L1 -> L0A / L0B) busy cycles
  double mte3_busy = 0;       // cycles the store pipe has work outstanding
  double gm_read_bytes = 0;   // through shared global memory (granule waste included)
  // GM read requests: each burst's pieces within one L2 line (dma.gm_granule_bytes), the unit L2
  // serves co-readers of a line in (Hardware::L2::same_line_request_ns).
  double gm_read_requests = 0;
  double gm_write_bytes = 0;
  int depth = 1;  // multi-buffering depth used
  PipeStages stages;
  // The same offsets when every GM read hits L2: loads at the L2-hit rate shift the pipes by more
  // than the whole run shrinks (none: not known, as stages).
  std::optional<PipeStages> hit_stages;
  int64_t iterations = 0;
  // Share of mte3_busy during which a load issued before that store is still in flight: loads and
  // stores mixed on the memory rather than in turn (sim/dma_attribution.hpp). 1 when not known.
  double mixed_share = 1;
  // Memory waits on the critical path: cycles gained per cycle of added DMA latency (a load or
  // store the task waits for rather than hides behind other work). A loaded HBM lengthens each
  // by its queueing delay (sim/shared_bandwidth.hpp).
  double latency_exposures = 0;
  double gm_bytes() const { return gm_read_bytes + gm_write_bytes; }
};

// A task figure when a `read_hit` share of its GM reads hits L2: between its all-miss value and
// its all-hit one (< 0: not known, as the all-miss), as the simulator runs the task.
inline double at_read_hit(double miss, double hit, double read_hit) {
  return miss + read_hit * ((hit < 0 ? miss : hit) - miss);
}

// A task's run and pipe offsets when a `read_hit` share of its GM reads hits L2: each between
// its all-miss and all-hit value (at_read_hit), as the simulator runs the task; without the
// all-hit offsets, the all-miss ones scaled to the run.
struct StagedRun {
  double cycles = 0;
  PipeStages stages;
};
StagedRun staged_run_at_read_hit(const TaskCost& cost, double read_hit);

// Costs one task kind; throws tilesim::Error when its buffers do not fit.
TaskCost cost_task_kind(const TaskKind& kind, const Hardware& hw);

}  // namespace tilesim
