#pragma once
// Zone classification along one swept axis, the rulebook's rule 2 method applied to modeled
// evidence (never to a position on the axis):
//
//  1. The best point b is the fastest (lowest gen_time_us; on a tie the first in axis order).
//  2. Sweet spot: every point whose gen_time_us is within `tolerance` of b's (b included).
//  3. A point slower than that on the finer side of b (more, smaller tasks: a larger loop count
//     or a smaller tile) is TOO FRAGMENTED if the runtime's overhead grew: its average Wait
//     Schedule Time per core, or (when the objective counts the head) its root builds before the
//     first task, rose above b's by more than `evidence_rise` (relative) and `min_abs_rise_us`,
//     and the two rises together are at least `min_wait_share` of the time the point lost against
//     b. The evidence names what grew: the root builds before the first task, and for the waits
//     the AICPU that fills more of the span, the control AICPU building later device tasks or the
//     scheduler threads' completions, resolves and dispatches; then tasks per core and roots.
//  4. A point slower than the sweet spot on the coarser side (fewer, larger tasks) is TOO COARSE if
//     the dominant PSG's avg_dur or sum_dur rose above b's by more than `evidence_rise` (and
//     `min_abs_rise_us`): single tasks got heavier. The dominant PSG is the point's PSG with the
//     largest sum_dur, compared with the PSG of the same name at b (b's dominant if absent).
//  5. A slower point whose side's evidence did not rise is SLOWER (no zone): the model slowed it
//     through a mechanism the rule 2 metrics do not show (e.g. DMA fragmentation in the tile);
//     its evidence names the per-core figure that grew most (a pipe's busy time: the copies, the
//     vector or cube work; or the waits for predecessors).
//
// An spmd sweep (grid blocks walking their sub-tiles) reads the zones the SPMD way
// (classify_spmd_zones), from the run's per-core metrics (spmd_figures.hpp); steps 1 and 2 are
// the same, then a slower point is
//  3'. TOO COARSE, on either side, if cores sat idle or waves are unbalanced: fewer blocks than
//     cores (cores without a block) and its core utilisation (busy time over cores x gen_time)
//     fell below b's by more than `evidence_rise`; or the last wave's occupancy (cores that ran
//     the most blocks / cores) is below `min_tail_occupancy` and the time that wave ran alone
//     covers at least `min_wait_share` of the time lost. A grid of cores + 1 is finer than cores
//     but has a one-block tail wave.
//  4'. TOO FRAGMENTED (finer side only: a larger grid or a smaller sub-tile) if per-block
//     overhead or tiny copies dominate: the block's contiguous copies are under the rulebook's
//     flag (constraints.flag_contiguous_bytes), or block starts (Wait Schedule) exceed
//     `max_block_overhead_share` of its core time, or its core time (busy + Wait Schedule, summed
//     over cores) rose above b's, per core by more than `min_abs_rise_us` and by at least
//     `min_wait_share` of the time lost (the same work cost more core time: fill, drain and
//     start of more, shorter blocks).
//  5'. TOO COARSE on the coarser side of a sub-tile axis if a block's busy time rose by more than
//     `evidence_rise`: fewer, larger sub-tiles per block leave less to overlap (fill and drain
//     exposed). Otherwise SLOWER, with the wave arithmetic (waves x busy time per block, against
//     the best's) and the per-core figure that grew most.
//
// The evidence behind every verdict is returned as one line of text.

#include <string>
#include <utility>
#include <vector>

#include "model/enum_names.hpp"
#include "sim/metrics.hpp"
#include "tools/analyses/spmd_figures.hpp"
#include "tools/formats/zone_options.hpp"

namespace tilesim {

enum class Zone { kNone, kTooFragmented, kSweetSpot, kTooCoarse, kSlower };
// As JSON and CSV name a zone ("" for none), and as tables print it.
inline constexpr std::array<EnumName<Zone>, 5> kZoneNames = {
    {{Zone::kNone, ""},
     {Zone::kTooFragmented, "too_fragmented"},
     {Zone::kSweetSpot, "sweet_spot"},
     {Zone::kTooCoarse, "too_coarse"},
     {Zone::kSlower, "slower"}}};
inline constexpr std::array<EnumName<Zone>, 5> kZoneLabels = {
    {{Zone::kNone, "-"},
     {Zone::kTooFragmented, "too fragmented"},
     {Zone::kSweetSpot, "sweet spot"},
     {Zone::kTooCoarse, "too coarse"},
     {Zone::kSlower, "slower"}}};
const char* zone_name(Zone z);   // "too_fragmented", "sweet_spot", "too_coarse", "slower", ""
const char* zone_label(Zone z);  // "too fragmented", "sweet spot", "too coarse", "slower", "-"
// How much slower `v` is than `ref`, in percent (0 when ref is not positive).
double gap_pct(double v, double ref);

struct ZonePoint {
  double x = 0;                 // swept axis value
  double gen_time_us = 0;       // the sweep's objective (gen_time_us unless it ranks by another)
  double wait_schedule_us = 0;  // average Wait Schedule Time per core
  double tasks_per_core = 0;    // average executed tasks per core
  std::vector<PsgMetrics> psg;
  // What the AICPUs do as tasks multiply (PyPTO; sim/metrics.hpp): the root builds before the
  // first task when the objective counts them (kernel_time_us), else 0; the control AICPU's
  // builds after the first device task; each scheduler thread's completions, resolves and
  // dispatches; the span they serve (gen_time_us); root functions.
  double head_build_us = 0;
  double later_build_us = 0;
  double schedule_us = 0;
  double span_us = 0;
  int64_t roots = 0;
  // Per-core figures by name ("MTE2 busy/core", ...): a slower point without its side's
  // evidence names the one that grew most.
  std::vector<std::pair<std::string, double>> per_core;
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

struct SpmdZonePoint {
  double x = 0;  // swept axis value (grid, or a sub-tile dim)
  double gen_time_us = 0;
  SpmdFigures spmd;
  bool tiny_copies = false;  // the block's contiguous copies are under the rulebook's flag
  int64_t flag_bytes = 0;    // that flag (for the evidence)
  std::vector<std::pair<std::string, double>> per_core;  // as ZonePoint's
};

// The SPMD reading (3'-5' above) for the points of one spmd series.
std::vector<ZoneVerdict> classify_spmd_zones(const std::vector<SpmdZonePoint>& points,
                                             Granularity dir, const ZoneOptions& options = {});

// The PSG with the largest sum_dur (nullptr when there is none).
const PsgMetrics* dominant_psg(const std::vector<PsgMetrics>& psg);

}  // namespace tilesim
