#pragma once
// Metrics of a timeline given as plain records: tasks on cores with start and end times, and
// optionally the latest end of each task's predecessors. This is how measured timelines (a board
// swimlane, a trace file) get the same PyPTO metrics as a simulated run: the records are handed to
// compute_metrics (sim/metrics.hpp), so the definitions exist in one place only.

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "model/task_graph.hpp"
#include "sim/metrics.hpp"

namespace tilesim {

struct TimelineRecord {
  int32_t core = 0;  // index into Timeline::core_types
  int32_t psg = 0;   // index into Timeline::psg_names
  double start = 0;
  double end = 0;
  // Latest end of the task's predecessors; -infinity when it has none (or none are known).
  double pred_end = -std::numeric_limits<double>::infinity();
};

struct Timeline {
  std::vector<CoreType> core_types;
  std::vector<std::string> psg_names;
  std::vector<TimelineRecord> records;
  double units_per_us = 1;  // time units of the records per microsecond (1: records are in us)
};

// gen_time_us, per-core and per-PSG metrics of the timeline (Metrics::per_core[i].core indexes
// Timeline::core_types). Fields that need a cost model (pipes, GM bytes) stay zero; kernel_time_us
// is the last end measured from the first start. Throws tilesim::Error on a record naming an
// unknown core or PSG, or ending before it starts.
Metrics timeline_metrics(const Timeline& timeline);

}  // namespace tilesim
