#include "sim/timeline_metrics.hpp"

#include <algorithm>
#include <cmath>

#include "model/error.hpp"

namespace tilesim {

Metrics timeline_metrics(const Timeline& tl) {
  if (!(tl.units_per_us > 0)) throw InternalError("timeline: time units per us must be positive");
  const auto ncores = static_cast<int32_t>(tl.core_types.size());
  const auto npsg = static_cast<int32_t>(tl.psg_names.size());
  // Times are shifted so the first start is 0: board timestamps can be large, and compute_metrics
  // uses -1 as "no predecessor".
  double first = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < tl.records.size(); ++i) {
    const auto& r = tl.records[i];
    if (r.core < 0 || r.core >= ncores || r.psg < 0 || r.psg >= npsg)
      throw InternalError("timeline: record " + std::to_string(i) +
                          " names an unknown core or PSG");
    if (!(r.end >= r.start) || !std::isfinite(r.start) || !std::isfinite(r.end))
      throw InternalError("timeline: record " + std::to_string(i) + " ends before it starts");
    first = std::min(first, r.start);
  }
  if (tl.records.empty()) first = 0;

  // One kind per PSG: compute_metrics reads a task's PSG through its kind.
  TaskGraph graph;
  graph.psg_names = tl.psg_names;
  for (int32_t p = 0; p < npsg; ++p) {
    TaskKind k;
    k.label = tl.psg_names[static_cast<size_t>(p)];
    k.psg = p;
    graph.kinds.push_back(std::move(k));
  }
  graph.tasks.reserve(tl.records.size());
  SimResult sim;
  sim.core_types = tl.core_types;
  sim.kind_costs.assign(graph.kinds.size(), TaskCost{});
  sim.tasks.reserve(tl.records.size());
  sim.first_start = 0;
  sim.last_end = 0;
  for (const auto& r : tl.records) {
    graph.tasks.push_back(Task{r.psg, 0, -1});
    TaskRecord rec;
    rec.core = r.core;
    rec.start = r.start - first;
    rec.end = r.end - first;
    rec.pred_end = std::isfinite(r.pred_end) ? std::max(0.0, r.pred_end - first) : -1;
    sim.last_end = std::max(sim.last_end, rec.end);
    sim.tasks.push_back(rec);
  }
  Hardware hw;
  hw.clock_mhz = tl.units_per_us;  // compute_metrics divides by the clock to get microseconds
  Metrics m = compute_metrics(graph, sim, hw);
  m.root_functions = 0;
  return m;
}

}  // namespace tilesim
