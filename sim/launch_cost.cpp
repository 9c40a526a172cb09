#include "sim/launch_cost.hpp"

namespace tilesim {

double launch_gap_cycles(const Hardware& hw, const TaskGraph& /*graph*/) {
  return hw.ns_to_cycles(hw.kernel.launch_us * 1000.0);
}

}  // namespace tilesim
