#include "tools/reports/sweep_report.hpp"

#include <fmt/format.h>

#include <fmt/ranges.h>
#include "model/error.hpp"
#include "tools/analyses/binding.hpp"
#include "tools/analyses/sweep_lever.hpp"
#include "tools/formats/csv_field.hpp"
#include "tools/formats/text_append.hpp"
#include "tools/reports/report.hpp"
#include "tools/reports/svg_heat_map.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <set>

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

std::string kernel_title(const SweepConfig& cfg, const Hardware& hw) {
  const auto& b = cfg.base;
  std::string s =
      fmt::format("{} {} {}", printable(b.op), format_dims(b.shape), dtype_name(b.dtype));
  if (!b.dims.empty()) s += fmt::format(" dim {}", fmt::join(b.dims, ","));
  if (!b.params.empty()) s += " " + b.params.dump();
  return s + " on " + printable(hw.name);
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
  if (res.axis.kind == SweepAxis::Kind::kGrid)
    return res.block_follows_grid ? fmt::format("grid {} block {}", c.grid, tile_text(c.block))
                                  : fmt::format("grid {}", c.grid);
  return res.axis.kind == SweepAxis::Kind::kLoopCount
             ? fmt::format("loop {}", c.loop_count)
             : fmt::format("{}[{}] = {}", c.grid > 0 ? "sub-tile" : "tile", res.axis.dim,
                           c.axis_value);
}

// What the recommended's series holds fixed, for the zones heading and the plot legend.
std::string series_fixed_text(const SweepResult& res, const CandidateResult& b) {
  std::string named = b.named_tiles.empty() ? "" : ", " + named_tiles_text(b.named_tiles);
  if (!b.params.empty()) named += ", " + params_text(b.params);
  if (res.axis.kind == SweepAxis::Kind::kLoopCount)
    return fmt::format("tile {}{}", tile_text(b.tile), named);
  if (b.grid == 0)
    return fmt::format("tile {} loop {}{}", swept_tile_text(b.tile, res.axis.dim), b.loop_count,
                       named);
  std::string s =
      res.axis.kind == SweepAxis::Kind::kGrid
          ? fmt::format("sub-tile {}", tile_text(b.tile))
          : fmt::format("grid {} sub-tile {}", b.grid, swept_tile_text(b.tile, res.axis.dim));
  if (res.block_follows_grid)
    s += ", block cdiv(shape, grid)";
  else if (!b.block.empty())
    s += " block " + tile_text(b.block);
  return s + named;
}

// {"name": [dims], ...}
nlohmann::json named_tiles_json(const NamedTiles& tiles) {
  nlohmann::json j = nlohmann::json::object();
  for (const auto& [name, dims] : tiles) j[name] = dims;
  return j;
}

bool spmd_sweep(const SweepConfig& cfg) {
  return cfg.base.partition == PartitionStyle::kSpmd;
}

bool any_block(const SweepResult& res) {
  for (const auto& c : res.candidates)
    if (!c.block.empty()) return true;
  return false;
}

// Some evaluated candidate keeps the pipe busy (a column of zeros moves to --wide).
bool any_busy(const SweepResult& res, const char* pipe) {
  for (const auto& c : res.candidates)
    if (c.ok && pipe_mean_us(c, pipe) > 0) return true;
  return false;
}

std::string flags_text(const CandidateResult& c) {
  const auto f = c.flags();
  return f.empty() ? "-" : fmt::format("{}", fmt::join(f, ","));
}

}  // namespace

std::vector<size_t> report_order(const SweepResult& res) {
  std::vector<size_t> order = res.ranking;
  for (const auto& c : res.candidates)
    if (!c.ok) order.push_back(c.index);
  return order;
}

