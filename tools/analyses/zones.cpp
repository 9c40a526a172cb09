#include "tools/analyses/zones.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "model/error.hpp"

namespace tilesim {

const char* zone_name(Zone z) {
  return enum_name(kZoneNames, z);
}

const char* zone_label(Zone z) {
  return enum_name(kZoneLabels, z);
}

const PsgMetrics* dominant_psg(const std::vector<PsgMetrics>& psg) {
  const PsgMetrics* best = nullptr;
  for (const auto& p : psg)
    if (!best || p.sum_dur_us > best->sum_dur_us) best = &p;
  return best;
}

double gap_pct(double v, double ref) {
  return ref > 0 ? (v / ref - 1.0) * 100.0 : 0.0;
}

namespace {

const PsgMetrics* find_psg(const std::vector<PsgMetrics>& psg, const std::string& name) {
  for (const auto& p : psg)
    if (p.name == name) return &p;
  return nullptr;
}

// Steps 1 and 2, shared by both readings: checks the points, finds the best (lowest time, the
// smallest x on a tie) and marks the sweet spot in `out`. Returns false when there is nothing to
// compare (fewer than two points).
template <class Point>
bool best_and_sweet_spot(const std::vector<Point>& points, const ZoneOptions& opt,
                         std::vector<ZoneVerdict>& out, size_t& b) {
  out.assign(points.size(), ZoneVerdict{});
  if (points.empty()) return false;
  for (size_t i = 0; i < points.size(); ++i)
    for (size_t j = i + 1; j < points.size(); ++j)
      if (points[i].x == points[j].x)
        throw InternalError(
            fmt::format("zones: two points at the same axis value {}", points[i].x));
  if (points.size() == 1) {
    out[0].evidence = "the only point on its axis: nothing to compare";
    return false;
  }
  b = 0;
  for (size_t i = 1; i < points.size(); ++i) {
    const auto& p = points[i];
    const auto& q = points[b];
    if (p.gen_time_us < q.gen_time_us || (p.gen_time_us == q.gen_time_us && p.x < q.x)) b = i;
  }
  const double best = points[b].gen_time_us;
  for (size_t i = 0; i < points.size(); ++i) {
    const double t = points[i].gen_time_us;
    if (t > best * (1.0 + opt.tolerance)) continue;
    out[i].zone = Zone::kSweetSpot;
    out[i].evidence = i == b ? fmt::format("fastest on the axis ({:.3f} us)", t)
                             : fmt::format("{:+.1f}% of the best, within the {:.1f}% tolerance",
                                           gap_pct(t, best), opt.tolerance * 100.0);
  }
  return true;
}

using PerCore = std::vector<std::pair<std::string, double>>;

// Step 5: "; <figure> grew most: X us vs Y at best (+Z)" for the per-core figure of `p` that
// rose most above `best`'s (by more than min_abs_rise_us: the point is already slower than the
// tolerance, so any clear rise is a lead), or "".
std::string grew_most(const PerCore& p, const PerCore& best, const ZoneOptions& opt) {
  const std::pair<std::string, double>* top = nullptr;
  double top_rise = 0;
  for (const auto& f : p)
    for (const auto& g : best)
      if (f.first == g.first && f.second - g.second > std::max(opt.min_abs_rise_us, top_rise)) {
        top = &f;
        top_rise = f.second - g.second;
      }
  if (!top) return "";
  return fmt::format("; {} grew most: {:.3f} us vs {:.3f} at best (+{:.3f})", top->first,
                     top->second, top->second - top_rise, top_rise);
}

// Step 3: appends to `out` what grew between `best` and the finer point `p` and returns whether
// the runtime's overhead explains the time lost.
bool runtime_overhead(const ZonePoint& p, const ZonePoint& best, const ZoneOptions& opt,
                      std::string& out) {
  auto rises = [&](double v, double ref) {
    return v > ref * (1.0 + opt.evidence_rise) && v - ref > opt.min_abs_rise_us;
  };
  const double lost = p.gen_time_us - best.gen_time_us;
  const double wait_rise = p.wait_schedule_us - best.wait_schedule_us;
  const double build_rise = p.head_build_us - best.head_build_us;
  const bool waits = rises(p.wait_schedule_us, best.wait_schedule_us);
  const bool builds = rises(p.head_build_us, best.head_build_us);
  const double explained = (waits ? wait_rise : 0.0) + (builds ? build_rise : 0.0);
  const bool enough = (waits || builds) && explained >= opt.min_wait_share * lost;
  std::vector<std::string> grew;
  if (builds)
    grew.push_back(fmt::format("root builds before the first task {:.3f} us vs {:.3f} (+{:.3f})",
                               p.head_build_us, best.head_build_us, build_rise));
  // The waits' cause: the AICPU that fills the larger share of the span.
  auto share = [](double us, double span) { return span > 0 ? us / span : 0.0; };
  const double sched = share(p.schedule_us, p.span_us);
  const double later = share(p.later_build_us, p.span_us);
  std::string cause;
  if (sched > 0 && sched >= later)
    cause = fmt::format(
        ": each scheduler thread's completions, resolves and dispatches take {:.0f}% of the span "
        "({:.3f} of {:.3f} us; {:.0f}% at best)",
        sched * 100.0, p.schedule_us, p.span_us, share(best.schedule_us, best.span_us) * 100.0);
  else if (later > 0)
    cause = fmt::format(
        ": the control AICPU builds later device tasks for {:.0f}% of the span ({:.3f} of {:.3f} "
        "us; {:.0f}% at best)",
        later * 100.0, p.later_build_us, p.span_us,
        share(best.later_build_us, best.span_us) * 100.0);
  grew.push_back(fmt::format(
      "wait_schedule/core {:.3f} us vs {:.3f} at best ({}){}", p.wait_schedule_us,
      best.wait_schedule_us,
      waits ? (enough ? "jumped" : "rose, too little to explain the loss") : "did not rise",
      waits ? cause : ""));
  out += fmt::format("{}; {:.0f}% of the {:.3f} us lost; tasks/core {:.1f} vs {:.1f}",
                     fmt::join(grew, "; "), lost > 0 ? 100.0 * explained / lost : 0.0, lost,
                     p.tasks_per_core, best.tasks_per_core);
  if (p.roots > 0) out += fmt::format(", roots {} vs {}", p.roots, best.roots);
  return enough;
}

}  // namespace

std::vector<ZoneVerdict> classify_zones(const std::vector<ZonePoint>& points, Granularity dir,
                                        const ZoneOptions& opt) {
  std::vector<ZoneVerdict> out;
  size_t b = 0;
  if (!best_and_sweet_spot(points, opt, out, b)) return out;
  const ZonePoint& best = points[b];
  auto rises = [&](double v, double ref) {
    return v > ref * (1.0 + opt.evidence_rise) && v - ref > opt.min_abs_rise_us;
  };
  const PsgMetrics* best_dom = dominant_psg(best.psg);
  for (size_t i = 0; i < points.size(); ++i) {
    const ZonePoint& p = points[i];
    ZoneVerdict& v = out[i];
    if (v.zone == Zone::kSweetSpot) continue;
    const double slower = gap_pct(p.gen_time_us, best.gen_time_us);
    const bool finer = dir == Granularity::kFinerWithLargerX ? p.x > best.x : p.x < best.x;
    if (finer) {
      v.evidence =
          fmt::format("{} than the best ({:g} vs {:g}), {:+.1f}% time; ",
                      dir == Granularity::kFinerWithLargerX ? "more loops" : "smaller tiles", p.x,
                      best.x, slower);
      const bool fragmented = runtime_overhead(p, best, opt, v.evidence);
      v.zone = fragmented ? Zone::kTooFragmented : Zone::kSlower;
      if (!fragmented) v.evidence += grew_most(p.per_core, best.per_core, opt);
      continue;
    }
    const PsgMetrics* dom = dominant_psg(p.psg);
    const PsgMetrics* ref = dom ? find_psg(best.psg, dom->name) : nullptr;
    if (!ref) ref = best_dom;
    bool heavier = false;
    std::string what = "no PSG";
    if (dom && ref) {
      const bool avg = rises(dom->avg_dur_us, ref->avg_dur_us);
      const bool sum = rises(dom->sum_dur_us, ref->sum_dur_us);
      heavier = avg || sum;
      what = fmt::format(
          "dominant PSG '{}' avg_dur {:.3f} us vs {:.3f} ({:+.0f}%), sum_dur {:.3f} us vs {:.3f} "
          "({:+.0f}%) ({})",
          dom->name, dom->avg_dur_us, ref->avg_dur_us, gap_pct(dom->avg_dur_us, ref->avg_dur_us),
          dom->sum_dur_us, ref->sum_dur_us, gap_pct(dom->sum_dur_us, ref->sum_dur_us),
          heavier ? "rose" : "did not rise");
    }
    v.zone = heavier ? Zone::kTooCoarse : Zone::kSlower;
    v.evidence =
        fmt::format("{} than the best ({:g} vs {:g}), {:+.1f}% time; {}{}",
                    dir == Granularity::kFinerWithLargerX ? "fewer loops" : "larger tiles", p.x,
                    best.x, slower, what, heavier ? "" : grew_most(p.per_core, best.per_core, opt));
  }
  return out;
}

std::vector<ZoneVerdict> classify_spmd_zones(const std::vector<SpmdZonePoint>& points,
                                             Granularity dir, const ZoneOptions& opt) {
  std::vector<ZoneVerdict> out;
  size_t b = 0;
  if (!best_and_sweet_spot(points, opt, out, b)) return out;
  const SpmdZonePoint& best = points[b];
  const SpmdFigures& bf = best.spmd;
  auto rises = [&](double v, double ref) {
    return v > ref * (1.0 + opt.evidence_rise) && v - ref > opt.min_abs_rise_us;
  };
  for (size_t i = 0; i < points.size(); ++i) {
    const SpmdZonePoint& p = points[i];
    const SpmdFigures& f = p.spmd;
    ZoneVerdict& v = out[i];
    if (v.zone == Zone::kSweetSpot) continue;
    const bool finer = dir == Granularity::kFinerWithLargerX ? p.x > best.x : p.x < best.x;
    const double lost = p.gen_time_us - best.gen_time_us;
    // Named by what changed along the axis: the grid (finer with more blocks) or the sub-tile.
    const bool grid_axis = dir == Granularity::kFinerWithLargerX;
    const std::string head =
        fmt::format("{} than the best ({:g} vs {:g}), {:+.1f}% time",
                    grid_axis ? (finer ? "more blocks" : "fewer blocks")
                              : (finer ? "smaller sub-tiles" : "larger sub-tiles"),
                    p.x, best.x, gap_pct(p.gen_time_us, best.gen_time_us));
    // 3'. Idle cores, or an unbalanced last wave, when idle core time explains the loss.
    const bool idle =
        f.cores_used < f.cores && f.utilisation < bf.utilisation * (1.0 - opt.evidence_rise);
    const bool unbalanced = f.waves > 1 && f.tail_occupancy < opt.min_tail_occupancy &&
                            f.tail_exposed_us >= opt.min_wait_share * lost;
    if (idle || unbalanced) {
      v.zone = Zone::kTooCoarse;
      const std::string tail =
          fmt::format("{} wave{}, tail wave {}/{} cores ({:.0f}%)", f.waves,
                      f.waves == 1 ? "" : "s", f.tail_blocks, f.cores, f.tail_occupancy * 100.0);
      v.evidence = idle
                       ? fmt::format(
                             "{}; too few blocks for the cores: {} of {} cores idle (grid {}): {}; "
                             "utilisation {:.0f}% vs {:.0f}% at best",
                             head, f.cores - f.cores_used, f.cores, f.grid, tail,
                             f.utilisation * 100.0, bf.utilisation * 100.0)
                       : fmt::format(
                             "{}; unbalanced waves, the last too small for the cores: {}, under "
                             "{:.0f}%; it ran alone {:.3f} us, against {:.3f} us lost to the best",
                             head, tail, opt.min_tail_occupancy * 100.0, f.tail_exposed_us, lost);
      continue;
    }
    // 4'. Per-block overhead and tiny copies (finer side).
    if (finer) {
      std::string why;
      const double core_rise_per_core =
          (f.core_time_us - bf.core_time_us) / static_cast<double>(std::max<int64_t>(1, f.cores));
      if (p.tiny_copies)
        why = fmt::format("tiny copies: bursts of {} B under the {} B flag ({} B at best)",
                          f.burst_bytes, p.flag_bytes, bf.burst_bytes);
      else if (f.block_overhead_share > opt.max_block_overhead_share)
        why = fmt::format("block starts {:.1f}% of core time (over {:.1f}%; {:.1f}% at best)",
                          f.block_overhead_share * 100.0, opt.max_block_overhead_share * 100.0,
                          bf.block_overhead_share * 100.0);
      else if (core_rise_per_core > opt.min_abs_rise_us &&
               core_rise_per_core >= opt.min_wait_share * lost)
        why = fmt::format(
            "per-block overhead: core time {:.1f} us vs {:.1f} at best ({:+.0f}%) for the same "
            "work, {}-{} sub-tiles/block vs {}-{}",
            f.core_time_us, bf.core_time_us, gap_pct(f.core_time_us, bf.core_time_us),
            f.subtiles_min, f.subtiles_max, bf.subtiles_min, bf.subtiles_max);
      if (!why.empty()) {
        v.zone = Zone::kTooFragmented;
        v.evidence = head + "; " + why;
        continue;
      }
    }
    // 5'. Larger sub-tiles: each block's busy time rose (less to overlap).
    if (!finer && dir == Granularity::kCoarserWithLargerX &&
        rises(f.block_busy_us, bf.block_busy_us)) {
      v.zone = Zone::kTooCoarse;
      v.evidence = fmt::format(
          "{}; block busy {:.3f} us vs {:.3f} at best ({:+.0f}%): {}-{} sub-tiles/block vs {}-{} "
          "leave less to overlap",
          head, f.block_busy_us, bf.block_busy_us, gap_pct(f.block_busy_us, bf.block_busy_us),
          f.subtiles_min, f.subtiles_max, bf.subtiles_min, bf.subtiles_max);
      continue;
    }
    // Neither idle cores, a small tail wave, per-block overhead nor tiny copies: the waves'
    // arithmetic says whether more waves or longer blocks cost the time.
    v.zone = Zone::kSlower;
    v.evidence = fmt::format(
        "{}; {} wave{} (tail {:.0f}%) x {:.3f} us busy per block = {:.3f} us vs {} x {:.3f} = "
        "{:.3f} at best; {}-{} sub-tiles/block vs {}-{}, utilisation {:.0f}% vs {:.0f}%, block "
        "starts {:.1f}% of core time, bursts {} B{}",
        head, f.waves, f.waves == 1 ? "" : "s", f.tail_occupancy * 100.0, f.block_busy_us,
        static_cast<double>(f.waves) * f.block_busy_us, bf.waves, bf.block_busy_us,
        static_cast<double>(bf.waves) * bf.block_busy_us, f.subtiles_min, f.subtiles_max,
        bf.subtiles_min, bf.subtiles_max, f.utilisation * 100.0, bf.utilisation * 100.0,
        f.block_overhead_share * 100.0, f.burst_bytes, grew_most(p.per_core, best.per_core, opt));
  }
  return out;
}

}  // namespace tilesim
