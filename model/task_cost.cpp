#include "model/task_cost.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "model/cube_cost.hpp"
#include "model/dma_cost.hpp"
#include "model/small_vector.hpp"
#include "model/ub_budget.hpp"
#include "model/vector_cost.hpp"

namespace tilesim {

namespace {

constexpr double kNever = -std::numeric_limits<double>::infinity();

struct StageTimes {
  double load_occ = 0, load_lat = 0;
  double compute = 0, vec = 0, cube = 0, mte1 = 0, cube_fill = 0;
  double load_fill = 0;  // vector cycles the loads wait for (TileStep::load_fill)
  double store_occ = 0, store_lat = 0;
  double read_bytes = 0, write_bytes = 0, read_requests = 0;
  bool has_loads = false, has_consumer = false, has_stores = false;
};

StageTimes stage_times(const TileStep& step, int l0_depth, const Hardware& hw) {
  StageTimes s;
  for (const auto& op : step.loads) {
    s.load_occ += dma_occupancy_cycles(op, hw);
    s.read_bytes += dma_gm_bytes(op, hw);
    s.read_requests += dma_gm_requests(op, hw);
  }
  for (const auto& op : step.stores) {
    s.store_occ += dma_occupancy_cycles(op, hw);
    s.write_bytes += dma_gm_bytes(op, hw);
  }
  for (const auto& op : step.vec) s.vec += vector_cost(op, hw).cycles;
  for (const auto& op : step.load_fill) s.load_fill += vector_cost(op, hw).cycles;
  const CubeStage cube = cube_stage(step.cube, l0_depth, hw);
  s.cube = cube.mmad_busy;
  s.mte1 = cube.mte1_busy;
  s.cube_fill = cube.fill;
  s.compute = s.vec + cube.cycles;
  s.has_loads = !step.loads.empty();
  s.has_stores = !step.stores.empty();
  s.has_consumer = !step.vec.empty() || !step.cube.empty() || s.has_stores;
  s.load_lat = s.has_loads ? dma_latency_cycles(DmaDir::kRead, hw) : 0;
  s.store_lat = s.has_stores ? dma_latency_cycles(DmaDir::kWrite, hw) : 0;
  return s;
}

template <class T>
using Recent = SmallVector<T, 12>;
void pop_front(auto& q) {
  q.erase(q.begin());
}

// Pipeline state carried from one iteration to the next (and across steps).
struct PipeState {
  double load_free = 0, compute_free = 0, store_free = 0;
  double end = 0;                               // latest completion of anything
  double first_load = -1;                       // when the load pipe first starts
  double first_compute = -1, first_store = -1;  // when the compute and store pipes first start
  double mte2_busy = 0, mte3_busy = 0;          // busy-interval unions
  double mte2_mark = 0, mte3_mark = 0;          // end of the last counted busy interval
  // The last depth + 4 iterations (a few: inline, no allocation per task cost), oldest first.
  Recent<double> input_release;   // per past iteration: when its inputs were released
  Recent<double> output_release;  // per past iteration: when its outputs were released
  // Store busy time overlapped by loads issued before the store, and its union mark.
  double mixed = 0, mixed_mark = 0;
  Recent<std::pair<double, double>> stores;  // store intervals starting after the last load
};

// Adds [start, end) to a union of start-ordered intervals.
void add_busy(double& total, double& mark, double start, double end) {
  const double from = std::max(start, mark);
  if (end > from) total += end - from;
  mark = std::max(mark, end);
}

void run_iteration(PipeState& p, const StageTimes& s, size_t depth) {
  auto released = [&](const Recent<double>& q) {
    return q.size() >= depth ? q[q.size() - depth] : kNever;
  };
  double data_ready = p.load_free;
  double load_start = p.load_free;
  if (s.has_loads) {
    load_start = s.has_consumer ? std::max(p.load_free, released(p.input_release)) : p.load_free;
    if (s.load_fill > 0) {
      // The fill takes the vector pipe once the buffer is free; the copy starts when it is done.
      const double fill_start = std::max(p.compute_free, released(p.input_release));
      p.compute_free = fill_start + s.load_fill;
      load_start = std::max(load_start, p.compute_free);
    }
    if (p.first_load < 0) p.first_load = load_start;
    p.load_free = load_start + s.load_occ;
    data_ready = p.load_free + s.load_lat;
    add_busy(p.mte2_busy, p.mte2_mark, load_start, data_ready);
    // Stores that began before this load can no longer meet a load issued before them.
    while (!p.stores.empty() && p.stores.front().first <= load_start) pop_front(p.stores);
    for (const auto& [from, to] : p.stores)
      add_busy(p.mixed, p.mixed_mark, from, std::min(to, data_ready));
  }
  double compute_end = data_ready;
  if (s.has_consumer) {
    const double start = std::max({data_ready, p.compute_free, released(p.output_release)});
    compute_end = start + s.compute;
    p.compute_free = compute_end;
    if (p.first_compute < 0) p.first_compute = start;
  }
  double store_end = compute_end;
  if (s.has_stores) {
    const double start = std::max(compute_end, p.store_free);
    if (p.first_store < 0) p.first_store = start;
    p.store_free = start + s.store_occ;
    store_end = p.store_free + s.store_lat;
    add_busy(p.mte3_busy, p.mte3_mark, start, store_end);
    p.stores.emplace_back(start, store_end);
    if (p.stores.size() > depth + 4) pop_front(p.stores);
  }
  p.end = std::max({p.end, data_ready, compute_end, store_end});
  p.input_release.push_back(s.has_consumer ? compute_end : kNever);
  p.output_release.push_back(store_end);
  if (p.input_release.size() > depth + 4) pop_front(p.input_release);
  if (p.output_release.size() > depth + 4) pop_front(p.output_release);
}

// All times of the state, for detecting the periodic regime.
std::vector<double> snapshot(const PipeState& p) {
  std::vector<double> v = {p.load_free, p.compute_free, p.store_free, p.end,   p.mte2_busy,
                           p.mte3_busy, p.mte2_mark,    p.mte3_mark,  p.mixed, p.mixed_mark};
  v.insert(v.end(), p.input_release.begin(), p.input_release.end());
  v.insert(v.end(), p.output_release.begin(), p.output_release.end());
  for (const auto& [from, to] : p.stores) v.insert(v.end(), {from, to});
  return v;
}

void shift(PipeState& p, const std::vector<double>& delta, double times) {
  double* fields[] = {&p.load_free, &p.compute_free, &p.store_free, &p.end,   &p.mte2_busy,
                      &p.mte3_busy, &p.mte2_mark,    &p.mte3_mark,  &p.mixed, &p.mixed_mark};
  size_t i = 0;
  for (double* f : fields) *f += delta[i++] * times;
  for (double& x : p.input_release) x += delta[i++] * times;
  for (double& x : p.output_release) x += delta[i++] * times;
  for (auto& [from, to] : p.stores) {
    from += delta[i++] * times;
    to += delta[i++] * times;
  }
}

bool same_delta(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isinf(a[i]) || std::isinf(b[i])) {
      if (a[i] != b[i] && !(std::isnan(a[i]) && std::isnan(b[i]))) return false;
      continue;
    }
    if (std::abs(a[i] - b[i]) > 1e-9 * (1.0 + std::abs(a[i]))) return false;
  }
  return true;
}

