#include "sim/launch_cost.hpp"

#include <algorithm>

namespace tilesim {

bool starts_cube_cores(const TaskGraph& graph) {
  return std::any_of(graph.kinds.begin(), graph.kinds.end(),
                     [](const TaskKind& k) { return k.core == CoreType::kAic; });
}

double kernel_launch_us(const TaskGraph& graph, const Hardware& hw) {
  // PyPTO launches its AICore binary on every AI core as a mixed kernel (launch_cost.hpp).
  const bool mixed = graph.runtime == RuntimeStyle::kMpmd || starts_cube_cores(graph);
  return mixed ? hw.kernel.mixed_launch_us : hw.kernel.vector_launch_us;
}

double aicpu_handshake_us(const TaskGraph& graph, const Hardware& hw) {
  if (graph.runtime == RuntimeStyle::kSpmd) return 0;
  return static_cast<double>(hw.scheduler.handshake_cores) * hw.scheduler.poll_ns / 1000;
}

double kernel_end_us(const TaskGraph& /*graph*/, const Hardware& hw) {
  return hw.kernel.end_us;
}

double launch_gap_cycles(const Hardware& hw, const TaskGraph& graph) {
  return hw.ns_to_cycles(1000.0 * (kernel_end_us(graph, hw) + kernel_launch_us(graph, hw)));
}

}  // namespace tilesim
