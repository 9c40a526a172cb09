#include "tools/formats/record_json.hpp"

#include <fmt/format.h>

#include "tools/formats/text_append.hpp"

namespace tilesim {

nlohmann::json spec_to_json(const KernelSpec& spec) {
  nlohmann::json j;
  j["op"] = spec.op;
  j["shape"] = spec.shape;
  j["dtype"] = std::string(dtype_name(spec.dtype));
  j["dim"] = spec.dims;
  j["tile"] = spec.tile;
  j["loop_count"] = spec.loop_count;
  j["partition"] = partition_name(spec.partition);
  if (spec.partition == PartitionStyle::kAscendC) j["cores"] = spec.cores;
  if (spec.partition == PartitionStyle::kSpmd) j["grid"] = spec.grid;
  // Only a kernel that pipelines across its tasks says so (partition.preload).
  if (spec.partition == PartitionStyle::kSpmd && spec.preload > 0) j["preload"] = spec.preload;
  j["buffer_count"] = spec.buffer_count;
  if (spec.program && !spec.program_tile.empty()) j["program_tile"] = spec.program_tile;
  for (const auto& [name, dims] : spec.program_tiles) j["program_tiles"][name] = dims;
  if (spec.params.is_object() && !spec.params.empty()) j["params"] = spec.params;
  return j;
}

nlohmann::json diagnostics_to_json(const Diagnostics& d) {
  nlohmann::json j = {{"contiguous_bytes", d.contiguous_bytes},
                      {"prod_tile", d.prod_tile},
                      {"auto_tiles", d.auto_tiles},
                      {"reduction_segments", d.reduction_segments},
                      {"tile_exceeds_shape_dims", d.tile_exceeds_shape},
                      {"ub_bytes", d.ub_bytes},
                      {"buffer_depth", d.buffer_depth},
                      {"limit_violations", d.limit_violations},
                      {"tasks", d.tasks}};
  if (d.launches > 1) j["launches"] = d.launches;  // only graphs of several launches name it
  return j;
}

nlohmann::json psg_to_json(const std::vector<PsgMetrics>& psg) {
  nlohmann::json j = nlohmann::json::array();
  for (const auto& p : psg)
    j.push_back({{"name", p.name},
                 {"count", p.count},
                 {"sum_dur_us", p.sum_dur_us},
                 {"avg_dur_us", p.avg_dur_us}});
  return j;
}

nlohmann::json metrics_to_json(const Metrics& m, bool per_core) {
  nlohmann::json j;
  for (const auto& f : metric_fields()) {
    nlohmann::json& slot = *f.group ? j[f.group][f.key] : j[f.key];
    const double v = f.get(m);
    slot = f.integer ? nlohmann::json(static_cast<int64_t>(v)) : nlohmann::json(v);
  }
  if (per_core) {
    j["per_core"] = nlohmann::json::array();
    for (const auto& c : m.per_core)
      j["per_core"].push_back({{"core", c.core},
                               {"type", core_type_name(c.type)},
                               {"execute_task_num", c.execute_task_num},
                               {"core_total_work_time_us", c.core_total_work_time_us},
                               {"total_wait_time_us", c.total_wait_time_us},
                               {"wait_schedule_time_us", c.wait_schedule_time_us},
                               {"wait_predecessor_time_us", c.wait_predecessor_time_us},
                               {"busy_us", c.busy_us},
                               {"mte2_us", c.mte2_us},
                               {"vec_us", c.vec_us},
                               {"cube_us", c.cube_us},
                               {"mte3_us", c.mte3_us},
                               {"mte1_us", c.mte1_us}});
  }
  j["psg"] = psg_to_json(m.psg);
  j["pipes"] = nlohmann::json::object();
  for (const auto& p : m.pipes)
    j["pipes"][p.pipe] = {{"mean_us", p.mean_us}, {"max_us", p.max_us}, {"total_us", p.total_us}};
  return j;
}

std::string metrics_csv_header() {
  std::string s;
  for (const auto& f : metric_fields()) s += std::string(s.empty() ? "" : ",") + f.name;
  return s;
}

std::string metrics_csv_cells(const Metrics* m) {
  std::string s;
  for (const auto& f : metric_fields()) {
    if (&f != &metric_fields().front()) s += ',';
    if (!m) continue;
    const double v = f.get(*m);
    if (f.integer)
      append(s, "{}", static_cast<int64_t>(v));
    else
      append(s, "{:.6f}", v);
  }
  return s;
}

}  // namespace tilesim
