#pragma once
// What a sweep ranks by ("objective" in a sweep config, `tilesim sweep --objective`): one name
// table serving the parser, the reports and the error that lists the known names.
//
//   gen_time_us     the span of all tasks (PyPTO's swimlane gen_time; the default)
//   kernel_time_us  launch to end: launch, AICPU hand-shake, root builds and the tasks, the time
//                   a board measures around the kernel (sim/launch_cost.hpp)
//   mte2_us, mte3_us, vec_us, cube_us, mte1_us
//                   one pipe's busy time on its busiest core (what bounds a pipe-bound kernel)

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/metrics.hpp"

namespace tilesim {

enum class Objective { kGenTime, kKernelTime, kMte2, kMte3, kVec, kCube, kMte1 };

struct ObjectiveInfo {
  Objective objective;
  std::string_view name;    // config and CLI spelling, also the metric's JSON key
  std::string_view column;  // table column
  std::string_view what;    // for help and the plot's axis
};

const std::vector<ObjectiveInfo>& objectives();
const ObjectiveInfo& objective_info(Objective o);
std::optional<Objective> find_objective(std::string_view name);
std::vector<std::string> objective_names();
// The candidate's value of the objective, in us (lower is better).
double objective_us(const Metrics& m, Objective o);

}  // namespace tilesim
