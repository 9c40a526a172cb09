#include "tools/formats/pypto_graph.hpp"
#include "tools/formats/output_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <tuple>
#include <unordered_map>

#include "model/error.hpp"
#include "model/json_reader.hpp"
#include "tools/formats/run_config.hpp"

namespace tilesim {

namespace {

enum class PyptoCore { kAiv, kAic, kMix, kHub };

struct RawTask {
  int64_t id = 0;
  std::string func;
  PyptoCore core = PyptoCore::kAiv;
  double exec = 0;
  int64_t remaining = 0;
  std::vector<int64_t> succ;
  std::optional<int64_t> root;
};

// Where element `index` is: "element 3", or "element 3 (taskId 7)" once its id is known.
std::string element_path(size_t index, const std::optional<int64_t>& id) {
  return id ? fmt::format("element {} (taskId {})", index, *id) : fmt::format("element {}", index);
}

// The document's elements, each read with its index (and taskId) in every message.
class Elements {
 public:
  Elements(const nlohmann::json& doc, std::string origin) : doc_(doc), origin_(std::move(origin)) {}
  JsonReader at(size_t index, const std::optional<int64_t>& id = std::nullopt) const {
    return JsonReader(doc_[index], origin_, element_path(index, id));
  }
  [[noreturn]] void fail(size_t index, const std::optional<int64_t>& id,
                         const std::string& what) const {
    at(index, id).fail(what);
  }

