#include "tools/formats/swimlane.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <optional>
#include <unordered_map>

#include "model/error.hpp"
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

}  // namespace

SwimlaneTrace swimlane_from_json(const nlohmann::json& doc, const std::string& origin,
                                 double units_per_us) {
  if (!(units_per_us > 0)) throw Error(origin + ": time units per us must be positive");
  const nlohmann::json* events = nullptr;
  if (doc.is_array()) {
    events = &doc;
  } else if (doc.is_object()) {
    const auto it = doc.find("traceEvents");
    if (it == doc.end() || !it->is_array())
      throw Error(origin + ": expected a Chrome trace: an object with a \"traceEvents\" array");
    events = &*it;
  } else {
    throw Error(origin + ": expected a Chrome trace (an array of events or an object with a " +
                "\"traceEvents\" array), got " + std::string(doc.type_name()));
  }

  SwimlaneTrace out;
  out.events = static_cast<int64_t>(events->size());
  // Pass 1: names of processes and threads.
  std::unordered_map<std::string, std::string> process_name, thread_name;
  for (size_t i = 0; i < events->size(); ++i) {
    const auto& e = (*events)[i];
    if (!e.is_object())
      throw Error(
          fmt::format("{}: event {}: expected an event object, got {}", origin, i, e.type_name()));
    const auto ph = e.find("ph");
    if (ph == e.end() || !ph->is_string() || ph->get<std::string>() != "M") continue;
    const auto name = e.find("name");
    if (name == e.end() || !name->is_string()) continue;
    if (name->get<std::string>() == "process_name")
      process_name[id_text(e, "pid")] = meta_name(e);
    else if (name->get<std::string>() == "thread_name")
      thread_name[id_text(e, "pid") + "/" + id_text(e, "tid")] = meta_name(e);
  }

  auto classify = [&](const std::string& pid, const std::string& tname, const std::string& cat,
                      CoreType& type, bool& known) {
    const std::string t = upper(tname);
    const auto pit = process_name.find(pid);
    const std::string p = pit == process_name.end() ? "" : upper(pit->second);
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
  };

  std::unordered_map<std::string, int32_t> lane_of;  // "pid/name" or "pid/#tid"
  auto lane_for = [&](const std::string& pid, const std::string& tid, const std::string& tname,
                      CoreType type, bool known) {
    const std::string key = tname.empty() ? pid + "/#" + tid : pid + "/" + tname;
    const auto [it, fresh] = lane_of.emplace(key, static_cast<int32_t>(out.lanes.size()));
    if (fresh)
      out.lanes.push_back(
          SwimlaneLane{tname.empty() ? fmt::format("pid {} tid {}", pid, tid) : tname,
                       known ? type : CoreType::kAiv, known});
    return it->second;
  };
  // Named core lanes first, in the trace's order, so cores are listed as the trace lists them.
  for (size_t i = 0; i < events->size(); ++i) {
    const auto& e = (*events)[i];
    const auto ph = e.find("ph");
    const auto name = e.find("name");
    if (ph == e.end() || *ph != "M" || name == e.end() || *name != "thread_name") continue;
    CoreType type = CoreType::kAiv;
    bool known = false;
    const std::string pid = id_text(e, "pid"), tname = meta_name(e);
    if (!tname.empty() && classify(pid, tname, "", type, known) == LaneClass::kCore)
      lane_for(pid, id_text(e, "tid"), tname, type, known);
  }

  // Pass 2: tasks.
  auto skip = [&](const std::string& reason) { ++out.skipped[reason]; };
  for (size_t i = 0; i < events->size(); ++i) {
    const auto& e = (*events)[i];
    const auto ph_it = e.find("ph");
    if (ph_it == e.end() || !ph_it->is_string()) {
      skip("events without a phase (ph)");
      continue;
    }
    const std::string ph = ph_it->get<std::string>();
    if (ph == "M") continue;
    if (ph != "X") {
      const char* reason = phase_reason(ph);
      skip(reason ? reason : fmt::format("events of phase '{}'", ph));
      continue;
    }
    auto number = [&](const char* key) {
      const auto it = e.find(key);
      if (it == e.end() || !it->is_number() || !std::isfinite(it->get<double>()))
        throw Error(fmt::format("{}: event {}: complete event (ph X) needs a numeric '{}'", origin,
                                i, key));
      return it->get<double>();
    };
    const double ts = number("ts"), dur = number("dur");
    if (dur < 0)
      throw Error(
          fmt::format("{}: event {}: complete event (ph X) has negative dur {}", origin, i, dur));
    const std::string pid = id_text(e, "pid"), tid = id_text(e, "tid");
    const auto tn = thread_name.find(pid + "/" + tid);
    const std::string tname = tn == thread_name.end() ? "" : tn->second;
    const auto cat_it = e.find("cat");
    const std::string cat =
        cat_it != e.end() && cat_it->is_string() ? cat_it->get<std::string>() : "";
    CoreType type = CoreType::kAiv;
    bool known = false;
    const LaneClass lc = classify(pid, tname, cat, type, known);
    if (lc == LaneClass::kAicpu) {
      skip("X events on AICPU lanes");
      continue;
    }
    if (lc == LaneClass::kFake) {
      skip("X events on the fake-task lane");
      continue;
    }
    SwimlaneTask task;
    const auto name_it = e.find("name");
    const std::string name =
        name_it != e.end() && name_it->is_string() ? name_it->get<std::string>() : "";
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
      const auto psg = args->find("psg");
      if (psg != args->end() && psg->is_string()) task.psg = psg->get<std::string>();
    }
    if (!task.has_id && parsed.has_id) {
      task.has_id = true;
      task.task_id = parsed.id;
    }
    if (!task.has_id) {
      skip("X events without a task id");
      continue;
    }
    if (task.psg.empty()) task.psg = parsed.has_id ? parsed.psg : name;
    task.lane = lane_for(pid, tid, tname, type, known);
    task.start_us = ts / units_per_us;
    task.end_us = (ts + dur) / units_per_us;
    out.tasks.push_back(std::move(task));
  }
  return out;
}

