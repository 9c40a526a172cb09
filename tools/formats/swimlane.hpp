#pragma once
// Swimlane traces: Chrome trace JSON (an array of events, or an object with a "traceEvents"
// array) whose "X" events are tasks on cores, one lane per core. Both tilesim's own traces
// (sim/chrome_trace.hpp) and PyPTO board swimlanes (tools/profiling/draw_swim_lane.py output) read
// the same way:
//  - Lanes are named by "thread_name" metadata ("AIV_3", "AIC0"); tids of one process sharing a
//    name are one core (PyPTO draws overlapping tasks of a core on a second tid with the same
//    name). The core type comes from the lane name, else the process name, else the graph's
//    coreType of its tasks.
//  - A task's id is args.taskId (with args.seqNo, when given, as its upper 32 bits, as PyPTO packs
//    seq << 32 | func << 16 | op), else it is decoded from a name
//    "seq-func-op-rootIndex-psgId(label)".
//  - A task's PSG is the graph's funcName when a graph is given, else args.psg, else the
//    "psgId(label)" part of its name, else its name.
//  - Skipped and counted, never fatal: events of other phases (flows, counters, instants, ...),
//    X events on AICPU lanes (process or thread named AICPU/control/scheduler, or cat "aicpu") or
//    on PyPTO's "Fake Core" lane, X events with no task id.
//  - Times are relative to the trace's first task, taken from each ts literal exactly (msprof's
//    epoch-sized stamps lose 0.25 us to a double), so a shift of every timestamp changes nothing.
//  - Errors (one line naming the file and event index): not JSON, not a trace, an event that is
//    not an object, an X event without numeric ts and dur >= 0, a dur or a ts after the first
//    task beyond kMaxSwimlaneSpanUs.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/task_graph.hpp"
#include "sim/metrics.hpp"
#include "tools/formats/pypto_graph.hpp"

namespace tilesim {

// No task, and no trace of one run, lasts this long (10^12 us, 11.6 days): a longer dur or span
// is a broken trace, refused before it reaches any sum.
inline constexpr double kMaxSwimlaneSpanUs = 1e12;
// The finest step a board stamps (1 ns): a ts printed from a double whose step is coarser (an
// epoch-sized stamp, ~1.8e15 us) is refused, as the time it states is not the board's.
inline constexpr double kSwimlaneResolutionUs = 1e-3;
// A trace is read whole (lanes are named anywhere in it), ~600 B of memory per event: these bound
// it to well under 1 GB, checked before it is read. A board run's swimlane is far smaller.
inline constexpr uint64_t kMaxSwimlaneBytes = uint64_t{256} << 20;
inline constexpr size_t kMaxSwimlaneEvents = size_t{1} << 20;

struct SwimlaneLane {
  std::string name;  // thread name, or "pid P tid T" when the trace names none
  CoreType type = CoreType::kAiv;
  bool type_known = false;
};

struct SwimlaneTask {
  int32_t lane = 0;
  double start_us = 0;
  double end_us = 0;
  bool has_id = false;
  int64_t task_id = 0;
  std::string psg;
  int64_t event = 0;  // its index in the trace's events
};

struct SwimlaneTrace {
  std::vector<SwimlaneLane> lanes;
  std::vector<SwimlaneTask> tasks;
  std::map<std::string, int64_t> skipped;  // reason -> events
  int64_t events = 0;
};

// `units_per_us`: trace time units per microsecond (1 for Chrome's microseconds, 1000 for ns,
// the clock in MHz for cycles).
// Read with simdjson On-Demand (tools/formats/json_stream.hpp), no DOM.
SwimlaneTrace swimlane_from_text(std::string text, const std::string& origin,
                                 double units_per_us = 1);
SwimlaneTrace swimlane_from_json(const nlohmann::json& doc, const std::string& origin,
                                 double units_per_us = 1);
SwimlaneTrace load_swimlane(const std::filesystem::path& file, double units_per_us = 1);

struct SwimlaneAnalysis {
  Metrics metrics;  // per_core[i].core indexes lanes; pipes and GM stay zero
  std::vector<SwimlaneLane> lanes;
  bool dependencies = false;  // a graph gave Wait Schedule / Wait Predecessor
  std::map<std::string, int64_t> skipped;
  std::vector<std::string> warnings;
};

// PyPTO's per-core metrics (shared/HARDWARE.md) of the trace's tasks. With a graph, a task's
// latest predecessor end comes from the graph's dependencies (predecessors missing from the trace
// are ignored, with a warning); without one, no dependency is known and Wait Schedule equals
// Total Wait.
SwimlaneAnalysis analyze_swimlane(const SwimlaneTrace& trace, const PyptoGraph* graph = nullptr);

}  // namespace tilesim