 private:
  const nlohmann::json& doc_;
  std::string origin_;
};

// A signed 64-bit integer >= `min` (PyPTO ids are 64-bit; a larger unsigned value is rejected
// rather than wrapped).
int64_t int64_at_least(const JsonReader& r, int64_t min) {
  const auto& v = r.json();
  if (v.is_number_unsigned() &&
      v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
    r.fail(v.dump() + " does not fit a signed 64-bit integer");
  return r.integer(min);
}

RawTask parse_task(const Elements& elements, size_t index) {
  const JsonReader first = elements.at(index);
  if (!first.json().is_object())
    first.fail(std::string("expected a task object, got ") + first.json().type_name());
  RawTask t;
  t.id = int64_at_least(first.at("taskId"), std::numeric_limits<int64_t>::min());
  const JsonReader e = elements.at(index, t.id);
  t.func = e.at("funcName").string();
  const std::string ct = e.at("coreType").one_of({"AIV", "AIC", "MIXAICORE", "HUB"});
  t.core = ct == "AIV"   ? PyptoCore::kAiv
           : ct == "AIC" ? PyptoCore::kAic
           : ct == "HUB" ? PyptoCore::kHub
                         : PyptoCore::kMix;
  // A task of at most kMaxTaskCycles, and the graph's total within kMaxGraphCycles (below), keep
  // every time exact in double: a huge execTime once gave negative waits and -inf/nan.
  t.exec = e.at("execTime").number(0, kMaxTaskCycles);
  t.remaining = int64_at_least(e.at("remainingPredecessors"), 0);
  const JsonReader succ = e.at("successors");
  if (!succ.json().is_array()) succ.fail("expected an array of taskIds, got " + succ.json().dump());
  t.succ.reserve(succ.json().size());
  for (const auto& s : succ.items())
    t.succ.push_back(int64_at_least(s, std::numeric_limits<int64_t>::min()));
  if (const auto root = e.find("tilesimRoot")) t.root = int64_at_least(*root, 0);
  return t;
}

// Dense rank of each value among the distinct values, in increasing order.
std::vector<int32_t> dense_rank(const std::vector<int64_t>& keys) {
  std::vector<int64_t> sorted = keys;
  std::sort(sorted.begin(), sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
  std::vector<int32_t> rank(keys.size());
  for (size_t i = 0; i < keys.size(); ++i)
    rank[i] = static_cast<int32_t>(std::lower_bound(sorted.begin(), sorted.end(), keys[i]) -
                                   sorted.begin());
  return rank;
}

// Successor lists as task indices, a repeated successor counted once (with a warning).
std::vector<std::vector<int32_t>> successor_indices(const Elements& elements,
                                                    const std::vector<RawTask>& raw,
                                                    const std::string& origin,
                                                    std::vector<std::string>& warnings) {
  const size_t n = raw.size();
  std::unordered_map<int64_t, int32_t> index_of;
  index_of.reserve(n * 2);
  for (size_t i = 0; i < n; ++i) {
    const auto [it, fresh] = index_of.emplace(raw[i].id, static_cast<int32_t>(i));
    if (!fresh)
      elements.fail(i, raw[i].id, fmt::format("duplicate taskId (also element {})", it->second));
  }
  std::vector<std::vector<int32_t>> succ(n);
  int64_t duplicate_edges = 0;
  std::string first_duplicate;
  for (size_t i = 0; i < n; ++i) {
    auto& s = succ[i];
    s.reserve(raw[i].succ.size());
    for (const int64_t sid : raw[i].succ) {
      const auto it = index_of.find(sid);
      if (it == index_of.end())
        elements.fail(i, raw[i].id, fmt::format("successor {} is not a taskId of this graph", sid));
      if (it->second == static_cast<int32_t>(i))
        elements.fail(i, raw[i].id, "lists itself as successor");
      s.push_back(it->second);
    }
    std::sort(s.begin(), s.end());
    const auto dup = std::unique(s.begin(), s.end());
    if (dup != s.end()) {
      if (duplicate_edges == 0)
        first_duplicate = fmt::format("taskId {} lists successor {} twice", raw[i].id,
                                      raw[static_cast<size_t>(*dup)].id);
      duplicate_edges += s.end() - dup;
      s.erase(dup, s.end());
    }
  }
  if (duplicate_edges > 0)
    warnings.push_back(fmt::format("{}: {} repeated successor entries counted once (first: {})",
                                   origin, duplicate_edges, first_duplicate));
  return succ;
}

// remainingPredecessors against the in-degrees the successor lists give (a warning: the lists
// are what the scheduler resolves).
void check_remaining(const std::vector<RawTask>& raw, const std::vector<int32_t>& indeg,
                     const std::string& origin, std::vector<std::string>& warnings) {
  int64_t mismatched = 0;
  std::string first_mismatch;
  for (size_t i = 0; i < raw.size(); ++i)
    if (raw[i].remaining != indeg[i] && mismatched++ == 0)
      first_mismatch = fmt::format("taskId {} says {}, successor lists give {}", raw[i].id,
                                   raw[i].remaining, indeg[i]);
  if (mismatched > 0)
    warnings.push_back(
        fmt::format("{}: remainingPredecessors differs from the successor lists for {} task(s) "
                    "(first: {}); the successor lists are used",
                    origin, mismatched, first_mismatch));
}

// Kahn's algorithm; on a cycle, walks predecessors from a stuck task onto the cycle and names it.
void check_acyclic(const std::vector<std::vector<int32_t>>& succ, std::vector<int32_t> left,
                   const std::vector<RawTask>& raw, const std::string& origin) {
  const size_t n = succ.size();
  std::vector<int32_t> queue;
  queue.reserve(n);
  for (size_t i = 0; i < n; ++i)
    if (left[i] == 0) queue.push_back(static_cast<int32_t>(i));
  for (size_t q = 0; q < queue.size(); ++q)
    for (const int32_t s : succ[static_cast<size_t>(queue[q])])
      if (--left[static_cast<size_t>(s)] == 0) queue.push_back(s);
  if (queue.size() == n) return;
  std::vector<int32_t> stuck_pred(n, -1);
  for (size_t i = 0; i < n; ++i)
    if (left[i] > 0)
      for (const int32_t s : succ[i])
        if (left[static_cast<size_t>(s)] > 0)
          stuck_pred[static_cast<size_t>(s)] = static_cast<int32_t>(i);
  int32_t t = 0;
  while (left[static_cast<size_t>(t)] == 0) ++t;
  for (size_t step = 0; step < n; ++step) t = stuck_pred[static_cast<size_t>(t)];
  throw Error(
      fmt::format("{}: dependency cycle through taskId {} ({} of {} tasks can never "
                  "become ready)",
                  origin, raw[static_cast<size_t>(t)].id, n - queue.size(), n));
}

// Root function of each task: tilesimRoot on every task or none; without it, the PyPTO device
// task (taskId >> 32).
std::vector<int32_t> root_functions(const Elements& elements, const std::vector<RawTask>& raw) {
  const size_t n = raw.size();
  const bool with_root = raw[0].root.has_value();
  for (size_t i = 1; i < n; ++i)
    if (raw[i].root.has_value() != with_root)
      elements.fail(
          i, raw[i].id,
          with_root ? "tilesimRoot missing (element 0 has one: give it on every task or none)"
                    : "tilesimRoot given but element 0 has none (give it on every task or none)");
  std::vector<int64_t> root_key(n);
  for (size_t i = 0; i < n; ++i) root_key[i] = with_root ? *raw[i].root : (raw[i].id >> 32);
  return dense_rank(root_key);
}

// The graph: one kind per (funcName, coreType, execTime), one PSG per funcName.
void build_graph(const std::vector<RawTask>& raw, const std::vector<int32_t>& root,
                 const std::vector<std::vector<int32_t>>& succ, const std::string& origin,
                 PyptoGraph& out) {
  TaskGraph& g = out.graph;
  g.runtime = RuntimeStyle::kMpmd;
  std::unordered_map<std::string, int> psg_of;
  std::map<std::tuple<std::string, int, double>, int32_t> kind_of;
  int64_t hub_nonzero = 0;
  const size_t n = raw.size();
  g.tasks.reserve(n);
  out.task_ids.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const RawTask& t = raw[i];
    double cycles = t.exec;
    if (t.core == PyptoCore::kHub) {
      ++out.hub_tasks;
      if (cycles != 0) ++hub_nonzero;
      cycles = 0;
    }
    if (t.core == PyptoCore::kMix) ++out.mixaicore_tasks;
    const auto key = std::make_tuple(t.func, static_cast<int>(t.core), cycles);
    auto it = kind_of.find(key);
    if (it == kind_of.end()) {
      auto [pit, fresh] = psg_of.emplace(t.func, static_cast<int>(g.psg_names.size()));
      if (fresh) g.psg_names.push_back(t.func);
      TaskKind k;
      k.label = t.func;
      k.core =
          t.core == PyptoCore::kAic || t.core == PyptoCore::kMix ? CoreType::kAic : CoreType::kAiv;
      k.psg = pit->second;
      it = kind_of.emplace(key, g.add_kind(std::move(k))).first;
      TaskCost c;
      c.cycles = cycles;
      out.kind_costs.push_back(c);
    }
    g.add_task(it->second, root[i]);
    out.task_ids.push_back(t.id);
  }
  if (hub_nonzero > 0)
    out.warnings.push_back(fmt::format(
        "{}: {} HUB task(s) have a non-zero execTime; HUB tasks are modeled as zero-cycle "
        "bookkeeping tasks",
        origin, hub_nonzero));
  for (size_t i = 0; i < n; ++i)
    for (const int32_t s : succ[i]) g.add_edge(static_cast<int32_t>(i), s);
  g.finalize();
}

}  // namespace

PyptoGraph pypto_graph_from_json(const nlohmann::json& doc, const std::string& origin) {
  const JsonReader top(doc, origin);
  if (!doc.is_array())
    top.fail(std::string("expected a fixed-latency task graph (a JSON array of task objects), "
                         "got ") +
             doc.type_name());
  if (doc.empty()) top.fail("the task graph has no tasks");
  if (doc.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max() - 1))
    top.fail(fmt::format("{} tasks (allowed: up to {})", doc.size(),
                         std::numeric_limits<int32_t>::max() - 1),
             ErrorKind::kLimits);
  const Elements elements(doc, origin);
  std::vector<RawTask> raw;
  raw.reserve(doc.size());
  for (size_t i = 0; i < doc.size(); ++i) raw.push_back(parse_task(elements, i));
  double total = 0;
  for (const RawTask& t : raw) total += t.exec;
  if (total > kMaxGraphCycles)
    top.fail(fmt::format("the tasks' execTime sum to {:.4g} cycles (allowed: at most {:.4g}, "
                         "where every cycle of the timeline is exact in double precision)",
                         total, kMaxGraphCycles),
             ErrorKind::kLimits);

