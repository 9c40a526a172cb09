#include "tools/analyses/zones.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "model/error.hpp"

namespace tilesim {

const char* zone_name(Zone z) {
  switch (z) {
    case Zone::kTooFragmented:
      return "too_fragmented";
    case Zone::kSweetSpot:
      return "sweet_spot";
    case Zone::kTooCoarse:
      return "too_coarse";
    case Zone::kSlower:
      return "slower";
    case Zone::kNone:
      break;
  }
  return "";
}

const char* zone_label(Zone z) {
  switch (z) {
    case Zone::kTooFragmented:
      return "too fragmented";
    case Zone::kSweetSpot:
      return "sweet spot";
    case Zone::kTooCoarse:
      return "too coarse";
    case Zone::kSlower:
      return "slower";
    case Zone::kNone:
      break;
  }
  return "-";
}

const PsgMetrics* dominant_psg(const std::vector<PsgMetrics>& psg) {
  const PsgMetrics* best = nullptr;
  for (const auto& p : psg)
    if (!best || p.sum_dur_us > best->sum_dur_us) best = &p;
  return best;
}

namespace {

const PsgMetrics* find_psg(const std::vector<PsgMetrics>& psg, const std::string& name) {
  for (const auto& p : psg)
    if (p.name == name) return &p;
  return nullptr;
}

double pct(double v, double ref) {
  return ref > 0 ? (v / ref - 1.0) * 100.0 : 0.0;
}

}  // namespace

std::vector<ZoneVerdict> classify_zones(const std::vector<ZonePoint>& points, Granularity dir,
                                        const ZoneOptions& opt) {
  std::vector<ZoneVerdict> out(points.size());
  if (points.empty()) return out;
  for (size_t i = 0; i < points.size(); ++i)
    for (size_t j = i + 1; j < points.size(); ++j)
      if (points[i].x == points[j].x)
        throw InternalError(
            fmt::format("zones: two points at the same axis value {}", points[i].x));
  if (points.size() == 1) {
    out[0].evidence = "the only point on its axis: nothing to compare";
    return out;
  }
  // The best point: lowest time, the smallest x on a tie (deterministic).
  size_t b = 0;
  for (size_t i = 1; i < points.size(); ++i) {
    const auto& p = points[i];
    const auto& q = points[b];
    if (p.gen_time_us < q.gen_time_us || (p.gen_time_us == q.gen_time_us && p.x < q.x)) b = i;
  }
  const ZonePoint& best = points[b];
  auto rises = [&](double v, double ref) {
    return v > ref * (1.0 + opt.evidence_rise) && v - ref > opt.min_abs_rise_us;
  };
  const PsgMetrics* best_dom = dominant_psg(best.psg);
  for (size_t i = 0; i < points.size(); ++i) {
    const ZonePoint& p = points[i];
    ZoneVerdict& v = out[i];
    const double slower = pct(p.gen_time_us, best.gen_time_us);
    if (p.gen_time_us <= best.gen_time_us * (1.0 + opt.tolerance)) {
      v.zone = Zone::kSweetSpot;
      v.evidence = i == b ? fmt::format("fastest on the axis ({:.3f} us)", p.gen_time_us)
                          : fmt::format("{:+.1f}% of the best, within the {:.1f}% tolerance",
                                        slower, opt.tolerance * 100.0);
      continue;
    }
    const bool finer = dir == Granularity::kFinerWithLargerX ? p.x > best.x : p.x < best.x;
    if (finer) {
      const double lost = p.gen_time_us - best.gen_time_us;
      const double rise = p.wait_schedule_us - best.wait_schedule_us;
      const bool rose = rises(p.wait_schedule_us, best.wait_schedule_us);
      const bool waits = rose && rise >= opt.min_wait_share * lost;
      v.zone = waits ? Zone::kTooFragmented : Zone::kSlower;
      v.evidence = fmt::format(
          "finer side, {:+.1f}% time; wait_schedule/core {:.3f} us vs {:.3f} at best ({}, "
          "{:.0f}% of the {:.3f} us lost); tasks/core {:.1f} vs {:.1f}",
          slower, p.wait_schedule_us, best.wait_schedule_us,
          waits ? "jumped" : (rose ? "rose, too little to explain the loss" : "did not rise"),
          lost > 0 ? 100.0 * rise / lost : 0.0, lost, p.tasks_per_core, best.tasks_per_core);
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
          dom->name, dom->avg_dur_us, ref->avg_dur_us, pct(dom->avg_dur_us, ref->avg_dur_us),
          dom->sum_dur_us, ref->sum_dur_us, pct(dom->sum_dur_us, ref->sum_dur_us),
          heavier ? "rose" : "did not rise");
    }
    v.zone = heavier ? Zone::kTooCoarse : Zone::kSlower;
    v.evidence = fmt::format("coarser side, {:+.1f}% time; {}", slower, what);
  }
  return out;
}

}  // namespace tilesim
