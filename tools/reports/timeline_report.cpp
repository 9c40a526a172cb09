#include "tools/reports/timeline_report.hpp"

#include <fmt/format.h>

#include "tools/formats/text_append.hpp"

#include "model/error.hpp"
#include "tools/formats/run_config.hpp"
#include "tools/reports/report.hpp"

namespace tilesim {

std::vector<std::string> simulated_core_names(const SimResult& sim) {
  std::vector<std::string> names;
  int32_t aiv = 0, aic = 0;
  for (const CoreType t : sim.core_types)
    names.push_back(t == CoreType::kAiv ? fmt::format("AIV{}", aiv++)
                                        : fmt::format("AIC{}", aic++));
  return names;
}

std::string timeline_tables(const Metrics& m, const std::vector<std::string>& core_names,
                            bool dependencies) {
  std::string s;
  append(s, "\n  {:<24} {:>8} {:>12} {:>12}\n", "psg", "count", "sum_dur_us", "avg_dur_us");
  for (const auto& p : m.psg)
    append(s, "  {:<24} {:>8} {:>12.3f} {:>12.3f}\n", printable(p.name), p.count, p.sum_dur_us,
           p.avg_dur_us);
  append(s, "\n  {:<12} {:>6} {:>12} {:>12} {:>12} {:>12}\n", "core", "tasks", "work_us", "wait_us",
         "wait_sched", "wait_pred");
  for (const auto& c : m.per_core) {
    const std::string name = printable(core_names.at(static_cast<size_t>(c.core)));
    if (dependencies)
      append(s, "  {:<12} {:>6} {:>12.3f} {:>12.3f} {:>12.3f} {:>12.3f}\n", name,
             c.execute_task_num, c.core_total_work_time_us, c.total_wait_time_us,
             c.wait_schedule_time_us, c.wait_predecessor_time_us);
    else
      append(s, "  {:<12} {:>6} {:>12.3f} {:>12.3f} {:>12} {:>12}\n", name, c.execute_task_num,
             c.core_total_work_time_us, c.total_wait_time_us, "-", "-");
  }
  return s;
}

nlohmann::json swimlane_analysis_to_json(const SwimlaneAnalysis& a) {
  nlohmann::json j = metrics_to_json(a.metrics);
  for (const char* key :
       {"kernel_time_us", "edges", "root_functions", "gm", "pipes", "breakdown", "tasks_per_core"})
    j.erase(key);
  for (size_t i = 0; i < a.metrics.per_core.size(); ++i) {
    auto& c = j["per_core"][i];
    const auto& lane = a.lanes.at(static_cast<size_t>(a.metrics.per_core[i].core));
    c["lane"] = lane.name;
    c["type"] = lane.type_known ? core_type_name(lane.type) : "?";
    for (const char* key : {"mte2_us", "vec_us", "cube_us", "mte3_us", "mte1_us"}) c.erase(key);
    if (!a.dependencies)
      for (const char* key : {"wait_schedule_time_us", "wait_predecessor_time_us"}) c.erase(key);
  }
  j["dependencies"] = a.dependencies;
  j["skipped"] = a.skipped;
  j["warnings"] = a.warnings;
  return j;
}

nlohmann::json analyze_json(const SwimlaneAnalysis& a, const SwimlaneTrace& trace,
                            const std::string& trace_name, const std::string& graph_name) {
  nlohmann::json j = swimlane_analysis_to_json(a);
  j["trace"] = trace_name;
  if (!graph_name.empty()) j["graph"] = graph_name;
  j["events"] = trace.events;
  return j;
}

nlohmann::json replay_json(const PyptoGraph& pg, const Metrics& m,
                           const std::vector<std::string>& core_names,
                           const std::string& graph_name, const std::string& hardware_name) {
  nlohmann::json j = metrics_to_json(m);
  for (const char* key : {"gm", "pipes", "breakdown", "tasks_per_core"}) j.erase(key);
  for (size_t i = 0; i < m.per_core.size(); ++i) {
    auto& c = j["per_core"][i];
    c["name"] = core_names.at(static_cast<size_t>(m.per_core[i].core));
    for (const char* key : {"mte2_us", "vec_us", "cube_us", "mte3_us", "mte1_us"}) c.erase(key);
  }
  j["graph"] = graph_name;
  j["hardware"] = hardware_name;
  j["kinds"] = pg.graph.kinds.size();
  j["mixaicore_tasks"] = pg.mixaicore_tasks;
  j["hub_tasks"] = pg.hub_tasks;
  j["warnings"] = pg.warnings;
  return j;
}

double trace_units_per_us(const std::string& time_unit, const std::string& hardware) {
  if (time_unit == "us") return 1;
  if (time_unit == "ns") return 1000;
  if (time_unit == "cycles")
    return load_hardware(hardware.empty() ? default_hardware_path()
                                          : resolve_hardware_arg(hardware))
        .clock_mhz;
  throw Error("time unit " + time_unit + ": expected us, ns or cycles");
}

}  // namespace tilesim