namespace {

// One column of the ranked table: required ones always show, optional ones join (in priority
// order) while the table fits kTerminalColumns, wide ones only with --wide (which shows all).
struct Column {
  std::string header;
  size_t width;
  bool left;  // left-aligned
  enum { kRequired, kOptional, kWide } when;
  std::function<std::string(const CandidateResult&)> cell;
};

std::string pad(const std::string& text, size_t width, bool left) {
  return left ? fmt::format("{:<{}}", text, width) : fmt::format("{:>{}}", text, width);
}

std::string us_cell(double v) {
  return fmt::format("{:.3f}", v);
}

// The table's heading: the kernel, the sweep's description, the candidate counts and the axis.
std::string table_heading(const SweepConfig& cfg, const Hardware& hw, const SweepResult& res) {
  std::string s;
  append(s, "tilesim sweep: {}\n", kernel_title(cfg, hw));
  if (!cfg.description.empty())
    append(s, "  {}\n", wrap(printable(cfg.description), 2, 2, kTerminalColumns));
  append(s, "  {} candidates: {} evaluated, {} rejected by the pre-check; axis {}\n\n",
         res.candidates.size(), res.ranking.size(), res.candidates.size() - res.ranking.size(),
         res.axis_label);
  return s;
}

// The columns of every sweep, in the order shown (`best`: the recommended candidate).
std::vector<Column> common_columns(const SweepConfig& cfg, const SweepResult& res,
                                   const CandidateResult* best, bool spmd) {
  size_t tw = 4, fw = 5;
  for (const auto& c : res.candidates) tw = std::max(tw, tile_text(c.tile).size());
  for (size_t i : res.ranking) fw = std::max(fw, flags_text(res.candidates[i]).size());
  auto wait = [](double CoreMetrics::*f) {
    return [f](const CandidateResult& c) { return us_cell(mean_per_core(c, f)); };
  };
  auto busy = [&](const char* p) { return any_busy(res, p) ? Column::kOptional : Column::kWide; };
  auto pipe = [](const char* p) {
    return [p](const CandidateResult& c) { return us_cell(pipe_mean_us(c, p)); };
  };
  return {
      {"rank", 4, false, Column::kRequired, nullptr},
      {spmd ? "sub-tile" : "tile", std::max<size_t>(tw, spmd ? 8 : 4), true, Column::kRequired,
       [](const auto& c) { return tile_text(c.tile); }},
      {"loop", 5, false, Column::kRequired,
       [](const auto& c) { return fmt::format("{}", c.loop_count); }},
      {"gen_us", 10, false, Column::kRequired,
       [](const auto& c) { return us_cell(c.gen_time_us); }},
      {"vs best", 7, false, Column::kRequired,
       [&cfg, best](const CandidateResult& c) -> std::string {
         if (&c == best) return "best";
         if (ties(cfg, *best, c)) return "tie";
         return fmt::format("{:+.1f}%",
                            (objective_of(cfg, c) / objective_of(cfg, *best) - 1.0) * 100.0);
       }},
      {"zone", 14, true, Column::kRequired, [](const auto& c) { return zone_label(c.zone); }},
      {"MTE2_us", 9, false, busy("MTE2"), pipe("MTE2")},
      {"V_us", 9, false, busy("V"), pipe("V")},
      {"CUBE_us", 9, false, busy("CUBE"), pipe("CUBE")},
      {"MTE3_us", 9, false, busy("MTE3"), pipe("MTE3")},
      {"wsched_us", 9, false, Column::kOptional, wait(&CoreMetrics::wait_schedule_time_us)},
      {"wpred_us", 9, false, Column::kWide, wait(&CoreMetrics::wait_predecessor_time_us)},
      {"tasks/c", 7, false, Column::kOptional,
       [](const auto& c) { return fmt::format("{:.1f}", mean_tasks_per_core(c)); }},
      {"contigB", 7, false, Column::kWide,
       [](const auto& c) { return fmt::format("{}", c.contiguous_bytes); }},
      {"auto", 6, false, Column::kWide,
       [](const auto& c) { return fmt::format("{}", c.auto_tiles); }},
      {"prod", 6, false, Column::kWide,
       [](const auto& c) { return fmt::format("{}", c.prod_tile); }},
      {"UB_KiB", 7, false, Column::kWide,
       [](const auto& c) {
         return fmt::format("{:.1f}", static_cast<double>(c.diag.ub_bytes) / 1024.0);
       }},
      {"segs", 4, false, Column::kWide,
       [](const auto& c) { return fmt::format("{}", c.diag.reduction_segments); }},
      {"flags", fw, true, Column::kOptional, flags_text},
  };
}

// An spmd row names its launch next to the sub-tile (grid, and the block when set) instead
// of a loop count, and its waves, tail wave and sub-tiles per block join the optional columns.
void add_spmd_columns(std::vector<Column>& cols, const SweepResult& res) {
  size_t bw = 5;
  for (const auto& c : res.candidates) bw = std::max(bw, tile_text(c.block).size());
  std::vector<Column> launch = {{"grid", 5, false, Column::kRequired,
                                 [](const auto& c) { return fmt::format("{}", c.grid); }}};
  if (any_block(res))
    launch.push_back({"block", bw, true, Column::kRequired, [](const auto& c) {
                        return c.block.empty() ? std::string("-") : tile_text(c.block);
                      }});
  // In the loop count's place (after a program's tiles, when it has some).
  const auto loop =
      std::find_if(cols.begin(), cols.end(), [](const Column& c) { return c.header == "loop"; });
  if (loop == cols.end()) throw InternalError("sweep table: the loop column is missing");
  cols.insert(cols.erase(loop), launch.begin(), launch.end());
  const auto figures = std::vector<Column>{
      {"waves", 5, false, Column::kOptional,
       [](const auto& c) { return fmt::format("{}", c.spmd.waves); }},
      {"tail%", 5, false, Column::kOptional,
       [](const auto& c) { return fmt::format("{:.0f}", c.spmd.tail_occupancy * 100.0); }},
      {"sub/blk", 7, false, Column::kOptional,
       [](const auto& c) { return fmt::format("{}", c.spmd.subtiles_max); }},
      {"util%", 5, false, Column::kWide,
       [](const auto& c) { return fmt::format("{:.0f}", c.spmd.utilisation * 100.0); }}};
  cols.insert(cols.end() - 1, figures.begin(), figures.end());  // before the flags
}

// Every column of this sweep's table: the common ones, a program's tiles, the objective's and
// an spmd launch's.
std::vector<Column> table_columns(const SweepConfig& cfg, const SweepResult& res,
                                  const CandidateResult* best, bool spmd) {
  std::vector<Column> cols = common_columns(cfg, res, best, spmd);
  // A text column beside the swept tile, as wide as its widest cell.
  auto beside_tile = [&](std::string header, std::function<std::string(const CandidateResult&)> f) {
    size_t w = header.size();
    for (const auto& c : res.candidates) w = std::max(w, f(c).size());
    cols.insert(cols.begin() + 2, Column{std::move(header), w, true, Column::kRequired, f});
  };
  // The params the candidates set, then a program's other named tiles (inserted last: first).
  if (!cfg.param_values.empty())
    beside_tile("params", [](const CandidateResult& c) { return params_text(c.params); });
  if (!cfg.program_tiles.empty())
    beside_tile("tiles", [](const CandidateResult& c) { return named_tiles_text(c.named_tiles); });
  // Another objective than gen_time_us gets its own column beside gen_us: what ranks.
  const auto gen =
      std::find_if(cols.begin(), cols.end(), [](const Column& c) { return c.header == "gen_us"; });
  if (gen == cols.end()) throw InternalError("sweep table: the gen_us column is missing");
  if (cfg.objective != Objective::kGenTime)
    cols.insert(gen + 1, Column{std::string(objective_info(cfg.objective).column), 10, false,
                                Column::kRequired, [&cfg](const CandidateResult& c) {
                                  return us_cell(objective_of(cfg, c));
                                }});
  if (spmd) add_spmd_columns(cols, res);
  return cols;
}

// The columns shown: the required ones, the optional ones that fit (all with `wide`).
std::vector<const Column*> shown_columns(const std::vector<Column>& cols, bool wide) {
  // A row is the marker, then each column after a space (two before the tile).
  size_t used = 2;
  std::vector<const Column*> shown_cols;
  for (const auto& c : cols)
    if (c.when == Column::kRequired) used += c.width + 1;
  // Optional columns join in priority order (the pipes, then the rulebook flags); they are shown in
  // the order declared, with the zone last (its labels vary in length).
  const std::vector<std::string> priority = {"MTE2_us", "V_us",   "CUBE_us", "MTE3_us",
                                             "waves",   "tail%",  "sub/blk", "wsched_us",
                                             "flags",   "tasks/c"};
  std::set<std::string> chosen;
  for (const auto& name : priority)
    for (const auto& c : cols)
      if (c.header == name && c.when == Column::kOptional &&
          used + c.width + 1 <= kTerminalColumns) {
        used += c.width + 1;
        chosen.insert(name);
      }
  for (const auto& c : cols)
    if (c.when == Column::kRequired || wide || chosen.count(c.header)) shown_cols.push_back(&c);
  std::stable_partition(shown_cols.begin(), shown_cols.end(),
                        [](const Column* c) { return c->header != "zone"; });
  return shown_cols;
}

// One line of the table: `marker`, then each shown column's `text`, padded to its width.
template <class Text>
std::string table_row(const std::vector<const Column*>& shown_cols, const std::string& marker,
                      Text&& text) {
  std::string line = marker;
  for (size_t i = 0; i < shown_cols.size(); ++i)
    line += (i == 1 ? "  " : " ") +
            pad(text(*shown_cols[i]), shown_cols[i]->width, shown_cols[i]->left);
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line + "\n";
}

// The header row, then the evaluated candidates by rank: the first `top` (0: all) and the
// recommended one, '*' marking it; then how many were left out.
std::string ranked_rows(const SweepResult& res, const CandidateResult* best,
                        const std::vector<const Column*>& shown_cols, size_t top) {
  std::string s = table_row(shown_cols, " ", [](const Column& c) { return c.header; });
  size_t shown = 0;
  for (size_t rank = 0; rank < res.ranking.size(); ++rank) {
    const auto& c = res.candidates[res.ranking[rank]];
    const bool rec = best && c.index == best->index;
    if (top > 0 && shown >= top && !rec) continue;
    ++shown;
    s += table_row(shown_cols, rec ? "*" : " ", [&](const Column& col) {
      return col.cell ? col.cell(c) : fmt::format("{}", rank + 1);
    });
  }
  if (shown < res.ranking.size())
    append(s, "  ... {} more evaluated candidates (--top 0, --csv or --json for all)\n",
           res.ranking.size() - shown);
  return s;
}

// What the columns mean.
std::string table_legend(const SweepConfig& cfg, bool spmd, bool wide) {
  std::string legend = fmt::format(
      "(vs best: time above the fastest, \"tie\" within the {:.1f}% zones tolerance; wsched/wpred: "
      "average Wait Schedule / Wait Predecessor Time per core; tasks/c: executed tasks per core; "
      "segs: reduction segments; flags: under_1kb = contiguous < {} B, tile_over_shape, "
      "over_limit; zone: along the axis, among candidates that differ only there",
      cfg.zones.tolerance * 100.0, cfg.constraints.flag_contiguous_bytes);
  if (spmd)
    legend +=
        "; grid: blocks launched; waves: most blocks a core ran; tail%: the last wave's share of "
        "the cores; sub/blk: sub-tile steps per block; util%: busy share of cores x gen_time";
  legend += wide ? ")" : "; --wide for every column)";
  std::string s;
  append(s, "\n  {}\n", wrap(legend, 2, 3, kTerminalColumns));
  return s;
}

// Which points of the recommended's series (`members`, along the axis) the zones list shows.
// A long axis is condensed to its ends, zone boundaries, powers of two and the best's
// neighbours.
std::vector<bool> kept_zone_rows(const SweepResult& res, const std::vector<size_t>& members,
                                 const CandidateResult& b, size_t top) {
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
  return keep;
}

// The zones along the axis of the recommended's series (`b` the recommended), one line per
// point kept, with its evidence.
std::string zones_text(const SweepConfig& cfg, const SweepResult& res, const CandidateResult& b,
                       size_t top) {
  std::string s;
  const auto members = series_members(res, b.series);
  if (members.size() <= 1) return s;
  append(s, "\n  zones along {} ({}):\n", res.axis_label, series_fixed_text(res, b));
  const std::vector<bool> keep = kept_zone_rows(res, members, b, top);
  for (size_t k = 0; k < members.size(); ++k) {
    if (!keep[k]) {
      if (k > 0 && keep[k - 1]) append(s, "    ...\n");
      continue;
    }
    const auto& c = res.candidates[members[k]];
    const std::string head =
        fmt::format("  {} {:<18} {:>11.3f} us  {:<15} ", c.index == b.index ? "*" : " ",
                    axis_value_text(res, c), objective_of(cfg, c), zone_label(c.zone));
    // The evidence follows on the same line when it fits, else on its own lines below.
    if (head.size() + c.zone_evidence.size() <= kTerminalColumns)
      append(s, "{}{}\n", head, c.zone_evidence);
    else
      append(s, "{}\n      {}\n", head.substr(0, head.find_last_not_of(' ') + 1),
             wrap(c.zone_evidence, 6, 6, kTerminalColumns));
  }
  return s;
}

// The recommendation: why, what binds it, the next lever, its zones and the limits it is over.
std::string recommendation_text(const SweepConfig& cfg, const Hardware& hw, const SweepResult& res,
                                size_t top) {
  std::string s;
  if (!res.recommended) {
    append(s, "\n  no candidate passed the pre-check\n");
    return s;
  }
  const auto& b = res.candidates[*res.recommended];
  append(s, "\n  * recommended: {}\n", wrap(res.why, 17, 4, kTerminalColumns));
  if (const auto uses = resource_uses(b, hw); !uses.empty())
    append(s, "    {}\n", wrap(binding_text(uses), 4, 6, kTerminalColumns));
  if (const std::string lever = next_lever(cfg, hw, res); !lever.empty())
    append(s, "    {}\n", wrap(lever, 4, 6, kTerminalColumns));
  s += zones_text(cfg, res, b, top);
  for (const auto& v : b.limit_violations) append(s, "  recommended is over a limit: {}\n", v);
  return s;
}

// The rejected candidates: counts by class, then each reason once, with the candidates it
// rejected (a count when several share it word for word), in candidate order; the first 10
// reasons unless `top` is 0.
std::string rejected_text(const SweepResult& res, size_t top) {
  std::string s;
  if (res.rejected_by_class.empty()) return s;
  std::string counts;
  for (const auto& [cls, n] : res.rejected_by_class)
    counts += fmt::format("{}{} {}", counts.empty() ? "" : ", ", cls, n);
  append(s, "\n  rejected by the pre-check: {} ({})\n", res.candidates.size() - res.ranking.size(),
         counts);
  struct Group {
    std::string reason;  // "class: reason"
    std::vector<std::string> labels;
  };
  std::vector<Group> groups;
  std::map<std::string, size_t> group_of;
  for (const auto& c : res.candidates) {
    if (c.ok) continue;
    const std::string reason = c.reject_class + ": " + c.reason;
    const auto [it, added] = group_of.try_emplace(reason, groups.size());
    if (added) groups.push_back({reason, {}});
    groups[it->second].labels.push_back(candidate_label(c));
  }
  constexpr size_t kNamed = 3;  // candidates named in a group's line
  for (size_t g = 0; g < groups.size(); ++g) {
    if (top > 0 && g >= 10) {
      append(s, "    ... {} more reasons (--top 0, --csv or --json for every one)\n",
             groups.size() - g);
      break;
    }
    const auto& labels = groups[g].labels;
    std::string who = labels.front();
    if (labels.size() > 1) {
      const size_t named = std::min(labels.size(), kNamed);
      who = fmt::format("{} candidates ({}{})", labels.size(),
                        fmt::join(labels.begin(), labels.begin() + static_cast<long>(named), ", "),
                        labels.size() > named ? ", ..." : "");
    }
    append(s, "    {}\n", wrap(who + ": " + groups[g].reason, 4, 6, kTerminalColumns));
  }
  return s;
}

}  // namespace

