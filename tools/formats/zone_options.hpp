#pragma once
// How a sweep zones its candidates (a sweep config's "zones"; tools/analyses/zones.hpp uses them).

namespace tilesim {

struct ZoneOptions {
  double tolerance = 0.02;        // sweet spot: gen_time within this fraction of the best
  double evidence_rise = 0.05;    // a metric "rises" when it exceeds the best's by this fraction
  double min_abs_rise_us = 0.05;  // ... and by at least this much
  double min_wait_share = 0.25;   // a wait rise must cover this share of the time lost
  // spmd: a last wave that fills less than this share of the cores is unbalanced
  double min_tail_occupancy = 0.5;
  // spmd: block starts above this share of core time are per-block overhead dominating
  double max_block_overhead_share = 0.1;
};

}  // namespace tilesim
