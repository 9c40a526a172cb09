#include "tools/reports/sweep_report.hpp"

#include <fmt/format.h>

#include <fmt/ranges.h>
#include "tools/reports/text_append.hpp"

#include <algorithm>
#include <cmath>

namespace tilesim {

namespace {

std::string tile_text(const Dims& d) {
  return format_dims(d);
}

// The tile with the swept dim shown as '*'.
std::string swept_tile_text(const Dims& d, int dim) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < d.size(); ++i)
    parts.push_back(static_cast<int>(i) == dim ? "*" : fmt::format("{}", d[i]));
  return fmt::format("({})", fmt::join(parts, ", "));
}

std::string tile_csv(const Dims& d) {
  return fmt::format("{}", fmt::join(d, "x"));
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string kernel_title(const SweepConfig& cfg, const Hardware& hw) {
  const auto& b = cfg.base;
  std::string s = fmt::format("{} {} {}", b.op, format_dims(b.shape), dtype_name(b.dtype));
  if (!b.dims.empty()) s += fmt::format(" dim {}", fmt::join(b.dims, ","));
  if (!b.params.empty()) s += " " + b.params.dump();
  return s + " on " + hw.name;
}

std::vector<size_t> series_members(const SweepResult& res, int series) {
  std::vector<size_t> m;
  for (const auto& c : res.candidates)
    if (c.ok && c.series == series) m.push_back(c.index);
  std::sort(m.begin(), m.end(), [&](size_t a, size_t b) {
    return res.candidates[a].axis_value < res.candidates[b].axis_value;
  });
  return m;
}

std::string axis_value_text(const SweepResult& res, const CandidateResult& c) {
  return res.axis.kind == SweepAxis::Kind::kLoopCount
             ? fmt::format("loop {}", c.loop_count)
             : fmt::format("tile[{}] = {}", res.axis.dim, c.axis_value);
}

bool any_cube(const SweepResult& res) {
  for (const auto& c : res.candidates)
    if (c.ok && c.cube_us > 0) return true;
  return false;
}

}  // namespace

std::vector<size_t> report_order(const SweepResult& res) {
  std::vector<size_t> order = res.ranking;
  for (const auto& c : res.candidates)
    if (!c.ok) order.push_back(c.index);
  return order;
}

