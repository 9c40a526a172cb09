#include "tools/reports/report.hpp"

#include <fmt/format.h>

#include <fmt/ranges.h>
#include "tools/analyses/binding.hpp"
#include "tools/analyses/sweep.hpp"
#include "tools/formats/text_append.hpp"

namespace tilesim {

std::string kernel_time_line(const Metrics& m) {
  std::string s =
      fmt::format("  kernel_time_us  {:>12.3f}   (launch {:.3f}", m.kernel_time_us, m.launch_us);
  if (m.handshake_us > 0) s += fmt::format(" + AICPU hand-shake {:.3f}", m.handshake_us);
  if (m.root_build_us > 0) s += fmt::format(" + root build {:.3f}", m.root_build_us);
  s += fmt::format(" + dispatch {:.3f} + tasks {:.3f}", m.dispatch_us, m.gen_time_us);
  if (m.completion_us > 0) s += fmt::format(" + last completion {:.3f}", m.completion_us);
  return s + fmt::format(" + end {:.3f})\n", m.end_us);
}

std::string span_path_line(const SpanPath& p, const Hardware& hw) {
  if (p.tasks < 2) return "";
  auto us = [&](double cycles) { return hw.cycles_to_us(cycles); };
  std::string s = fmt::format("  span path: {} tasks {:.3f} us", p.tasks, us(p.task_cycles));
  if (p.handoffs > 0)
    s += fmt::format(" + {} hand-off{} {:.3f} us", p.handoffs, p.handoffs == 1 ? "" : "s",
                     us(p.handoff_cycles));
  if (p.core_wait_cycles != 0)
    s += fmt::format(" + core turnarounds {:.3f} us", us(p.core_wait_cycles));
  if (p.head_cycles != 0) s += fmt::format(" + start-up {:.3f} us", us(p.head_cycles));
  return s + "\n";
}

std::string metrics_table(const KernelSpec& spec, const Hardware& hw, const Diagnostics& d,
                          const Metrics& m, const SpanPath* path) {
  std::string s;
  append(s, "tilesim run: {} {} {} tile {}", printable(spec.op), format_dims(spec.shape),
         dtype_name(spec.dtype), format_dims(spec.tile));
  if (!spec.program_tiles.empty()) append(s, " tiles {}", named_tiles_text(spec.program_tiles));
  append(s, " loop_count {} partition {} on {}\n", spec.loop_count, partition_name(spec.partition),
         printable(hw.name));
  append(s, "\n  gen_time_us     {:>12.3f}   (span of all tasks)\n", m.gen_time_us);
  if (path != nullptr) s += span_path_line(*path, hw);
  s += kernel_time_line(m);
  append(s, "  tasks {}  edges {}  root functions {}", m.tasks, m.edges, m.root_functions);
  if (d.launches > 1)
    append(s, "  launches {} (each starts when the previous one ends)", d.launches);
  append(s, "\n");
  append(s, "  GM read {:.1f} MB, written {:.1f} MB, achieved {:.1f} GB/s (HBM {:.0f} GB/s)\n",
         m.gm_read_bytes / 1e6, m.gm_write_bytes / 1e6, m.achieved_gm_gbps,
         hw.gm.hbm_bandwidth_gbps);
  if (const auto uses = resource_uses(m, hw); !uses.empty())
    append(s, "  {}\n", wrap(binding_text(uses), 2, 4, kTerminalColumns));
  append(s,
         "\n  candidate: contiguous {} B, prod(tile) {}, auto_tiles {}, UB {} B, buffer depth {}\n",
         d.contiguous_bytes, d.prod_tile, d.auto_tiles, d.ub_bytes, d.buffer_depth);
  if (!d.tile_exceeds_shape.empty())
    append(s, "  flag: tile > shape in dim(s) {}\n", fmt::join(d.tile_exceeds_shape, ", "));
  for (const auto& v : d.limit_violations) append(s, "  limit: {}\n", v);
  append(s, "\n  {:<6} {:>10} {:>10} {:>10}\n", "pipe", "mean_us", "max_us", "total_us");
  for (const auto& p : m.pipes)
    append(s, "  {:<6} {:>10.3f} {:>10.3f} {:>10.3f}\n", p.pipe, p.mean_us, p.max_us, p.total_us);
  append(s, "\n  {:<24} {:>8} {:>12} {:>12}\n", "psg", "count", "sum_dur_us", "avg_dur_us");
  for (const auto& p : m.psg)
    append(s, "  {:<24} {:>8} {:>12.3f} {:>12.3f}\n", printable(p.name), p.count, p.sum_dur_us,
           p.avg_dur_us);
  append(s, "\n  {:<7} {:>6} {:>12} {:>12} {:>12} {:>12}\n", "core", "tasks", "work_us", "wait_us",
         "wait_sched", "wait_pred");
  for (const auto& c : m.per_core)
    append(s, "  {}{:<4} {:>6} {:>12.3f} {:>12.3f} {:>12.3f} {:>12.3f}\n", core_type_name(c.type),
           c.type == CoreType::kAiv ? c.core : c.core - static_cast<int32_t>(hw.cores.aiv),
           c.execute_task_num, c.core_total_work_time_us, c.total_wait_time_us,
           c.wait_schedule_time_us, c.wait_predecessor_time_us);
  return s;
}

nlohmann::json binding_json(const std::vector<ResourceUse>& uses) {
  nlohmann::json j = nlohmann::json::array();
  for (const ResourceUse& u : uses)
    j.push_back({{"resource", u.name},
                 {"used", u.used},
                 {"capacity", u.capacity},
                 {"unit", u.unit},
                 {"share", u.share}});
  // The first two bind together (tools/analyses/binding.hpp co_bound): each says so.
  if (co_bound(uses)) j[0]["co_bound"] = j[1]["co_bound"] = true;
  return j;
}

nlohmann::json run_json(const KernelSpec& spec, const Hardware& hw, const Diagnostics& d,
                        const Metrics& m, const nlohmann::json& measured) {
  nlohmann::json j = metrics_to_json(m);
  j["candidate"] = spec_to_json(spec);
  j["hardware"] = hw.name;
  j["diagnostics"] = diagnostics_to_json(d);
  j["binding"] = binding_json(resource_uses(m, hw));
  if (!measured.is_null()) j["measured"] = measured;
  return j;
}

}  // namespace tilesim
