#include "tools/formats/sweep_objective.hpp"

#include "model/error.hpp"

namespace tilesim {

const std::vector<ObjectiveInfo>& objectives() {
  static const std::vector<ObjectiveInfo> table = {
      {Objective::kGenTime, "gen_time_us", "gen_us", "gen_time_us (span of all tasks)"},
      {Objective::kKernelTime, "kernel_time_us", "kernel_us", "kernel_time_us (launch to end)"},
      {Objective::kMte2, "mte2_us", "MTE2max_us", "MTE2 busy on the busiest core"},
      {Objective::kMte3, "mte3_us", "MTE3max_us", "MTE3 busy on the busiest core"},
      {Objective::kVec, "vec_us", "Vmax_us", "vector pipe busy on the busiest core"},
      {Objective::kCube, "cube_us", "CUBEmax_us", "cube pipe busy on the busiest core"},
      {Objective::kMte1, "mte1_us", "MTE1max_us", "MTE1 busy on the busiest core"}};
  return table;
}

const ObjectiveInfo& objective_info(Objective o) {
  for (const auto& i : objectives())
    if (i.objective == o) return i;
  throw InternalError("objective_info: an objective missing from the table");
}

std::optional<Objective> find_objective(std::string_view name) {
  for (const auto& i : objectives())
    if (i.name == name) return i.objective;
  return std::nullopt;
}

std::vector<std::string> objective_names() {
  std::vector<std::string> names;
  for (const auto& i : objectives()) names.emplace_back(i.name);
  return names;
}

namespace {

double pipe_max_us(const Metrics& m, const char* pipe) {
  for (const PipeMetrics& p : m.pipes)
    if (p.pipe == pipe) return p.max_us;
  return 0.0;
}

}  // namespace

double objective_us(const Metrics& m, Objective o) {
  switch (o) {
    case Objective::kGenTime:
      return m.gen_time_us;
    case Objective::kKernelTime:
      return m.kernel_time_us;
    case Objective::kMte2:
      return pipe_max_us(m, "MTE2");
    case Objective::kMte3:
      return pipe_max_us(m, "MTE3");
    case Objective::kVec:
      return pipe_max_us(m, "V");
    case Objective::kCube:
      return pipe_max_us(m, "CUBE");
    case Objective::kMte1:
      return pipe_max_us(m, "MTE1");
  }
  return m.gen_time_us;
}

}  // namespace tilesim