std::string sweep_table(const SweepConfig& cfg, const Hardware& hw, const SweepResult& res,
                        size_t top) {
  std::string s;
  append(s, "tilesim sweep: {}\n", kernel_title(cfg, hw));
  if (!cfg.description.empty()) append(s, "  {}\n", cfg.description);
  append(s, "  {} candidates: {} evaluated, {} rejected by the pre-check; axis {}\n\n",
         res.candidates.size(), res.ranking.size(), res.candidates.size() - res.ranking.size(),
         res.axis_label);
  const bool cube = any_cube(res);
  size_t tw = 4;
  for (const auto& c : res.candidates) tw = std::max(tw, tile_text(c.tile).size());
  const double best = res.recommended ? res.candidates[*res.recommended].gen_time_us : 0;
  append(s,
         "  {:>4}  {:<{}} {:>5} {:>11} {:>7} {:>9} {:>9} {}{:>9} {:>9} {:>9} {:>7} {:>7} {:>6} "
         "{:>6} {:>7} {:>4} {:<22} {}\n",
         "rank", "tile", tw, "loop", "gen_us", "vs best", "MTE2_us", "V_us",
         cube ? fmt::format("{:>9} ", "CUBE_us") : "", "MTE3_us", "wsched_us", "wpred_us",
         "tasks/c", "contigB", "auto", "prod", "UB_KiB", "segs", "flags", "zone");
  size_t shown = 0;
  for (size_t rank = 0; rank < res.ranking.size(); ++rank) {
    const auto& c = res.candidates[res.ranking[rank]];
    const bool rec = res.recommended && c.index == *res.recommended;
    if (top > 0 && shown >= top && !rec) continue;
    ++shown;
    const auto flags = c.flags();
    append(s,
           "{} {:>4}  {:<{}} {:>5} {:>11.3f} {:>+6.1f}% {:>9.3f} {:>9.3f} {}{:>9.3f} {:>9.3f} "
           "{:>9.3f} {:>7.1f} {:>7} {:>6} {:>6} {:>7.1f} {:>4} {:<22} {}\n",
           rec ? "*" : " ", rank + 1, tile_text(c.tile), tw, c.loop_count, c.gen_time_us,
           best > 0 ? (c.gen_time_us / best - 1.0) * 100.0 : 0.0, c.mte2_us, c.vec_us,
           cube ? fmt::format("{:>9.3f} ", c.cube_us) : "", c.mte3_us, c.wait_schedule_us,
           c.wait_predecessor_us, c.tasks_per_core, c.contiguous_bytes, c.auto_tiles, c.prod_tile,
           static_cast<double>(c.diag.ub_bytes) / 1024.0, c.diag.reduction_segments,
           flags.empty() ? "-" : fmt::format("{}", fmt::join(flags, ",")), zone_label(c.zone));
  }
  if (shown < res.ranking.size())
    append(s, "  ... {} more evaluated candidates (--top 0, --csv or --json for all)\n",
           res.ranking.size() - shown);
  append(s,
         "\n  (vs best: time above the fastest; wsched/wpred: average Wait Schedule / Wait "
         "Predecessor Time per core; tasks/c: executed tasks per core; segs: reduction "
         "segments; flags: under_1kb = contiguous < {} B, tile_over_shape, over_limit)\n",
         cfg.constraints.flag_contiguous_bytes);
  if (res.recommended) {
    const auto& b = res.candidates[*res.recommended];
    append(s, "\n  * recommended: {}\n", res.why);
    const auto members = series_members(res, b.series);
    if (members.size() > 1) {
      std::string fixed =
          res.axis.kind == SweepAxis::Kind::kLoopCount
              ? fmt::format("tile {}", tile_text(b.tile))
              : fmt::format("tile {} loop {}", swept_tile_text(b.tile, res.axis.dim), b.loop_count);
      append(s, "\n  zones along {} ({}):\n", res.axis_label, fixed);
      // A long axis is condensed to its ends, zone boundaries, powers of two and the best's
      // neighbours.
      std::vector<bool> keep(members.size(), top == 0 || members.size() <= 24);
      for (size_t k = 0; k < members.size(); ++k) {
        const auto& c = res.candidates[members[k]];
        const bool edge = k == 0 || k + 1 == members.size() ||
                          res.candidates[members[k - 1]].zone != c.zone ||
                          res.candidates[members[k + 1]].zone != c.zone;
        const auto v = static_cast<int64_t>(c.axis_value);
        if (edge || (v > 0 && (v & (v - 1)) == 0)) keep[k] = true;  // ends, boundaries, 2^k
        if (c.index == b.index)
          for (size_t n = k > 0 ? k - 1 : 0; n <= std::min(k + 1, members.size() - 1); ++n)
            keep[n] = true;
      }
      for (size_t k = 0; k < members.size(); ++k) {
        if (!keep[k]) {
          if (k > 0 && keep[k - 1]) append(s, "    ...\n");
          continue;
        }
        const auto& c = res.candidates[members[k]];
        append(s, "  {} {:<18} {:>11.3f} us  {:<15} {}\n", c.index == b.index ? "*" : " ",
               axis_value_text(res, c), c.gen_time_us, zone_label(c.zone), c.zone_evidence);
      }
    }
    for (const auto& v : b.limit_violations) append(s, "  recommended is over a limit: {}\n", v);
  } else {
    append(s, "\n  no candidate passed the pre-check\n");
  }
  if (!res.rejected_by_class.empty()) {
    std::string counts;
    for (const auto& [cls, n] : res.rejected_by_class)
      counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", cls, n);
    append(s, "\n  rejected by the pre-check: {} ({})\n",
           res.candidates.size() - res.ranking.size(), counts);
    size_t listed = 0;
    for (const auto& c : res.candidates) {
      if (c.ok) continue;
      if (top > 0 && listed >= 10) {
        append(s, "    ... (--top 0, --csv or --json for every reason)\n");
        break;
      }
      append(s, "    tile {} loop {}: {}: {}\n", tile_text(c.tile), c.loop_count, c.reject_class,
             c.reason);
      ++listed;
    }
  }
  return s;
}