std::vector<double> diff(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> d(a.size());
  for (size_t i = 0; i < a.size(); ++i)
    d[i] = (std::isinf(a[i]) && std::isinf(b[i])) ? 0 : a[i] - b[i];
  return d;
}

// Runs `n` identical iterations; once consecutive iterations shift the whole state by the same
// amount (the periodic regime of this max-plus recurrence), the rest is advanced in one jump.
void run_step(PipeState& p, const StageTimes& s, size_t depth, int64_t n) {
  const int64_t warmup = static_cast<int64_t>(4 * depth + 8);
  std::vector<std::vector<double>> hist;
  for (int64_t i = 0; i < n; ++i) {
    run_iteration(p, s, depth);
    if (i + 1 < warmup || i + 1 == n) continue;
    hist.push_back(snapshot(p));
    if (hist.size() < 3) continue;
    const auto d1 = diff(hist[hist.size() - 1], hist[hist.size() - 2]);
    const auto d0 = diff(hist[hist.size() - 2], hist[hist.size() - 3]);
    if (!same_delta(d1, d0)) continue;
    const int64_t remaining = n - (i + 1);
    shift(p, d1, static_cast<double>(remaining));
    return;
  }
}

}  // namespace

namespace {

// A Triton-Ascend compiled loop pays kernel.triton_op_cycles per operation of its body (each
// load, vector op, cube op and store) per iteration, on top of the pipelined time: the compiler
// brackets each operation with cross-pipe SetFlag/WaitFlag, and SetFlag holds its pipe until the
// operations before it complete, a cost multi-buffering does not hide.
double compiled_loop_cycles(const TaskKind& kind, const Hardware& hw) {
  if (!kind.compiler_multibuffer) return 0;
  double ops = 0;
  for (const auto& step : kind.steps) {
    if (step.repeat <= 0) continue;
    const auto vec_ops =
        std::count_if(step.vec.begin(), step.vec.end(), [](const VecOp& v) { return !v.same_op; });
    ops +=
        static_cast<double>(step.repeat) *
        static_cast<double>(step.loads.size() + step.load_fill.size() +
                            static_cast<size_t>(vec_ops) + step.cube.size() + step.stores.size());
  }
  return ops * hw.kernel.triton_op_cycles;
}

// The pipeline run of `kind` at buffer depth `depth` with the DMA figures of `hw`.
TaskCost run_kind(const TaskKind& kind, const Hardware& hw, int depth) {
  TaskCost cost;
  cost.depth = depth;
  PipeState p;
  double fill = -1;  // the cube pipeline's fill, paid by the task's first cube step
  for (const auto& step : kind.steps) {
    if (step.repeat <= 0) continue;
    // L0A / L0B rotate with the planned depth too (catlass: L1 and L0 stages alike).
    const StageTimes s = stage_times(step, std::min(kind.l0_depth, depth), hw);
    if (fill < 0 && !step.cube.empty()) fill = s.cube_fill;
    run_step(p, s, static_cast<size_t>(depth), step.repeat);
    const auto reps = static_cast<double>(step.repeat);
    cost.vec_busy += reps * (s.vec + s.load_fill);
    cost.cube_busy += reps * s.cube;
    cost.mte1_busy += reps * s.mte1;
    cost.gm_read_bytes += reps * s.read_bytes;
    cost.gm_read_requests += reps * s.read_requests;
    cost.gm_write_bytes += reps * s.write_bytes;
    cost.iterations += step.repeat;
  }
  const double extra = std::max(fill, 0.0) + compiled_loop_cycles(kind, hw);
  cost.cycles = p.end + extra;
  // The pipes' offsets for overlap with a neighbouring task (model/task_overlap.hpp); the cube
  // fill delays the first mmad, the compiled loop's flags every later stage.
  cost.stages.load_start = std::max(p.first_load, 0.0);
  cost.stages.load_done = p.load_free;
  cost.stages.load_ready = p.mte2_mark;
  cost.stages.compute_start =
      p.first_compute < 0 ? cost.cycles : p.first_compute + std::max(fill, 0.0);
  cost.stages.compute_done = p.first_compute < 0 ? 0 : p.compute_free + extra;
  cost.stages.store_start = p.first_store < 0 ? cost.cycles : p.first_store + extra;
  cost.stages.store_done = p.first_store < 0 ? 0 : p.store_free + extra;
  cost.stages.store_ready = p.first_store < 0 ? 0 : p.mte3_mark + extra;
  cost.mte2_busy = p.mte2_busy;
  cost.mte3_busy = p.mte3_busy;
  cost.mixed_share = p.mte3_busy > 0 ? std::min(1.0, p.mixed / p.mte3_busy) : 1.0;
  return cost;
}

}  // namespace