SwimlaneTrace load_swimlane(const std::filesystem::path& file, double units_per_us) {
  return swimlane_from_json(read_json_file(file, "swimlane trace"), file.string(), units_per_us);
}

SwimlaneAnalysis analyze_swimlane(const SwimlaneTrace& trace, const PyptoGraph* graph) {
  SwimlaneAnalysis a;
  a.lanes = trace.lanes;
  a.skipped = trace.skipped;
  a.dependencies = graph != nullptr;
  const size_t n = trace.tasks.size();

  // Trace task of each graph task (first occurrence of its id).
  std::vector<int32_t> graph_index(n, -1);
  std::vector<int32_t> trace_of;
  if (graph) {
    const TaskGraph& g = graph->graph;
    std::unordered_map<int64_t, int32_t> gindex;
    gindex.reserve(graph->task_ids.size() * 2);
    for (size_t i = 0; i < graph->task_ids.size(); ++i)
      gindex.emplace(graph->task_ids[i], static_cast<int32_t>(i));
    trace_of.assign(g.tasks.size(), -1);
    int64_t unknown = 0, duplicate = 0;
    std::string first_unknown, first_duplicate;
    for (size_t t = 0; t < n; ++t) {
      const auto it = gindex.find(trace.tasks[t].task_id);
      if (it == gindex.end()) {
        if (unknown++ == 0) first_unknown = std::to_string(trace.tasks[t].task_id);
        continue;
      }
      graph_index[t] = it->second;
      auto& slot = trace_of[static_cast<size_t>(it->second)];
      if (slot >= 0) {
        if (duplicate++ == 0) first_duplicate = std::to_string(trace.tasks[t].task_id);
        continue;
      }
      slot = static_cast<int32_t>(t);
    }
    const auto missing = std::count(trace_of.begin(), trace_of.end(), -1);
    if (unknown)
      a.warnings.push_back(fmt::format(
          "{} trace task(s) are not in the graph (first: taskId {}); they have no predecessors",
          unknown, first_unknown));
    if (duplicate)
      a.warnings.push_back(fmt::format(
          "{} trace task(s) repeat a taskId (first: {}); the first one's end is used as a "
          "predecessor end",
          duplicate, first_duplicate));
    if (missing) {
      const auto first = std::find(trace_of.begin(), trace_of.end(), -1) - trace_of.begin();
      a.warnings.push_back(fmt::format("{} graph task(s) are not in the trace (first: taskId {})",
                                       missing, graph->task_ids[static_cast<size_t>(first)]));
    }
    // Lanes of unknown type take the graph's core type of their tasks.
    for (size_t t = 0; t < n; ++t) {
      auto& lane = a.lanes[static_cast<size_t>(trace.tasks[t].lane)];
      if (lane.type_known || graph_index[t] < 0) continue;
      const auto& task = g.tasks[static_cast<size_t>(graph_index[t])];
      lane.type = g.kinds[static_cast<size_t>(task.kind)].core;
      lane.type_known = true;
    }
  }

  Timeline tl;
  tl.core_types.reserve(a.lanes.size());
  for (const auto& l : a.lanes) tl.core_types.push_back(l.type);
  std::unordered_map<std::string, int32_t> psg_of;
  tl.records.reserve(n);
  for (size_t t = 0; t < n; ++t) {
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

  if (graph) {
    const TaskGraph& g = graph->graph;
    int64_t missing_pred = 0, early = 0;
    std::string first_early;
    for (size_t gi = 0; gi < g.tasks.size(); ++gi) {
      const int32_t pt = trace_of[gi];
      for (const int32_t* s = g.succ_begin(static_cast<int32_t>(gi));
           s != g.succ_end(static_cast<int32_t>(gi)); ++s) {
        const int32_t st = trace_of[static_cast<size_t>(*s)];
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
    for (size_t t = 0; t < n; ++t) {
      if (graph_index[t] < 0) continue;
      const int32_t first = trace_of[static_cast<size_t>(graph_index[t])];
      if (first != static_cast<int32_t>(t))
        tl.records[t].pred_end = tl.records[static_cast<size_t>(first)].pred_end;
      if (tl.records[t].start < tl.records[t].pred_end - 1e-9 && early++ == 0)
        first_early = std::to_string(trace.tasks[t].task_id);
    }
    if (missing_pred)
      a.warnings.push_back(fmt::format(
          "{} dependency edge(s) come from tasks missing from the trace; they are ignored",
          missing_pred));
    if (early)
      a.warnings.push_back(fmt::format(
          "{} task(s) start before a predecessor ends (first: taskId {}); their Wait Schedule "
          "Time is negative",
          early, first_early));
  }

  a.metrics = timeline_metrics(tl);
  return a;
}

}  // namespace tilesim