std::string sweep_csv(const SweepResult& res) {
  std::string s =
      "rank,index,tile,loop_count,status,reject_class,reason,gen_time_us,kernel_time_us,"
      "mte2_us,vec_us,cube_us,mte3_us,wait_schedule_us,wait_predecessor_us,tasks_per_core,"
      "tasks,contiguous_bytes,auto_tiles,prod_tile,ub_bytes,buffer_depth,reduction_segments,"
      "flags,zone,zone_evidence,dominant_psg,psg_avg_dur_us,psg_sum_dur_us,recommended\n";
  const auto order = report_order(res);
  for (size_t pos = 0; pos < order.size(); ++pos) {
    const auto& c = res.candidates[order[pos]];
    const PsgMetrics* dom = c.ok ? dominant_psg(c.psg) : nullptr;
    const bool rec = res.recommended && *res.recommended == c.index;
    append(s, "{},{},{},{},{},{},{},", c.ok ? fmt::format("{}", pos + 1) : "", c.index,
           tile_csv(c.tile), c.loop_count, c.ok ? "ok" : "rejected", c.reject_class,
           csv_field(c.reason));
    if (c.ok)
      append(s, "{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.6f},{:.4f},{},", c.gen_time_us,
             c.kernel_time_us, c.mte2_us, c.vec_us, c.cube_us, c.mte3_us, c.wait_schedule_us,
             c.wait_predecessor_us, c.tasks_per_core, c.tasks);
    else
      s += ",,,,,,,,,,";
    append(s, "{},{},{},", c.contiguous_bytes, c.auto_tiles, c.prod_tile);
    if (c.ok)
      append(s, "{},{},{},", c.diag.ub_bytes, c.diag.buffer_depth, c.diag.reduction_segments);
    else
      s += ",,,";
    append(s, "{},{},{},", fmt::join(c.flags(), ";"), zone_name(c.zone),
           csv_field(c.zone_evidence));
    if (dom)
      append(s, "{},{:.6f},{:.6f},", csv_field(dom->name), dom->avg_dur_us, dom->sum_dur_us);
    else
      s += ",,,";
    s += rec ? "1\n" : "0\n";
  }
  return s;
}

nlohmann::json sweep_json(const SweepConfig& cfg, const Hardware& hw, const SweepResult& res) {
  nlohmann::json j;
  const auto& b = cfg.base;
  j["sweep"] = {{"config", cfg.path.string()},
                {"description", cfg.description},
                {"op", b.op},
                {"shape", b.shape},
                {"dtype", std::string(dtype_name(b.dtype))},
                {"dim", b.dims},
                {"params", b.params},
                {"hardware", hw.name},
                {"axis", res.axis_label}};
  j["counts"] = {{"candidates", res.candidates.size()},
                 {"evaluated", res.ranking.size()},
                 {"rejected", res.candidates.size() - res.ranking.size()}};
  j["rejected_by_reason"] = nlohmann::json::object();
  for (const auto& [cls, n] : res.rejected_by_class) j["rejected_by_reason"][cls] = n;
  j["candidates"] = nlohmann::json::array();
  const auto order = report_order(res);
  for (size_t pos = 0; pos < order.size(); ++pos) {
    const auto& c = res.candidates[order[pos]];
    nlohmann::json e;
    e["index"] = c.index;
    e["rank"] = c.ok ? nlohmann::json(pos + 1) : nlohmann::json(nullptr);
    e["tile"] = c.tile;
    e["loop_count"] = c.loop_count;
    e["status"] = c.ok ? "ok" : "rejected";
    e["reason"] = c.ok ? nlohmann::json(nullptr) : nlohmann::json(c.reason);
    e["reject_class"] = c.ok ? nlohmann::json(nullptr) : nlohmann::json(c.reject_class);
    e["gen_time_us"] = c.ok ? nlohmann::json(c.gen_time_us) : nlohmann::json(nullptr);
    e["flags"] = c.flags();
    e["zone"] = c.zone == Zone::kNone ? nlohmann::json(nullptr) : nlohmann::json(zone_name(c.zone));
    e["zone_evidence"] = c.zone_evidence;
    e["rule_figures"] = {{"contiguous_bytes", c.contiguous_bytes},
                         {"prod_tile", c.prod_tile},
                         {"auto_tiles", c.auto_tiles},
                         {"tile_exceeds_shape_dims", c.tile_over_shape_dims},
                         {"limit_violations", c.limit_violations}};
    if (c.ok) {
      nlohmann::json m;
      m["gen_time_us"] = c.gen_time_us;
      m["kernel_time_us"] = c.kernel_time_us;
      m["tasks"] = c.tasks;
      m["edges"] = c.edges;
      m["root_functions"] = c.root_functions;
      m["breakdown"] = {{"mte2_us", c.mte2_us},
                        {"vec_us", c.vec_us},
                        {"cube_us", c.cube_us},
                        {"mte3_us", c.mte3_us},
                        {"wait_schedule_us", c.wait_schedule_us},
                        {"wait_predecessor_us", c.wait_predecessor_us},
                        {"work_us", c.work_us}};
      m["tasks_per_core"] = c.tasks_per_core;
      m["achieved_gm_gbps"] = c.achieved_gm_gbps;
      m["ub_bytes"] = c.diag.ub_bytes;
      m["buffer_depth"] = c.diag.buffer_depth;
      m["reduction_segments"] = c.diag.reduction_segments;
      m["psg"] = nlohmann::json::array();
      for (const auto& p : c.psg)
        m["psg"].push_back({{"name", p.name},
                            {"count", p.count},
                            {"sum_dur_us", p.sum_dur_us},
                            {"avg_dur_us", p.avg_dur_us}});
      const PsgMetrics* dom = dominant_psg(c.psg);
      m["dominant_psg"] = dom ? nlohmann::json(dom->name) : nlohmann::json(nullptr);
      m["pipes"] = nlohmann::json::object();
      for (const auto& p : c.pipes)
        m["pipes"][p.pipe] = {
            {"mean_us", p.mean_us}, {"max_us", p.max_us}, {"total_us", p.total_us}};
      e["metrics"] = m;
      e["axis_value"] = c.axis_value;
      e["series"] = c.series;
    } else {
      e["metrics"] = nullptr;
    }
    j["candidates"].push_back(e);
  }
  if (res.recommended) {
    const auto& r = res.candidates[*res.recommended];
    j["recommended"] = {{"index", r.index},
                        {"tile", r.tile},
                        {"loop_count", r.loop_count},
                        {"gen_time_us", r.gen_time_us},
                        {"zone", r.zone == Zone::kNone ? nlohmann::json(nullptr)
                                                       : nlohmann::json(zone_name(r.zone))},
                        {"why", res.why}};
  } else {
    j["recommended"] = nullptr;
  }
  return j;
}