std::string sweep_table(const SweepConfig& cfg, const Hardware& hw, const SweepResult& res,
                        size_t top, bool wide) {
  std::string s = table_heading(cfg, hw, res);
  const CandidateResult* best = res.recommended ? &res.candidates[*res.recommended] : nullptr;
  const bool spmd = spmd_sweep(cfg);
  const std::vector<Column> cols = table_columns(cfg, res, best, spmd);
  s += ranked_rows(res, best, shown_columns(cols, wide), top);
  s += table_legend(cfg, spmd, wide);
  s += recommendation_text(cfg, hw, res, top);
  s += rejected_text(res, top);
  return s;
}

std::string sweep_csv(const SweepConfig& cfg, const Hardware& hw, const SweepResult& res) {
  size_t rank = cfg.base.shape.size();
  for (const auto& c : res.candidates) rank = std::max(rank, c.tile.size());
  std::string s = "op,shape,dtype,hardware,rank,index,";
  for (size_t d = 0; d < rank; ++d) append(s, "tile{},", d);
  // An spmd sweep adds its launch (grid, block) and per-block figures after the loop count.
  const bool spmd = spmd_sweep(cfg);
  s += "loop_count,";
  const bool named = !cfg.program_tiles.empty();
  if (named) s += "program_tiles,";
  const bool params = !cfg.param_values.empty();
  if (params) s += "params,";
  if (spmd) {
    s += "grid,block,";
    for (const auto& f : spmd_fields()) append(s, "{},", f.name);
  }
  s += "status,reject_class,reason," + metrics_csv_header() +
       ",contiguous_bytes,auto_tiles,prod_tile,ub_bytes,buffer_depth,reduction_segments,flags,"
       "zone,zone_evidence,dominant_psg,psg_avg_dur_us,psg_sum_dur_us,recommended\n";
  const std::string kernel =
      fmt::format("{},{},{},{},", csv_field(cfg.base.op), tile_csv(cfg.base.shape),
                  dtype_name(cfg.base.dtype), csv_field(hw.name));
  const auto order = report_order(res);
  for (size_t pos = 0; pos < order.size(); ++pos) {
    const auto& c = res.candidates[order[pos]];
    const PsgMetrics* dom = c.ok ? dominant_psg(c.psg) : nullptr;
    const bool rec = res.recommended && *res.recommended == c.index;
    s += kernel;
    append(s, "{},{},", c.ok ? fmt::format("{}", pos + 1) : "", c.index);
    for (size_t d = 0; d < rank; ++d)
      s += d < c.tile.size() ? fmt::format("{},", c.tile[d]) : std::string(",");
    append(s, "{},", c.loop_count);
    if (named) {
      std::string t;
      for (const auto& [name, dims] : c.named_tiles)
        t += (t.empty() ? "" : ";") + name + "=" + tile_csv(dims);
      append(s, "{},", csv_field(t));
    }
    if (params) append(s, "{},", csv_field(c.params.dump()));
    if (spmd) {
      append(s, "{},{},", c.grid, tile_csv(c.block));
      for (const auto& f : spmd_fields()) {
        if (!c.spmd.valid)
          s += ",";
        else if (f.integer)
          append(s, "{},", static_cast<int64_t>(f.get(c.spmd)));
        else
          append(s, "{:.6f},", f.get(c.spmd));
      }
    }
    append(s, "{},{},{},{},", c.ok ? "ok" : "rejected", c.reject_class, csv_field(c.reason),
           metrics_csv_cells(c.ok ? &c : nullptr));
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
                {"objective", std::string(objective_info(cfg.objective).name)},
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
    if (!c.named_tiles.empty()) e["program_tiles"] = named_tiles_json(c.named_tiles);
    if (!c.params.empty()) e["params"] = c.params;
    if (c.grid > 0) {
      e["grid"] = c.grid;
      e["block"] = c.block.empty() ? nlohmann::json(nullptr) : nlohmann::json(c.block);
    }
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
      nlohmann::json m = metrics_to_json(c, false);
      m["ub_bytes"] = c.diag.ub_bytes;
      m["buffer_depth"] = c.diag.buffer_depth;
      m["reduction_segments"] = c.diag.reduction_segments;
      const PsgMetrics* dom = dominant_psg(c.psg);
      m["dominant_psg"] = dom ? nlohmann::json(dom->name) : nlohmann::json(nullptr);
      e["metrics"] = m;
      e["axis_value"] = c.axis_value;
      e["series"] = c.series;
      if (c.spmd.valid) {
        e["spmd"] = nlohmann::json::object();
        for (const auto& f : spmd_fields())
          e["spmd"][f.name] = f.integer ? nlohmann::json(static_cast<int64_t>(f.get(c.spmd)))
                                        : nlohmann::json(f.get(c.spmd));
      }
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
                        {"why", res.why},
                        {"binding", binding_json(resource_uses(r, hw))},
                        {"next_lever", next_lever(cfg, hw, res)}};
    if (!r.named_tiles.empty()) j["recommended"]["program_tiles"] = named_tiles_json(r.named_tiles);
    if (!r.params.empty()) j["recommended"]["params"] = r.params;
    if (r.grid > 0) {
      j["recommended"]["grid"] = r.grid;
      j["recommended"]["block"] =
          r.block.empty() ? nlohmann::json(nullptr) : nlohmann::json(r.block);
    }
  } else {
    j["recommended"] = nullptr;
  }
  return j;
}

