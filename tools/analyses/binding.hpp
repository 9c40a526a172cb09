#pragma once
// What bounds a run: each resource's use against its capacity over the run, and the one that binds
// (the largest share). Resources, all from the run's Metrics:
//   - GM bandwidth: bytes moved over gen_time against HBM's bandwidth, or, when more moved than
//     HBM can (L2 served part of it), against L2's;
//   - each pipe (MTE2, V, CUBE, MTE3, MTE1) on its busiest core, over gen_time;
//   - the scheduler: the mean Wait Schedule Time per core over gen_time (cores idle for want of
//     a dispatched task);
//   - the fixed costs: launch, AICPU hand-shake, builds, first dispatch, last release and end, over
//     kernel_time;
// The binding resource is the one with the largest share; the rest follow, largest first. Idle
// cores (of the kernel's type, that ran no task) bound nothing but are the lever left: they come
// last.

#include <string>
#include <vector>

#include "model/hardware.hpp"
#include "sim/metrics.hpp"

namespace tilesim {

struct ResourceUse {
  std::string
      name;  // "MTE2", "HBM bandwidth", "L2 bandwidth", "scheduler", "fixed costs", "idle cores"
  double used = 0, capacity = 0;
  std::string unit;  // "us", "GB/s", "cores"
  double share = 0;  // used / capacity
  std::string text;  // "MTE2 of the busiest core: 412.1 of 436.6 us (94%)"
};

// Largest share first, idle cores last; empty for a run with no time.
std::vector<ResourceUse> resource_uses(const Metrics& m, const Hardware& hw);
// Two resources over half used and within kCoBoundShare of each other bind together: relieving
// either alone leaves the other's floor, so it gains at most the time the other leaves unused
// (HBM and V both at 95%: at most 5%, where "bound by HBM" suggested more bandwidth). The fixed
// costs are a share of kernel_time, the rest of gen_time: they pair with neither.
inline constexpr double kCoBoundShare = 0.05;
bool co_bound(const std::vector<ResourceUse>& uses);
// "bound by <first>; then <second>, <third>; <idle cores>", or "co-bound by <first> and
// <second>: relieving either alone gains at most N%; then <third>; <idle cores>".
std::string binding_text(const std::vector<ResourceUse>& uses);

}  // namespace tilesim