StagedRun staged_run_at_read_hit(const TaskCost& cost, double read_hit) {
  StagedRun r{at_read_hit(cost.cycles, cost.hit_cycles, read_hit), cost.stages};
  const double f = cost.cycles > 0 ? r.cycles / cost.cycles : 1;  // without the hit offsets
  for (double PipeStages::*x :
       {&PipeStages::load_done, &PipeStages::compute_start, &PipeStages::compute_done,
        &PipeStages::store_start, &PipeStages::store_done, &PipeStages::load_start,
        &PipeStages::load_ready, &PipeStages::store_ready})
    r.stages.*x = cost.hit_stages ? at_read_hit(cost.stages.*x, (*cost.hit_stages).*x, read_hit)
                                  : cost.stages.*x * f;
  return r;
}

TaskCost cost_task_kind(const TaskKind& kind, const Hardware& hw) {
  const int depth = plan_buffers(kind, hw).depth;
  TaskCost cost = run_kind(kind, hw, depth);
  // The same task when every GM read hits L2: its loads stream at the L2-hit rate.
  Hardware hit = hw;
  hit.dma.read.peak_bytes_per_cycle = hw.dma.read.l2_hit_bytes_per_cycle;
  hit.dma.l1.peak_bytes_per_cycle = hw.dma.l1.l2_hit_bytes_per_cycle;
  hit.dma.l1.nd2nz_bytes_per_cycle = hw.dma.l1.l2_hit_bytes_per_cycle;
  if (cost.gm_read_bytes > 0) {
    const TaskCost h = run_kind(kind, hit, depth);
    cost.hit_cycles = h.cycles;
    cost.hit_mte2_busy = h.mte2_busy;
    cost.hit_stages = h.stages;
  } else {
    cost.hit_cycles = cost.cycles;
    cost.hit_mte2_busy = cost.mte2_busy;
    cost.hit_stages = cost.stages;
  }
  // The slope of the run in the DMA latency: the recurrence is piecewise linear in it, so one
  // added cycle counts the memory waits on the critical path at the unloaded latency.
  if (cost.gm_bytes() > 0) {
    Hardware later = hw;
    later.dma.read.latency_cycles += 1;
    later.dma.write.latency_cycles += 1;
    cost.latency_exposures = std::max(0.0, run_kind(kind, later, depth).cycles - cost.cycles);
  }
  return cost;
}

}  // namespace tilesim