Plot sweep_plot(const SweepConfig& cfg, const Hardware& hw, const SweepResult& res) {
  Plot p;
  p.title = "tilesim sweep: " + kernel_title(cfg, hw);
  p.x_label = res.axis_label + " (log2 scale)";
  p.y_label = "modeled gen_time_us";
  p.log_x = true;
  auto zone_color = [](Zone z) -> std::string {
    switch (z) {
      case Zone::kTooFragmented:
        return "#f08080";
      case Zone::kSweetSpot:
        return "#7fd17f";
      case Zone::kTooCoarse:
        return "#7fb2e5";
      case Zone::kSlower:
        return "#bbbbbb";
      case Zone::kNone:
        break;
    }
    return "#ffffff";
  };
  PlotSeries others{"other candidates", "#888888", false, 3, 0.45, {}};
  PlotSeries main;
  main.color = "#1f3b73";
  if (!res.recommended) {
    p.subtitle = "no candidate passed the pre-check";
    return p;
  }
  const auto& best = res.candidates[*res.recommended];
  const auto members = series_members(res, best.series);
  main.name = res.axis.kind == SweepAxis::Kind::kLoopCount
                  ? fmt::format("tile {}", tile_text(best.tile))
                  : fmt::format("tile {} loop {}", swept_tile_text(best.tile, res.axis.dim),
                                best.loop_count);
  for (const auto& c : res.candidates)
    if (c.ok && c.series != best.series) others.points.push_back({c.axis_value, c.gen_time_us, ""});
  for (size_t i : members) {
    const auto& c = res.candidates[i];
    main.points.push_back({c.axis_value, c.gen_time_us, zone_color(c.zone)});
  }
  // Zone bands: each point of the recommended's series owns the axis up to halfway (in log
  // space) to its neighbours.
  for (size_t k = 0; k < members.size(); ++k) {
    const auto& c = res.candidates[members[k]];
    if (c.zone == Zone::kNone) continue;
    const double lx = std::log2(c.axis_value);
    const double prev = k > 0 ? std::log2(res.candidates[members[k - 1]].axis_value) : lx - 1;
    const double next =
        k + 1 < members.size() ? std::log2(res.candidates[members[k + 1]].axis_value) : lx + 1;
    const double x0 = std::exp2((lx + prev) / 2), x1 = std::exp2((lx + next) / 2);
    if (!p.bands.empty() && p.bands.back().label == zone_label(c.zone) && k > 0 &&
        res.candidates[members[k - 1]].zone == c.zone)
      p.bands.back().x1 = x1;  // one band per run of equal zones
    else
      p.bands.push_back({x0, x1, zone_color(c.zone), zone_label(c.zone)});
  }
  if (!others.points.empty()) p.series.push_back(others);
  p.series.push_back(main);
  p.mark = PlotMark{best.axis_value, best.gen_time_us,
                    fmt::format("best: tile {} loop {}, {:.2f} us", tile_text(best.tile),
                                best.loop_count, best.gen_time_us)};
  p.subtitle = fmt::format("{} evaluated, {} rejected; zones of the recommended's series shaded",
                           res.ranking.size(), res.candidates.size() - res.ranking.size());
  return p;
}

std::string sweep_svg(const SweepConfig& cfg, const Hardware& hw, const SweepResult& res) {
  return render_svg(sweep_plot(cfg, hw, res));
}

}  // namespace tilesim