  PyptoGraph out;
  const auto succ = successor_indices(elements, raw, origin, out.warnings);
  std::vector<int32_t> indeg(raw.size(), 0);
  for (const auto& s : succ)
    for (const int32_t t : s) ++indeg[static_cast<size_t>(t)];
  check_remaining(raw, indeg, origin, out.warnings);
  check_acyclic(succ, indeg, raw, origin);
  build_graph(raw, root_functions(elements, raw), succ, origin, out);
  return out;
}

PyptoGraph load_pypto_graph(const std::filesystem::path& file) {
  return pypto_graph_from_json(read_json_file(file, "fixed-latency task graph"), file.string());
}

nlohmann::ordered_json pypto_graph_to_json(const TaskGraph& graph, const SimResult& sim) {
  if (!graph.finalized() || sim.tasks.size() != graph.tasks.size())
    throw InternalError("export graph: needs a finalized graph and its simulation result");
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  // A graph of several launches: HUB task n + k (zero cycles) follows every task of launch k and
  // precedes every task of launch k + 1, so a replay keeps the launch order.
  const auto n = static_cast<int64_t>(graph.tasks.size());
  std::vector<int64_t> in_launch(static_cast<size_t>(graph.num_launches()), 0);
  for (const Task& task : graph.tasks) ++in_launch[static_cast<size_t>(task.launch)];
  for (size_t i = 0; i < graph.tasks.size(); ++i) {
    const auto t = static_cast<int32_t>(i);
    const Task& task = graph.tasks[i];
    const TaskKind& kind = graph.kinds[static_cast<size_t>(task.kind)];
    const TaskRecord& r = sim.tasks[i];
    nlohmann::ordered_json succ = nlohmann::ordered_json::array();
    for (const int32_t* s = graph.succ_begin(t); s != graph.succ_end(t); ++s) succ.push_back(*s);
    if (task.launch + 1 < graph.num_launches()) succ.push_back(n + task.launch);
    nlohmann::ordered_json e = nlohmann::ordered_json::object();
    e["taskId"] = static_cast<int64_t>(i);
    e["funcName"] = graph.psg_names[static_cast<size_t>(kind.psg)];
    e["coreType"] = core_type_name(kind.core);
    // Exact durations: rounding them to whole cycles moves completions across polling slots
    // and the replay drifts (0.4% on configs/examples/add_pypto.json); integral ones print as
    // integers.
    const double dur = r.end - r.start;
    if (dur == std::floor(dur) && std::abs(dur) < 9e15)
      e["execTime"] = static_cast<int64_t>(dur);
    else
      e["execTime"] = dur;
    e["remainingPredecessors"] = graph.indegree(t) + (task.launch > 0 ? 1 : 0);
    e["successors"] = std::move(succ);
    e["semanticLabel"] = kind.label;
    e["tilesimRoot"] = task.root;
    out.push_back(std::move(e));
  }
  for (int32_t k = 0; k + 1 < graph.num_launches(); ++k) {
    nlohmann::ordered_json succ = nlohmann::ordered_json::array();
    for (size_t i = 0; i < graph.tasks.size(); ++i)
      if (graph.tasks[i].launch == k + 1) succ.push_back(static_cast<int64_t>(i));
    nlohmann::ordered_json e = nlohmann::ordered_json::object();
    e["taskId"] = n + k;
    e["funcName"] = "launch_barrier";
    e["coreType"] = "HUB";
    e["execTime"] = 0;
    e["remainingPredecessors"] = in_launch[static_cast<size_t>(k)] + (k > 0 ? 1 : 0);
    e["successors"] = std::move(succ);
    e["semanticLabel"] = fmt::format("launch {} -> {}", k, k + 1);
    e["tilesimRoot"] = 0;
    out.push_back(std::move(e));
  }
  return out;
}

void write_pypto_graph(const std::filesystem::path& file, const TaskGraph& graph,
                       const SimResult& sim) {
  const nlohmann::ordered_json doc = pypto_graph_to_json(graph, sim);
  write_file_atomically(
      file,
      [&](std::ostream& out) {
        // One task per line: readable, and diff-friendly.
        out << "[\n";
        for (size_t i = 0; i < doc.size(); ++i)
          out << "  " << doc[i].dump() << (i + 1 < doc.size() ? ",\n" : "\n");
        out << "]\n";
      },
      "the task graph");
}

}  // namespace tilesim
