#include "sim/metrics.hpp"

#include <algorithm>
#include <limits>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include "model/error.hpp"
#include "sim/dma_attribution.hpp"
#include "sim/launch_cost.hpp"

namespace tilesim {

Metrics compute_metrics(const TaskGraph& graph, const SimResult& sim, const Hardware& hw) {
  Metrics m;
  auto us = [&](double cycles) { return hw.cycles_to_us(cycles); };
  m.tasks = static_cast<int64_t>(graph.tasks.size());
  m.edges = graph.num_edges();
  m.root_functions = graph.num_roots();
  m.gen_time_us = us(sim.last_end - sim.first_start);
  m.launch_us = kernel_launch_us(graph, hw);
  const double ready = std::min(sim.first_ready, sim.first_start);  // no task: no dispatch
  // PyPTO: the hand-shake overlaps the first build; what it adds is inside first_ready.
  const double handshake = std::min(sim.handshake_wait, ready);
  m.handshake_us = us(handshake);
  m.root_build_us = us(ready - handshake);
  m.dispatch_us = us(sim.first_start - ready);
  m.head_us = us(sim.first_start);
  m.completion_us = us(sim.tail);
  m.end_us = kernel_end_us(graph, hw);
  m.aicpu_build_us = us(sim.build_end);
  m.aicpu_schedule_us = us(sim.scheduler_work) / std::max(1, sim.scheduler_threads);
  m.kernel_time_us = m.launch_us + us(sim.last_end) + m.completion_us + m.end_us;

  const size_t ncores = sim.core_types.size();
  const size_t ntasks = sim.tasks.size();
  std::vector<size_t> on_core(ncores, 0);
  for (const auto& r : sim.tasks) ++on_core[static_cast<size_t>(r.core)];

  // Per PSG and in total, in task order.
  std::vector<PsgMetrics> psg(graph.psg_names.size());
  for (size_t p = 0; p < psg.size(); ++p) psg[p].name = graph.psg_names[p];
  for (size_t i = 0; i < ntasks; ++i) {
    const TaskRecord& r = sim.tasks[i];
    const auto kind = static_cast<size_t>(graph.tasks[i].kind);
    const auto& cost = sim.kind_costs[kind];
    auto& p = psg[static_cast<size_t>(graph.kinds[kind].psg)];
    ++p.count;
    p.sum_dur_us += us(r.end - r.start);
    m.gm_read_bytes += cost.gm_read_bytes;
    m.gm_write_bytes += cost.gm_write_bytes;
  }

  // Per core, each core's tasks summed in start order (ties by index), whatever the thread count.
  struct CoreSums {
    double prev_end;
    double wait = 0, wait_sched = 0, busy = 0, vec = 0, cube = 0, mte1 = 0;
    CoreDmaBusy dma{};
    size_t count = 0;
    double last_start = -std::numeric_limits<double>::infinity();
    int32_t last_task = -1;
    bool in_order = true;  // every task after the one before in (start, index) order

    void add(const TaskRecord& r, int32_t task, const TaskCost& cost, double read_hit,
             double pipe_wait) {
      in_order = in_order && (r.start > last_start || (r.start == last_start && task > last_task));
      last_start = r.start;
      last_task = task;
      ++count;
      const double dur = r.end - r.start;
      // A core's busy time is the union of its tasks' spans: a board trace may draw tasks of
      // one core overlapping (PyPTO's swimlane, on tids of their own), which must not give a
      // negative wait or more busy time than the span, and so do simulated cores that pipeline
      // consecutive tasks (model/task_overlap.hpp).
      wait += std::max(0.0, r.start - prev_end);
      wait_sched += std::max(0.0, r.start - std::max(prev_end, r.pred_end));
      busy += std::max(0.0, r.end - std::max(r.start, prev_end));
      // Waits for the core's pipes (busy with the tasks before) are not this task's DMA.
      dma.add(cost, r.start, dur - pipe_wait, read_hit, r.write_share);
      vec += cost.vec_busy;
      cube += cost.cube_busy;
      mte1 += cost.mte1_busy;
      prev_end = std::max(prev_end, r.end);
    }
  };
  constexpr size_t kPrefetchAhead = 16;
  auto kind_cost = [&](int32_t task) -> const TaskCost& {
    return sim.kind_costs[static_cast<size_t>(graph.tasks[static_cast<size_t>(task)].kind)];
  };
  std::vector<CoreSums> sums(ncores, CoreSums{sim.first_start});
  const bool big = ntasks >= (size_t{1} << 16);
  // The simulator's start order gives each core's tasks in start order without a sort or a copy
  // of them: one walk per group of cores (a thread each when the graph is big enough to pay for
  // it), each summing its own cores.
  const bool by_start = sim.start_order.size() == ntasks;
  if (by_start && ncores > 0) {
    const size_t groups =
        big ? std::min<size_t>(
                  ncores, static_cast<size_t>(std::max(1, tbb::this_task_arena::max_concurrency())))
            : 1;
    tbb::parallel_for(size_t{0}, groups, [&](size_t grp) {
      const auto lo = static_cast<int32_t>(grp * ncores / groups);
      const auto hi = static_cast<int32_t>((grp + 1) * ncores / groups);
      const int32_t* order = sim.start_order.data();
      for (size_t j = 0; j < ntasks; ++j) {
        // The records are read in start order, scattered over the run: fetched ahead.
        if (j + kPrefetchAhead < ntasks)
          __builtin_prefetch(&sim.tasks[static_cast<size_t>(order[j + kPrefetchAhead])]);
        const int32_t task = order[j];
        if (task < 0 || static_cast<size_t>(task) >= ntasks) continue;  // counts then differ
        const TaskRecord& r = sim.tasks[static_cast<size_t>(task)];
        if (r.core < lo || r.core >= hi) continue;
        sums[static_cast<size_t>(r.core)].add(r, task, kind_cost(task),
                                              sim.hit_share(static_cast<size_t>(task)),
                                              sim.pipe_wait_of(static_cast<size_t>(task)));
      }
    });
  }
  // Cores not summed so: no start order (a result built from a trace), or one that is not each
  // core's (start, index) order (equal starts on a core): their tasks gathered and sorted.
  std::vector<char> sort_core(ncores, 0);
  bool any_sorted = false;
  for (size_t c = 0; c < ncores; ++c) {
    sort_core[c] = !by_start || !sums[c].in_order || sums[c].count != on_core[c];
    any_sorted = any_sorted || sort_core[c];
  }
  if (any_sorted) {
    struct Run {
      double start;
      int32_t task;
      bool operator<(const Run& o) const {
        return start != o.start ? start < o.start : task < o.task;
      }
    };
    std::vector<std::vector<Run>> by_core(ncores);
    for (size_t c = 0; c < ncores; ++c)
      if (sort_core[c]) by_core[c].reserve(on_core[c]);
    for (size_t i = 0; i < ntasks; ++i) {
      const auto c = static_cast<size_t>(sim.tasks[i].core);
      if (sort_core[c]) by_core[c].push_back(Run{sim.tasks[i].start, static_cast<int32_t>(i)});
    }
    const size_t grain = big ? 1 : std::max<size_t>(ncores, 1);
    tbb::parallel_for(tbb::blocked_range<size_t>(0, ncores, grain), [&](const auto& cores) {
      for (size_t c = cores.begin(); c != cores.end(); ++c) {
        if (!sort_core[c]) continue;
        auto& list = by_core[c];
        if (!std::is_sorted(list.begin(), list.end())) std::sort(list.begin(), list.end());
        sums[c] = CoreSums{sim.first_start};
        for (size_t j = 0; j < list.size(); ++j) {
          if (j + kPrefetchAhead < list.size())
            __builtin_prefetch(&sim.tasks[static_cast<size_t>(list[j + kPrefetchAhead].task)]);
          const int32_t task = list[j].task;
          sums[c].add(sim.tasks[static_cast<size_t>(task)], task, kind_cost(task),
                      sim.hit_share(static_cast<size_t>(task)),
                      sim.pipe_wait_of(static_cast<size_t>(task)));
        }
      }
    });
  }
  for (size_t c = 0; c < ncores; ++c) {
    if (on_core[c] == 0) continue;
    const CoreSums& s = sums[c];
    CoreMetrics cm;
    cm.core = static_cast<int32_t>(c);
    cm.type = sim.core_types[c];
    cm.execute_task_num = static_cast<int64_t>(on_core[c]);
    cm.core_total_work_time_us = us(s.prev_end - sim.first_start);
    cm.total_wait_time_us = us(s.wait);
    cm.wait_schedule_time_us = us(s.wait_sched);
    cm.wait_predecessor_time_us = cm.total_wait_time_us - cm.wait_schedule_time_us;
    cm.busy_us = us(s.busy);
    cm.mte2_us = us(s.dma.total().mte2);
    cm.vec_us = us(s.vec);
    cm.cube_us = us(s.cube);
    cm.mte3_us = us(s.dma.total().mte3);
    cm.mte1_us = us(s.mte1);
    m.per_core.push_back(cm);
  }
  for (auto& p : psg) {
    p.avg_dur_us = p.count ? p.sum_dur_us / static_cast<double>(p.count) : 0;
    m.psg.push_back(p);
  }
  const struct {
    const char* name;
    double CoreMetrics::*field;
  } pipes[] = {{"MTE2", &CoreMetrics::mte2_us},
               {"V", &CoreMetrics::vec_us},
               {"CUBE", &CoreMetrics::cube_us},
               {"MTE3", &CoreMetrics::mte3_us},
               {"MTE1", &CoreMetrics::mte1_us}};
  for (const auto& p : pipes) {
    PipeMetrics pm;
    pm.pipe = p.name;
    int n = 0;
    for (const auto& c : m.per_core) {
      const double v = c.*p.field;
      pm.total_us += v;
      pm.max_us = std::max(pm.max_us, v);
      // Vector pipes live on AIV, the cube on AIC; DMA pipes on both.
      const bool relevant = p.field == &CoreMetrics::cube_us || p.field == &CoreMetrics::mte1_us
                                ? c.type == CoreType::kAic
                            : p.field == &CoreMetrics::vec_us ? c.type == CoreType::kAiv
                                                              : true;
      if (relevant) ++n;
    }
    pm.mean_us = n ? pm.total_us / n : 0;
    m.pipes.push_back(pm);
  }
  const double bytes = m.gm_read_bytes + m.gm_write_bytes;
  m.achieved_gm_gbps = m.gen_time_us > 0 ? bytes / (m.gen_time_us * 1e3) : 0;
  return m;
}

double pipe_mean_us(const Metrics& m, const std::string& pipe) {
  for (const auto& p : m.pipes)
    if (p.pipe == pipe) return p.mean_us;
  return 0;
}

double mean_per_core(const Metrics& m, double CoreMetrics::*field) {
  if (m.per_core.empty()) return 0;
  double sum = 0;
  for (const auto& c : m.per_core) sum += c.*field;
  return sum / static_cast<double>(m.per_core.size());
}

double mean_tasks_per_core(const Metrics& m) {
  if (m.per_core.empty()) return 0;
  double sum = 0;
  for (const auto& c : m.per_core) sum += static_cast<double>(c.execute_task_num);
  return sum / static_cast<double>(m.per_core.size());
}

const std::vector<MetricField>& metric_fields() {
  using M = const Metrics&;
  static const std::vector<MetricField> fields = {
      {"gen_time_us", "", "gen_time_us", false, [](M m) { return m.gen_time_us; }},
      {"kernel_time_us", "", "kernel_time_us", false, [](M m) { return m.kernel_time_us; }},
      {"launch_us", "fixed_costs", "launch_us", false, [](M m) { return m.launch_us; }},
      {"handshake_us", "fixed_costs", "handshake_us", false, [](M m) { return m.handshake_us; }},
      {"head_us", "fixed_costs", "head_us", false, [](M m) { return m.head_us; }},
      {"root_build_us", "fixed_costs", "root_build_us", false, [](M m) { return m.root_build_us; }},
      {"dispatch_us", "fixed_costs", "dispatch_us", false, [](M m) { return m.dispatch_us; }},
      {"completion_us", "fixed_costs", "completion_us", false, [](M m) { return m.completion_us; }},
      {"end_us", "fixed_costs", "end_us", false, [](M m) { return m.end_us; }},
      {"tasks", "", "tasks", true, [](M m) { return static_cast<double>(m.tasks); }},
      {"edges", "", "edges", true, [](M m) { return static_cast<double>(m.edges); }},
      {"root_functions", "", "root_functions", true,
       [](M m) { return static_cast<double>(m.root_functions); }},
      {"gm_read_bytes", "gm", "read_bytes", false, [](M m) { return m.gm_read_bytes; }},
      {"gm_write_bytes", "gm", "write_bytes", false, [](M m) { return m.gm_write_bytes; }},
      {"achieved_gm_gbps", "gm", "achieved_gbps", false, [](M m) { return m.achieved_gm_gbps; }},
      {"mte2_us", "breakdown", "mte2_us", false, [](M m) { return pipe_mean_us(m, "MTE2"); }},
      {"vec_us", "breakdown", "vec_us", false, [](M m) { return pipe_mean_us(m, "V"); }},
      {"cube_us", "breakdown", "cube_us", false, [](M m) { return pipe_mean_us(m, "CUBE"); }},
      {"mte3_us", "breakdown", "mte3_us", false, [](M m) { return pipe_mean_us(m, "MTE3"); }},
      {"mte1_us", "breakdown", "mte1_us", false, [](M m) { return pipe_mean_us(m, "MTE1"); }},
      {"wait_schedule_us", "breakdown", "wait_schedule_us", false,
       [](M m) { return mean_per_core(m, &CoreMetrics::wait_schedule_time_us); }},
      {"wait_predecessor_us", "breakdown", "wait_predecessor_us", false,
       [](M m) { return mean_per_core(m, &CoreMetrics::wait_predecessor_time_us); }},
      {"work_us", "breakdown", "work_us", false,
       [](M m) { return mean_per_core(m, &CoreMetrics::core_total_work_time_us); }},
      {"tasks_per_core", "", "tasks_per_core", false, [](M m) { return mean_tasks_per_core(m); }},
  };
  return fields;
}

double metric_field_value(const Metrics& m, const std::string& name) {
  for (const auto& f : metric_fields())
    if (name == f.name) return f.get(m);
  throw InternalError("metrics: no field named '" + name + "'");
}

}  // namespace tilesim
