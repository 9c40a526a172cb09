#include "sim/task_engine.hpp"

#include <algorithm>
#include <string>

#include "model/error.hpp"

namespace tilesim {

TaskEngine::TaskEngine(const TaskGraph& g, std::vector<TaskCost> costs, const Hardware& hw,
                       const SimOptions& opt)
    : g_(g),
      hw_(hw),
      opt_(opt),
      bw_(hw.hbm_bytes_per_cycle(), hw.l2_bytes_per_cycle(), hw.hbm_queue_cycles(),
          hw.l2_read_bytes_per_cycle()),
      write_weight_(hw.gm.hbm_bandwidth_gbps / hw.gm.hbm_write_bandwidth_gbps),
      request_cycles_(hw.ns_to_cycles(hw.l2.same_line_request_ns)) {
  res_.kind_costs = std::move(costs);
  res_.tasks.assign(g.tasks.size(), TaskRecord{});
  res_.start_order.reserve(g.tasks.size());
  for (size_t i = 0; i < g.kinds.size(); ++i) {
    const auto& cost = res_.kind_costs[i];
    kinds_.push_back({g.kinds[i].core, bw_.flow_class(SharedBandwidth::run_time(cost.cycles)),
                      SharedBandwidth::demand_of(cost.cycles, cost.gm_read_bytes),
                      SharedBandwidth::demand_of(cost.cycles, cost.gm_write_bytes), cost.cycles,
                      cost.hit_cycles < 0 ? cost.cycles : cost.hit_cycles,
                      SharedBandwidth::demand_of(cost.cycles, cost.latency_exposures),
                      cost.mte2_busy, cost.hit_mte2_busy < 0 ? cost.mte2_busy : cost.hit_mte2_busy,
                      cost.gm_read_requests, g.kinds[i].overlap > 1});
  }
  if (g.has_accesses()) {
    run_stretch_.assign(g.tasks.size(), 1.0);
    l2_.emplace(g, opt.l2_blocks ? opt.l2_blocks : std::make_shared<const L2Blocks>(g),
                static_cast<double>(hw.l2.bytes), opt.l2_start);
    if (!opt.prior_starts.empty()) {
      std::vector<double> kind_runs;
      for (const KindInfo& k : kinds_) kind_runs.push_back(k.cycles);
      l2_->use_prior_starts(opt.prior_starts, kind_runs);
    }
    res_.read_hit.assign(g.tasks.size(), 0.0F);
  }
  count_[CoreType::kAiv] = hw.cores.aiv;
  count_[CoreType::kAic] = hw.cores.aic;
  if (std::any_of(kinds_.begin(), kinds_.end(), [](const KindInfo& k) { return k.overlaps; })) {
    pipes_.assign(static_cast<size_t>(count_[CoreType::kAiv] + count_[CoreType::kAic]), {});
    res_.pipe_wait.assign(g.tasks.size(), 0.0F);
  }
  for (const CoreType t : kCoreTypes) {
    first_core_[t] = num_cores();
    res_.core_types.insert(res_.core_types.end(), static_cast<size_t>(count_[t]), t);
  }
}

int32_t TaskEngine::global_core(CoreType t, int32_t index) const {
  if (index < 0 || index >= count_[t])
    throw InternalError("task graph: task pinned to " + std::string(core_type_name(t)) + " core " +
                        std::to_string(index) + " but the hardware has " +
                        std::to_string(count_[t]));
  return first_core_[t] + index;
}

OverlapRoom TaskEngine::room(int32_t prev_kind, int32_t next_kind) {
  const auto a = static_cast<size_t>(prev_kind), b = static_cast<size_t>(next_kind);
  const uint64_t key = (static_cast<uint64_t>(a) << 32) | b;
  auto it = overlap_rooms_.find(key);
  if (it == overlap_rooms_.end())
    it = overlap_rooms_.emplace(key, overlap_room(g_.kinds[a], g_.kinds[b], hw_)).first;
  return it->second;
}

namespace {

// A task's run and pipe offsets at read-hit share `h`, stretched by `stretch`.
StagedRun stretched_run(const TaskCost& cost, double h, double stretch) {
  StagedRun r = staged_run_at_read_hit(cost, h);
  if (stretch == 1) return r;
  r.cycles *= stretch;
  for (double PipeStages::*x :
       {&PipeStages::load_done, &PipeStages::compute_start, &PipeStages::compute_done,
        &PipeStages::store_start, &PipeStages::store_done})
    r.stages.*x *= stretch;
  return r;
}

}  // namespace

double TaskEngine::overlap_start(int32_t core, int32_t next) {
  const CorePipes& p = pipes_[static_cast<size_t>(core)];
  if (p.last < 0) return 0;
  const auto i = static_cast<size_t>(p.last);
  const double h = l2_ ? res_.read_hit[i] : 0;
  const double stretch = l2_ ? run_stretch_[i] : 1;
  return earliest_start(
      p.clock, stretched_run(res_.kind_costs[static_cast<size_t>(kind_of(next))], h, stretch),
      room(kind_of(p.last), kind_of(next)));
}

double TaskEngine::run_on_core_pipes(int32_t task, double t, double h, double stretch) {
  CorePipes& p = pipes_[static_cast<size_t>(record(task).core)];
  const int32_t kind = kind_of(task);
  const PipedRun r = run_on_pipes(
      p.clock, t, stretched_run(res_.kind_costs[static_cast<size_t>(kind)], h, stretch),
      p.last < 0 ? OverlapRoom{} : room(kind_of(p.last), kind));
  p.clock = r.after;
  p.last = task;
  res_.pipe_wait[static_cast<size_t>(task)] = static_cast<float>(r.wait);
  return r.cycles;
}

SimResult TaskEngine::finish() {
  if (finished_ != g_.tasks.size())
    throw Error("task graph: " + std::to_string(g_.tasks.size() - finished_) +
                " tasks never became ready (dependency cycle, or no core of their type)");
  // Each task's latest predecessor end, in one pass once all ends are known (a max does not
  // depend on the order it is taken in; the pass walks the graph in order, which the cache
  // prefers to the resolution order), with the span.
  res_.first_start = kInf;
  res_.last_end = 0;
  for (size_t i = 0; i < res_.tasks.size(); ++i) {
    const TaskRecord& r = res_.tasks[i];
    res_.first_start = std::min(res_.first_start, r.start);
    res_.last_end = std::max(res_.last_end, r.end);
    for (const int32_t* succ = g_.succ_begin(static_cast<int32_t>(i));
         succ != g_.succ_end(static_cast<int32_t>(i)); ++succ) {
      auto& pe = res_.tasks[static_cast<size_t>(*succ)].pred_end;
      pe = std::max(pe, r.end);
    }
  }
  if (g_.tasks.empty()) res_.first_start = 0;
  if (opt_.find_co_readers) res_.l2_co_readers = l2_ && l2_->saw_co_readers();
  return std::move(res_);
}

}  // namespace tilesim