Plot sweep_plot(const SweepConfig& cfg, const Hardware& hw, const SweepResult& res) {
  Plot p;
  p.title = "tilesim sweep: " + kernel_title(cfg, hw);
  p.x_label = res.axis_label + " (log2 scale)";
  p.y_label = "modeled " + std::string(objective_info(cfg.objective).name);
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
  main.name = series_fixed_text(res, best);
  // Few points are each labelled (time on the recommended's series, the tile on the others) and
  // drawn opaque; many stay a cloud.
  constexpr size_t kLabelled = 16;
  size_t n_others = 0;
  for (const auto& c : res.candidates) n_others += c.ok && c.series != best.series;
  if (n_others <= kLabelled) others.radius = 4, others.opacity = 0.9;
  for (const auto& c : res.candidates)
    if (c.ok && c.series != best.series)
      others.points.push_back(
          {c.axis_value, objective_of(cfg, c), "",
           n_others <= kLabelled ? (c.grid > 0 ? candidate_label(c) : tile_text(c.tile)) : ""});
  for (size_t i : members) {
    const auto& c = res.candidates[i];
    main.points.push_back(
        {c.axis_value, objective_of(cfg, c), zone_color(c.zone),
         members.size() <= kLabelled ? fmt::format("{:.1f}", objective_of(cfg, c)) : ""});
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
  p.mark =
      PlotMark{best.axis_value, objective_of(cfg, best),
               fmt::format("best: {}, {:.2f} us", candidate_label(best), objective_of(cfg, best))};
  p.subtitle = fmt::format("{} evaluated, {} rejected; zones of the recommended's series shaded",
                           res.ranking.size(), res.candidates.size() - res.ranking.size());
  return p;
}

std::string sweep_svg(const SweepConfig& cfg, const Hardware& hw, const SweepResult& res) {
  return render_svg(sweep_plot(cfg, hw, res));
}

namespace {

using MapKind = HeatMapAxes::Kind;

int64_t map_value(MapKind k, int dim, const Dims& tile, int64_t loop, int64_t grid,
                  const Dims& block) {
  switch (k) {
    case MapKind::kTileDim:
      return static_cast<size_t>(dim) < tile.size() ? tile[static_cast<size_t>(dim)] : 0;
    case MapKind::kBlockDim:
      return static_cast<size_t>(dim) < block.size() ? block[static_cast<size_t>(dim)] : 0;
    case MapKind::kLoopCount:
      return loop;
    case MapKind::kGrid:
      return grid;
  }
  return 0;
}

std::string map_label(MapKind k, int dim, bool spmd) {
  switch (k) {
    case MapKind::kTileDim:
      return fmt::format("{}[{}]", spmd ? "sub-tile" : "tile", dim);
    case MapKind::kBlockDim:
      return fmt::format("block[{}]", dim);
    case MapKind::kLoopCount:
      return "loop count";
    case MapKind::kGrid:
      return "grid";
  }
  return "";
}

}  // namespace

HeatMapAxes heat_map_axes(const std::vector<Candidate>& candidates) {
  struct Axis {
    MapKind kind;
    int dim;
    size_t values;
  };
  std::vector<Axis> varying;
  auto count = [&](MapKind k, int dim) {
    std::set<int64_t> v;
    for (const auto& c : candidates)
      v.insert(map_value(k, dim, c.tile, c.loop_count, c.grid, c.block));
    if (v.size() > 1) varying.push_back({k, dim, v.size()});
  };
  const size_t rank = candidates.empty() ? 0 : candidates.front().tile.size();
  for (MapKind k : {MapKind::kGrid, MapKind::kLoopCount}) count(k, 0);
  const size_t rows = varying.size();
  for (size_t d = 0; d < rank; ++d) count(MapKind::kTileDim, static_cast<int>(d));
  for (size_t d = 0; d < rank; ++d) count(MapKind::kBlockDim, static_cast<int>(d));
  // x: the dim with the most values (the first on a tie); y: the grid or loop count, else the
  // next dim.
  std::stable_sort(varying.begin() + static_cast<std::ptrdiff_t>(rows), varying.end(),
                   [](const Axis& a, const Axis& b) { return a.values > b.values; });
  if (varying.size() < 2) {
    const std::string one =
        varying.empty()
            ? "nothing varies"
            : "only " + map_label(varying.front().kind, varying.front().dim, false) + " varies";
    throw Error(
        "--svg-map: a heat map needs two swept axes (a tile dim and the loop count or "
        "grid, or two tile dims); in this sweep " +
        one + " (use --svg for one axis)");
  }
  // varying: the grid / loop count first (`rows` of them), then the dims, most values first.
  const bool dims = varying.size() > rows;
  const Axis& x = dims && rows > 0 ? varying[rows] : varying[rows > 0 ? 1 : 0];
  const Axis& y = varying[rows > 0 ? 0 : 1];
  HeatMapAxes a;
  a.x = x.kind, a.x_dim = x.dim;
  a.y = y.kind, a.y_dim = y.dim;
  return a;
}

std::string sweep_heat_map_svg(const SweepConfig& cfg, const Hardware& hw, const SweepResult& res) {
  return render_heat_map_svg(sweep_heat_map(cfg, hw, res));
}

HeatMap sweep_heat_map(const SweepConfig& cfg, const Hardware& hw, const SweepResult& res) {
  std::vector<Candidate> cands;
  for (const auto& c : res.candidates)
    cands.push_back({c.tile, c.loop_count, c.grid, c.block, c.named_tiles, c.params});
  const HeatMapAxes axes = heat_map_axes(cands);
  const bool spmd = spmd_sweep(cfg);
  auto xv = [&](const CandidateResult& c) {
    return map_value(axes.x, axes.x_dim, c.tile, c.loop_count, c.grid, c.block);
  };
  auto yv = [&](const CandidateResult& c) {
    return map_value(axes.y, axes.y_dim, c.tile, c.loop_count, c.grid, c.block);
  };
  std::set<int64_t> xs, ys;
  for (const auto& c : res.candidates) xs.insert(xv(c)), ys.insert(yv(c));
  // A long axis keeps its ends, its powers of two and the recommendation's value: a cell per
  // value would make a picture no one can read (the CSV keeps every candidate).
  std::string condensed;
  auto keep = [&](const std::set<int64_t>& all, int64_t best, const std::string& label) {
    constexpr size_t kMaxValues = 48;
    if (all.size() <= kMaxValues) return std::vector<int64_t>(all.begin(), all.end());
    std::vector<int64_t> v;
    for (int64_t x : all)
      if (x == *all.begin() || x == *all.rbegin() || x == best || (x > 0 && (x & (x - 1)) == 0))
        v.push_back(x);
    condensed += fmt::format(
        "; {} of the {} values of {} shown (the ends, powers of two, the "
        "recommendation's)",
        v.size(), all.size(), label);
    return v;
  };
  const CandidateResult* rec = res.recommended ? &res.candidates[*res.recommended] : nullptr;
  const std::vector<int64_t> xl = keep(xs, rec ? xv(*rec) : 0, map_label(axes.x, axes.x_dim, spmd));
  const std::vector<int64_t> yl = keep(ys, rec ? yv(*rec) : 0, map_label(axes.y, axes.y_dim, spmd));
  HeatMap m;
  m.title =
      fmt::format("{}: {} by {} and {}", kernel_title(cfg, hw), objective_info(cfg.objective).name,
                  map_label(axes.x, axes.x_dim, spmd), map_label(axes.y, axes.y_dim, spmd));
  m.subtitle =
      "each cell: the fastest candidate there (hover for it); '-': none, 'x': only "
      "rejected ones (hover for why)" +
      condensed;
  m.x_label = map_label(axes.x, axes.x_dim, spmd);
  m.y_label = map_label(axes.y, axes.y_dim, spmd);
  m.value_label = "us";
  for (int64_t x : xl) m.xs.push_back(fmt::format("{}", x));
  for (int64_t y : yl) m.ys.push_back(fmt::format("{}", y));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  m.values.assign(yl.size(), std::vector<double>(xl.size(), nan));
  m.notes.assign(yl.size(), std::vector<std::string>(xl.size()));
  // The cell of a value (npos: a value the condensed axis left out).
  auto at = [](const std::vector<int64_t>& v, int64_t x) {
    const auto it = std::lower_bound(v.begin(), v.end(), x);
    return it != v.end() && *it == x ? static_cast<size_t>(it - v.begin()) : std::string::npos;
  };
  for (const auto& c : res.candidates) {
    const size_t r = at(yl, yv(c)), col = at(xl, xv(c));
    if (r == std::string::npos || col == std::string::npos) continue;
    if (!c.ok) {
      if (m.notes[r][col].empty()) m.notes[r][col] = "rejected: " + c.reject_class;
      continue;
    }
    const double t = objective_of(cfg, c);
    if (std::isnan(m.values[r][col]) || t < m.values[r][col]) {
      m.values[r][col] = t;
      m.notes[r][col] = candidate_label(c);
    }
  }
  m.empty_text = "-";
  if (res.recommended) {
    const auto& b = res.candidates[*res.recommended];
    m.mark = std::pair{at(yl, yv(b)), at(xl, xv(b))};
    m.mark_label = "recommended, " + candidate_label(b);
  }
  return m;
}

}  // namespace tilesim
