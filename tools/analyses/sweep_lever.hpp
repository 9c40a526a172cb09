#pragma once
// The next lever of a sweep's winner, quantified from the sweep itself: cores it leaves idle and
// the fastest candidate that fills more of them (with its cost against the winner, and whether
// that is within the zones' tie tolerance), or else how much of the run the binding resource
// leaves to gain by overlap and what lowers its floor.

#include <string>

#include "model/hardware.hpp"
#include "tools/analyses/sweep.hpp"

namespace tilesim {

// "" when nothing was recommended.
std::string next_lever(const SweepConfig& cfg, const Hardware& hw, const SweepResult& res);

}  // namespace tilesim
