#include "sim/shared_bandwidth.hpp"

#include <bit>

namespace tilesim {

void SharedBandwidth::start(int32_t task, double now, double duration, double gm_bytes) {
  start_flow(task, now, flow_class(run_time(duration)), demand_of(duration, gm_bytes));
}

int32_t SharedBandwidth::flow_class(double run_time) {
  const auto [it, added] = class_of_run_.try_emplace(std::bit_cast<uint64_t>(run_time),
                                                     static_cast<int32_t>(classes_.size()));
  if (added) {
    classes_.emplace_back();
    classes_.back().run = run_time;
    heads_.add_class();
  }
  return it->second;
}

}  // namespace tilesim
