#include "tools/formats/swimlane.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <optional>
#include <unordered_map>

#include "model/error.hpp"
#include "model/json_reader.hpp"
#include "sim/timeline_metrics.hpp"
#include "tools/formats/run_config.hpp"

namespace tilesim {

namespace {

std::string upper(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

bool starts_with(const std::string& s, const char* prefix) {
  return s.rfind(prefix, 0) == 0;
}

std::string id_text(const nlohmann::json& e, const char* key) {
  const auto it = e.find(key);
  if (it == e.end()) return "-";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

std::string meta_name(const nlohmann::json& e) {
  const auto a = e.find("args");
  if (a == e.end() || !a->is_object()) return "";
  const auto n = a->find("name");
  return n != a->end() && n->is_string() ? n->get<std::string>() : "";
}

const char* phase_reason(const std::string& ph) {
  if (ph == "s" || ph == "t" || ph == "f") return "flow events (ph s/t/f)";
  if (ph == "C") return "counter events (ph C)";
  if (ph == "i" || ph == "I") return "instant events (ph i)";
  if (ph == "B" || ph == "E") return "begin/end events (ph B/E)";
  if (ph == "b" || ph == "e" || ph == "n") return "async events (ph b/e/n)";
  return nullptr;
}

// A PyPTO task name "seq-func-op-rootIndex-psgId(label)": the packed id and the "psgId(label)"
// part. Returns false when the name does not have that shape.
struct ParsedName {
  bool has_id = false;
  int64_t id = 0;
  std::string psg;
};

ParsedName parse_task_name(const std::string& name) {
  ParsedName out;
  size_t pos = 0;
  auto number = [&](bool allow_sign, int64_t& v) {
    const size_t begin = pos;
    bool neg = false;
    if (allow_sign && pos < name.size() && name[pos] == '-') {
      neg = true;
      ++pos;
    }
    const size_t digits = pos;
    v = 0;
    while (pos < name.size() && std::isdigit(static_cast<unsigned char>(name[pos])) &&
           pos - digits < 12)
      v = v * 10 + (name[pos++] - '0');
    if (pos == digits ||
        (pos < name.size() && std::isdigit(static_cast<unsigned char>(name[pos])))) {
      pos = begin;
      return false;
    }
    if (neg) v = -v;
    return true;
  };
  auto dash = [&]() {
    if (pos < name.size() && name[pos] == '-') {
      ++pos;
      return true;
    }
    return false;
  };
  int64_t seq = 0, func = 0, op = 0, root = 0;
  if (!number(false, seq) || !dash() || !number(false, func) || !dash() || !number(false, op) ||
      !dash() || !number(true, root) || !dash())
    return out;
  if (func >= 1024 || op >= 65536 || seq >= (int64_t{1} << 31) || pos >= name.size()) return out;
  out.has_id = true;
  out.id = (seq << 32) | (func << 16) | op;
  out.psg = name.substr(pos);
  return out;
}

enum class LaneClass { kCore, kAicpu, kFake };

// A string member, or "" when absent or not a string.
std::string string_member(const nlohmann::json& e, const char* key) {
  const auto it = e.find(key);
  return it != e.end() && it->is_string() ? it->get<std::string>() : "";
}

// The task id of an X event: args.taskId (args.seqNo, when given, as its upper 32 bits), else
// decoded from its name; and its PSG: args.psg, else the name's "psgId(label)", else the name.
void read_task_identity(const nlohmann::json& e, SwimlaneTask& task) {
  const std::string name = string_member(e, "name");
  const ParsedName parsed = parse_task_name(name);
  const auto args = e.find("args");
  if (args != e.end() && args->is_object()) {
    const auto id = args->find("taskId");
    if (id != args->end() && id->is_number_integer() &&
        !(id->is_number_unsigned() &&
          id->get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))) {
      task.has_id = true;
      task.task_id = id->get<int64_t>();
      const auto seq = args->find("seqNo");
      if (seq != args->end() && seq->is_number_integer() && task.task_id >= 0 &&
          task.task_id < (int64_t{1} << 32) && seq->get<int64_t>() > 0 &&
          seq->get<int64_t>() < (int64_t{1} << 31))
        task.task_id |= seq->get<int64_t>() << 32;
    }
    task.psg = string_member(*args, "psg");
  }
  if (!task.has_id && parsed.has_id) {
    task.has_id = true;
    task.task_id = parsed.id;
  }
  if (task.psg.empty()) task.psg = parsed.has_id ? parsed.psg : name;
}

// The events array of a trace: the document itself, or its "traceEvents".
JsonReader trace_events(const JsonReader& doc) {
  if (doc.json().is_array()) return doc;
  if (!doc.json().is_object())
    doc.fail(std::string("expected a Chrome trace (an array of events or an object with a "
                         "\"traceEvents\" array), got ") +
             doc.json().type_name());
  const auto events = doc.find("traceEvents");
  if (!events || !events->json().is_array())
    doc.fail("expected a Chrome trace: an object with a \"traceEvents\" array");
  return *events;
}

// Reads a trace's events into lanes and tasks (the header says how).
class TraceReader {
 public:
  // Each event is named by its index in messages ("event 3"), whichever form held the array.
  TraceReader(const JsonReader& events, double units_per_us) : units_per_us_(units_per_us) {
    const auto& array = events.json();
    events_.reserve(array.size());
    for (size_t i = 0; i < array.size(); ++i)
      events_.emplace_back(array[i], events.origin(), fmt::format("event {}", i));
    out_.events = static_cast<int64_t>(events_.size());
  }

  SwimlaneTrace read() {
    read_names();
    add_named_core_lanes();
    for (const auto& e : events_) read_event(e);
    return std::move(out_);
  }

 private:
  // Pass 1: names of processes and threads.
  void read_names() {
    for (const auto& r : events_) {
      if (!r.json().is_object())
        r.fail(std::string("expected an event object, got ") + r.json().type_name());
      const auto& e = r.json();
      if (string_member(e, "ph") != "M") continue;
      const std::string name = string_member(e, "name");
      if (name == "process_name")
        process_name_[id_text(e, "pid")] = meta_name(e);
      else if (name == "thread_name")
        thread_name_[id_text(e, "pid") + "/" + id_text(e, "tid")] = meta_name(e);
    }
  }

  LaneClass classify(const std::string& pid, const std::string& tname, const std::string& cat,
                     CoreType& type, bool& known) const {
    const std::string t = upper(tname);
    const auto pit = process_name_.find(pid);
    const std::string p = pit == process_name_.end() ? "" : upper(pit->second);
    known = false;
    if (upper(cat) == "AICPU" || t.find("AICPU") != std::string::npos ||
        p.find("AICPU") != std::string::npos || t == "CONTROL" || starts_with(t, "SCHEDULER"))
      return LaneClass::kAicpu;
    if (t.find("FAKE") != std::string::npos) return LaneClass::kFake;
    for (const std::string* s : {&t, &p}) {
      if (s->find("AIC") != std::string::npos || s->find("CUBE") != std::string::npos) {
        type = CoreType::kAic;
        known = true;
        break;
      }
      if (s->find("AIV") != std::string::npos || s->find("VEC") != std::string::npos) {
        type = CoreType::kAiv;
        known = true;
        break;
      }
    }
    return LaneClass::kCore;
  }

  int32_t lane_for(const std::string& pid, const std::string& tid, const std::string& tname,
                   CoreType type, bool known) {
    const std::string key = tname.empty() ? pid + "/#" + tid : pid + "/" + tname;
    const auto [it, fresh] = lane_of_.emplace(key, static_cast<int32_t>(out_.lanes.size()));
    if (fresh)
      out_.lanes.push_back(
          SwimlaneLane{tname.empty() ? fmt::format("pid {} tid {}", pid, tid) : tname,
                       known ? type : CoreType::kAiv, known});
    return it->second;
  }

  // Named core lanes first, in the trace's order, so cores are listed as the trace lists them.
  void add_named_core_lanes() {
    for (const auto& r : events_) {
      const auto& e = r.json();
      if (string_member(e, "ph") != "M" || string_member(e, "name") != "thread_name") continue;
      CoreType type = CoreType::kAiv;
      bool known = false;
      const std::string pid = id_text(e, "pid"), tname = meta_name(e);
      if (!tname.empty() && classify(pid, tname, "", type, known) == LaneClass::kCore)
        lane_for(pid, id_text(e, "tid"), tname, type, known);
    }
  }

  void skip(const std::string& reason) { ++out_.skipped[reason]; }

  // An X event's time: a finite number.
  static double event_time(const JsonReader& r, const char* key) {
    const auto it = r.json().find(key);
    if (it == r.json().end() || !it->is_number() || !std::isfinite(it->get<double>()))
      r.fail(fmt::format("complete event (ph X) needs a numeric '{}'", key));
    return it->get<double>();
  }

  // Pass 2: one event; X events on core lanes with a task id are tasks, the rest are counted.
  void read_event(const JsonReader& r) {
    const auto& e = r.json();
    const auto ph_it = e.find("ph");
    if (ph_it == e.end() || !ph_it->is_string()) return skip("events without a phase (ph)");
    const std::string ph = ph_it->get<std::string>();
    if (ph == "M") return;
    if (ph != "X") {
      const char* reason = phase_reason(ph);
      return skip(reason ? reason : fmt::format("events of phase '{}'", ph));
    }
    const double ts = event_time(r, "ts"), dur = event_time(r, "dur");
    if (dur < 0) r.fail(fmt::format("complete event (ph X) has negative dur {}", dur));
    const std::string pid = id_text(e, "pid"), tid = id_text(e, "tid");
    const auto tn = thread_name_.find(pid + "/" + tid);
    const std::string tname = tn == thread_name_.end() ? "" : tn->second;
    CoreType type = CoreType::kAiv;
    bool known = false;
    const LaneClass lc = classify(pid, tname, string_member(e, "cat"), type, known);
    if (lc == LaneClass::kAicpu) return skip("X events on AICPU lanes");
    if (lc == LaneClass::kFake) return skip("X events on the fake-task lane");
    SwimlaneTask task;
    read_task_identity(e, task);
    if (!task.has_id) return skip("X events without a task id");
    task.lane = lane_for(pid, tid, tname, type, known);
    task.start_us = ts / units_per_us_;
    task.end_us = (ts + dur) / units_per_us_;
    out_.tasks.push_back(std::move(task));
  }

  std::vector<JsonReader> events_;
  double units_per_us_;
  SwimlaneTrace out_;
  std::unordered_map<std::string, std::string> process_name_, thread_name_;
  std::unordered_map<std::string, int32_t> lane_of_;  // "pid/name" or "pid/#tid"
};

}  // namespace

SwimlaneTrace swimlane_from_json(const nlohmann::json& doc, const std::string& origin,
                                 double units_per_us) {
  if (!(units_per_us > 0)) throw Error(origin + ": time units per us must be positive");
  return TraceReader(trace_events(JsonReader(doc, origin)), units_per_us).read();
}

SwimlaneTrace load_swimlane(const std::filesystem::path& file, double units_per_us) {
  return swimlane_from_json(read_json_file(file, "swimlane trace"), file.string(), units_per_us);
}

namespace {

// Trace tasks against a graph's: the graph task of each trace task (-1: not in the graph) and the
// first trace task of each graph task (-1: not in the trace).
struct GraphMatch {
  std::vector<int32_t> graph_index;
  std::vector<int32_t> trace_of;
};

GraphMatch match_graph(const SwimlaneTrace& trace, const PyptoGraph& graph,
                       std::vector<std::string>& warnings) {
  const size_t n = trace.tasks.size();
  GraphMatch m;
  m.graph_index.assign(n, -1);
  m.trace_of.assign(graph.graph.tasks.size(), -1);
  std::unordered_map<int64_t, int32_t> gindex;
  gindex.reserve(graph.task_ids.size() * 2);
  for (size_t i = 0; i < graph.task_ids.size(); ++i)
    gindex.emplace(graph.task_ids[i], static_cast<int32_t>(i));
  int64_t unknown = 0, duplicate = 0;
  std::string first_unknown, first_duplicate;
  for (size_t t = 0; t < n; ++t) {
    const auto it = gindex.find(trace.tasks[t].task_id);
    if (it == gindex.end()) {
      if (unknown++ == 0) first_unknown = std::to_string(trace.tasks[t].task_id);
      continue;
    }
    m.graph_index[t] = it->second;
    auto& slot = m.trace_of[static_cast<size_t>(it->second)];
    if (slot >= 0) {
      if (duplicate++ == 0) first_duplicate = std::to_string(trace.tasks[t].task_id);
      continue;
    }
    slot = static_cast<int32_t>(t);
  }
  const auto missing = std::count(m.trace_of.begin(), m.trace_of.end(), -1);
  if (unknown)
    warnings.push_back(fmt::format(
        "{} trace task(s) are not in the graph (first: taskId {}); they have no predecessors",
        unknown, first_unknown));
  if (duplicate)
    warnings.push_back(fmt::format(
        "{} trace task(s) repeat a taskId (first: {}); the first one's end is used as a "
        "predecessor end",
        duplicate, first_duplicate));
  if (missing) {
    const auto first = std::find(m.trace_of.begin(), m.trace_of.end(), -1) - m.trace_of.begin();
    warnings.push_back(fmt::format("{} graph task(s) are not in the trace (first: taskId {})",
                                   missing, graph.task_ids[static_cast<size_t>(first)]));
  }
  return m;
}

// One timeline record per trace task; its PSG is the graph's when the graph has the task.
Timeline trace_timeline(const SwimlaneTrace& trace, const std::vector<SwimlaneLane>& lanes,
                        const PyptoGraph* graph, const std::vector<int32_t>& graph_index) {
  Timeline tl;
  tl.core_types.reserve(lanes.size());
  for (const auto& l : lanes) tl.core_types.push_back(l.type);
  std::unordered_map<std::string, int32_t> psg_of;
  tl.records.reserve(trace.tasks.size());
  for (size_t t = 0; t < trace.tasks.size(); ++t) {
    const auto& task = trace.tasks[t];
    std::string psg = task.psg;
    if (graph && graph_index[t] >= 0) {
      const TaskGraph& g = graph->graph;
      const auto& kind =
          g.kinds[static_cast<size_t>(g.tasks[static_cast<size_t>(graph_index[t])].kind)];
      psg = g.psg_names[static_cast<size_t>(kind.psg)];
    }
    const auto [it, fresh] = psg_of.emplace(psg, static_cast<int32_t>(tl.psg_names.size()));
    if (fresh) tl.psg_names.push_back(psg);
    TimelineRecord r;
    r.core = task.lane;
    r.psg = it->second;
    r.start = task.start_us;
    r.end = task.end_us;
    tl.records.push_back(r);
  }
  return tl;
}

// Each record's latest predecessor end, from the graph's dependencies.
void predecessor_ends(const SwimlaneTrace& trace, const TaskGraph& g, const GraphMatch& m,
                      Timeline& tl, std::vector<std::string>& warnings) {
  int64_t missing_pred = 0, early = 0;
  std::string first_early;
  for (size_t gi = 0; gi < g.tasks.size(); ++gi) {
    const int32_t pt = m.trace_of[gi];
    for (const int32_t* s = g.succ_begin(static_cast<int32_t>(gi));
         s != g.succ_end(static_cast<int32_t>(gi)); ++s) {
      const int32_t st = m.trace_of[static_cast<size_t>(*s)];
      if (st < 0) continue;
      if (pt < 0) {
        ++missing_pred;
        continue;
      }
      auto& pe = tl.records[static_cast<size_t>(st)].pred_end;
      pe = std::max(pe, trace.tasks[static_cast<size_t>(pt)].end_us);
    }
  }
  // Every trace task with the same id as a graph task shares its predecessors.
  for (size_t t = 0; t < trace.tasks.size(); ++t) {
    if (m.graph_index[t] < 0) continue;
    const int32_t first = m.trace_of[static_cast<size_t>(m.graph_index[t])];
    if (first != static_cast<int32_t>(t))
      tl.records[t].pred_end = tl.records[static_cast<size_t>(first)].pred_end;
    if (tl.records[t].start < tl.records[t].pred_end - 1e-9 && early++ == 0)
      first_early = std::to_string(trace.tasks[t].task_id);
  }
  if (missing_pred)
    warnings.push_back(fmt::format(
        "{} dependency edge(s) come from tasks missing from the trace; they are ignored",
        missing_pred));
  if (early)
    warnings.push_back(fmt::format(
        "{} task(s) start before a predecessor ends (first: taskId {}); their Wait Schedule "
        "Time is negative",
        early, first_early));
}

}  // namespace

SwimlaneAnalysis analyze_swimlane(const SwimlaneTrace& trace, const PyptoGraph* graph) {
  SwimlaneAnalysis a;
  a.lanes = trace.lanes;
  a.skipped = trace.skipped;
  a.dependencies = graph != nullptr;
  GraphMatch m;
  m.graph_index.assign(trace.tasks.size(), -1);
  if (graph) {
    m = match_graph(trace, *graph, a.warnings);
    // Lanes of unknown type take the graph's core type of their tasks.
    const TaskGraph& g = graph->graph;
    for (size_t t = 0; t < trace.tasks.size(); ++t) {
      auto& lane = a.lanes[static_cast<size_t>(trace.tasks[t].lane)];
      if (lane.type_known || m.graph_index[t] < 0) continue;
      const auto& task = g.tasks[static_cast<size_t>(m.graph_index[t])];
      lane.type = g.kinds[static_cast<size_t>(task.kind)].core;
      lane.type_known = true;
    }
  }
  Timeline tl = trace_timeline(trace, a.lanes, graph, m.graph_index);
  if (graph) predecessor_ends(trace, graph->graph, m, tl, a.warnings);
  a.metrics = timeline_metrics(tl);
  return a;
}

}  // namespace tilesim
