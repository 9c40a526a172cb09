#pragma once
// Zone classification along one swept axis, the rulebook's rule 2 method applied to modeled
// evidence (never to a position on the axis):
//
//  1. The best point b is the fastest (lowest gen_time_us; on a tie the first in axis order).
//  2. Sweet spot: every point whose gen_time_us is within `tolerance` of b's (b included).
//  3. A point slower than that on the finer side of b (more, smaller tasks: a larger loop count
//     or a smaller tile) is TOO FRAGMENTED if its average Wait Schedule Time per core jumped: it
//     rose above b's by more than `evidence_rise` (relative) and `min_abs_rise_us`, and the rise
//     is at least `min_wait_share` of the time the point lost against b (the waits explain the
//     loss: scheduling and dispatch overhead is what grew). Average executed tasks per core is
//     printed with it.
//  4. A point slower than the sweet spot on the coarser side (fewer, larger tasks) is TOO COARSE if
//     the dominant PSG's avg_dur or sum_dur rose above b's by more than `evidence_rise` (and
//     `min_abs_rise_us`): single tasks got heavier. The dominant PSG is the point's PSG with the
//     largest sum_dur, compared with the PSG of the same name at b (b's dominant if absent).
//  5. A slower point whose side's evidence did not rise is SLOWER (no zone): the model slowed it
//     through a mechanism the rule 2 metrics do not show (e.g. DMA fragmentation in the tile).
//
// The evidence behind every verdict is returned as one line of text.

#include <string>
#include <vector>

#include "sim/metrics.hpp"

namespace tilesim {

enum class Zone { kNone, kTooFragmented, kSweetSpot, kTooCoarse, kSlower };
const char* zone_name(Zone z);   // "too_fragmented", "sweet_spot", "too_coarse", "slower", ""
const char* zone_label(Zone z);  // "too fragmented", "sweet spot", "too coarse", "slower", "-"

struct ZoneOptions {
  double tolerance = 0.02;        // sweet spot: gen_time within this fraction of the best
  double evidence_rise = 0.05;    // a metric "rises" when it exceeds the best's by this fraction
  double min_abs_rise_us = 0.05;  // ... and by at least this much
  double min_wait_share = 0.25;   // a wait rise must cover this share of the time lost
};

struct ZonePoint {
  double x = 0;  // swept axis value
  double gen_time_us = 0;
  double wait_schedule_us = 0;  // average Wait Schedule Time per core
  double tasks_per_core = 0;    // average executed tasks per core
  std::vector<PsgMetrics> psg;
};

// Along the axis, does a larger x mean finer granularity (loop count) or coarser (tile size)?
enum class Granularity { kFinerWithLargerX, kCoarserWithLargerX };

struct ZoneVerdict {
  Zone zone = Zone::kNone;
  std::string evidence;
};

// One verdict per point, in the input order. Points must have distinct x.
std::vector<ZoneVerdict> classify_zones(const std::vector<ZonePoint>& points, Granularity dir,
                                        const ZoneOptions& options = {});

// The PSG with the largest sum_dur (nullptr when there is none).
const PsgMetrics* dominant_psg(const std::vector<PsgMetrics>& psg);

}  // namespace tilesim
