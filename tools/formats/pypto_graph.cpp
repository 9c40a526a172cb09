#include "tools/formats/pypto_graph.hpp"
#include "tools/formats/output_file.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "kernels/spec/kernel_spec.hpp"
#include "model/error.hpp"
#include "model/json_reader.hpp"
#include "tools/formats/json_stream.hpp"

namespace tilesim {

namespace {

namespace od = simdjson::ondemand;

enum class PyptoCore : uint8_t { kAiv, kAic, kMix, kHub };

// A task kind's key: (funcName, coreType, execTime), HUB tasks at zero cycles.
struct KindKey {
  int32_t func;  // index into the funcs of whoever holds the key
  PyptoCore core;
  double cycles;
  bool operator==(const KindKey&) const = default;
};
// Hashed: a std::map took a third of the graph's build.
struct KindHash {
  size_t operator()(const KindKey& k) const {
    // +0.0 folds -0.0 into 0.0, which compare equal.
    const auto bits = std::bit_cast<uint64_t>(k.cycles + 0.0);
    return std::hash<uint64_t>()(
        bits * 0x9E3779B97F4A7C15ULL ^
        (static_cast<uint64_t>(k.func) << 8 | static_cast<uint8_t>(k.core)));
  }
};

// One batch's tasks as read, column by column, with what can be settled inside the batch
// (its kinds and root functions, numbered in first-seen order) settled by the thread that parsed
// it: the in-order join then only renumbers them into the graph's columns.
struct BatchTasks {
  std::vector<int64_t> id;
  std::vector<int32_t> kind;  // index into kinds
  std::vector<double> exec;   // as read: the graph's total sums them in file order
  std::vector<int64_t> remaining;
  std::vector<int32_t> root;        // index into roots
  std::vector<int64_t> succ;        // successor taskIds; task i's at [succ_off[i], succ_off[i+1])
  std::vector<size_t> succ_off{0};  // one more than tasks
  std::vector<std::string> funcs;
  std::vector<KindKey> kinds;  // first-seen order; func indexes funcs
  std::vector<int64_t> roots;  // root keys (tilesimRoot, or taskId >> 32), first-seen order
  int64_t hub_tasks = 0, hub_nonzero = 0, mix_tasks = 0;
  bool with_root = false;
  size_t size() const { return id.size(); }

  // Empty, keeping the room (a reader's columns serve batch after batch).
  void clear() {
    id.clear();
    kind.clear();
    exec.clear();
    remaining.clear();
    root.clear();
    succ.clear();
    succ_off.assign(1, 0);
    funcs.clear();
    kinds.clear();
    roots.clear();
    hub_tasks = hub_nonzero = mix_tasks = 0;
    with_root = false;
  }
};

// Where element `index` is: "element 3", or "element 3 (taskId 7)" once its id is known.
std::string element_path(size_t index, const std::optional<int64_t>& id) {
  return id ? fmt::format("element {} (taskId {})", index, *id) : fmt::format("element {}", index);
}

// A value shown in a message: a scalar as JSON, a composite by its type.
std::string shown(const JsonScalar& v) {
  if (v.type == JsonScalar::Type::kArray) return "an array";
  if (v.type == JsonScalar::Type::kObject) return "an object";
  if (v.type == JsonScalar::Type::kHuge) return std::string(v.text);
  return v.to_json().dump();
}

// A signed 64-bit integer >= `min` (PyPTO ids are 64-bit; a larger unsigned value is rejected
// rather than wrapped).
// `at()` gives the value's place, built only for a message.
template <class Place>
int64_t int64_at_least(const JsonScalar& v, int64_t min, const Place& at) {
  if (v.is_int() && v.i >= min) return v.i;
  if (v.type == JsonScalar::Type::kUint)
    at().fail(shown(v) + " does not fit a signed 64-bit integer");
  at().reject(v, [&](const JsonReader& r) { r.integer(min); });
}

[[noreturn]] void root_mismatch(const std::string& origin, size_t index, int64_t id,
                                bool element0_has_root) {
  JsonPlace(origin, element_path(index, id))
      .fail(element0_has_root ? "tilesimRoot missing (element 0 has one: give it on every task "
                                "or none)"
                              : "tilesimRoot given but element 0 has none (give it on every "
                                "task or none)");
}

// Reads one batch of task elements into its own BatchTasks. An element's keys come in any order:
// their values are taken first, then checked in the format's order, so every message after
// taskId names the task.
class TaskReader : public JsonBatchReader {
 public:
  explicit TaskReader(const JsonStream& stream) : stream_(stream) {}

  // Ready for the batch from element `first_index` on (the room of the last batch kept).
  void start(size_t first_index) {
    first_index_ = first_index;
    raw_.clear();
    func_index_.clear();
    kind_index_.clear();
    root_index_.clear();
    last_ = last_kind_ = -1;
  }

  BatchTasks raw_;
  size_t first_index() const { return first_index_; }

  void element(size_t index, od::value v) override {
    if (index >= static_cast<size_t>(max_tasks()))
      JsonPlace(stream_.origin(), "")
          .fail(fmt::format("the graph has more than {} tasks; the limit is {:.3g}; raise it "
                            "with --max-tasks",
                            index, static_cast<double>(max_tasks())),
                ErrorKind::kLimits);
    od::object task;
    if (v.get_object().get(task) != simdjson::SUCCESS) {
      const JsonScalar top = JsonStream::scalar(v);
      JsonPlace(stream_.origin(), element_path(index, std::nullopt))
          .fail(std::string("expected a task object, got ") + JsonScalar::type_name(top.type));
    }
    if (read_plain(index, task)) return;
    // Something is not plain: read again, each value as what it is, for the message.
    task.reset();
    collect(task);
    check(index);
  }

 private:
  enum Key { kTaskId, kFuncName, kCoreType, kExecTime, kRemaining, kSuccessors, kRoot, kKeys };
  static constexpr std::string_view kNames[kKeys] = {
      "taskId",     "funcName",   "coreType", "execTime", "remainingPredecessors",
      "successors", "tilesimRoot"};

  // The common case, read straight into typed values: every key once, integers, a known
  // coreType, values in range, tilesimRoot as on the batch's first task. False (the task
  // untouched) on anything else, which the general path then reads and names.
  bool read_plain(size_t index, od::object& task) {
    int64_t ints[kKeys] = {};         // taskId, execTime, remainingPredecessors, tilesimRoot
    std::string_view strings[kKeys];  // funcName, coreType
    unsigned seen = 0;
    succ_ids_.clear();
    other_keys_.clear();
    int next = kTaskId;  // the key expected next: writers keep one order
    for (auto member : task) {
      od::field field;
      if (std::move(member).get(field) != simdjson::SUCCESS) return false;
      Key k = next < kKeys && is_raw_key(field, kNames[next]) ? static_cast<Key>(next) : kKeys;
      if (k == kKeys) {
        const std::string_view key = JsonStream::key(field);
        k = key_of(key);
        if (k == kKeys) {
          skip_other(key, field);
          continue;
        }
      }
      next = k + 1;
      if (seen & (1u << k)) return false;
      seen |= 1u << k;
      od::value fv = field.value();
      if (k == kSuccessors) {
        od::array items;
        if (fv.get_array().get(items) != simdjson::SUCCESS) return false;
        for (auto item : items) {
          int64_t s = 0;
          if (item.get_int64().get(s) != simdjson::SUCCESS) return false;
          succ_ids_.push_back(s);
        }
      } else if ((k == kFuncName || k == kCoreType
                      ? fv.get_string().get(strings[k])
                      : fv.get_int64().get(ints[k])) != simdjson::SUCCESS) {
        return false;
      }
    }
    const bool has_root = (seen & (1u << kRoot)) != 0;
    const std::optional<PyptoCore> core = core_of(strings[kCoreType]);
    const auto exec = static_cast<double>(ints[kExecTime]);
    if ((seen | (1u << kRoot)) != (1u << kKeys) - 1 || !core || !(exec >= 0) ||
        exec > kMaxTaskCycles || ints[kRemaining] < 0 || ints[kRoot] < 0 ||
        (index != first_index_ && has_root != raw_.with_root))
      return false;
    if (index == first_index_) raw_.with_root = has_root;
    push(ints[kTaskId], strings[kFuncName], *core, exec, ints[kRemaining], succ_ids_, ints[kRoot]);
    return true;
  }

  // Whether a key is `name` as written, without an escape: its text then its closing quote (the
  // batch text is padded, so reading one byte past a shorter key stays inside it).
  static bool is_raw_key(od::field& field, std::string_view name) {
    const char* raw = field.key().raw();
    return std::memcmp(raw, name.data(), name.size()) == 0 && raw[name.size()] == '"';
  }

  // One task, checked, into the columns.
  void push(int64_t id, std::string_view func, PyptoCore core, double exec, int64_t remaining,
            const std::vector<int64_t>& succ, int64_t root) {
    raw_.succ.insert(raw_.succ.end(), succ.begin(), succ.end());
    raw_.succ_off.push_back(raw_.succ.size());
    raw_.root.push_back(root_of(raw_.with_root ? root : id >> 32));
    raw_.id.push_back(id);
    raw_.exec.push_back(exec);
    raw_.remaining.push_back(remaining);
    double cycles = exec;
    if (core == PyptoCore::kHub) {
      ++raw_.hub_tasks;
      if (cycles != 0) ++raw_.hub_nonzero;
      cycles = 0;
    }
    if (core == PyptoCore::kMix) ++raw_.mix_tasks;
    raw_.kind.push_back(kind_of({intern(func), core, cycles}));
  }

  // The batch's kind of a key: a batch holds a few kinds, found by a scan faster than a hash
  // (the map serves batches of many).
  int32_t kind_of(const KindKey& key) {
    if (last_kind_ >= 0 && raw_.kinds[static_cast<size_t>(last_kind_)] == key) return last_kind_;
    if (raw_.kinds.size() <= kScannedKinds) {
      const auto it = std::find(raw_.kinds.begin(), raw_.kinds.end(), key);
      if (it != raw_.kinds.end()) return last_kind_ = static_cast<int32_t>(it - raw_.kinds.begin());
      if (raw_.kinds.size() < kScannedKinds) {
        raw_.kinds.push_back(key);
        return last_kind_ = static_cast<int32_t>(raw_.kinds.size() - 1);
      }
      for (size_t k = 0; k < raw_.kinds.size(); ++k)
        kind_index_.emplace(raw_.kinds[k], static_cast<int32_t>(k));
    }
    if (const auto it = kind_index_.find(key); it != kind_index_.end())
      return last_kind_ = it->second;
    const auto [it, fresh] = kind_index_.emplace(key, static_cast<int32_t>(raw_.kinds.size()));
    if (fresh) raw_.kinds.push_back(key);
    return last_kind_ = it->second;
  }

  // The batch's root function of a key; a root's tasks come together, so the last is cached.
  int32_t root_of(int64_t key) {
    if (!raw_.roots.empty() && raw_.roots.back() == key)
      return static_cast<int32_t>(raw_.roots.size() - 1);
    const auto [it, fresh] = root_index_.emplace(key, static_cast<int32_t>(raw_.roots.size()));
    if (fresh) raw_.roots.push_back(key);
    return it->second;
  }

  // An informative key (predecessors, semanticLabel, ...): checked, ignored.
  void skip_other(std::string_view key, od::field& field) {
    stream_.check_new_key(key, other_keys_);
    stream_.check_ignored(field.value(), 2);
  }

  static std::optional<PyptoCore> core_of(std::string_view c) {
    if (c == "AIV") return PyptoCore::kAiv;
    if (c == "AIC") return PyptoCore::kAic;
    if (c == "HUB") return PyptoCore::kHub;
    if (c == "MIXAICORE") return PyptoCore::kMix;
    return std::nullopt;
  }

  void collect(od::object& task) {
    std::fill(std::begin(present_), std::end(present_), false);
    succ_items_.clear();
    other_keys_.clear();
    for (auto member : task) {
      od::field field = JsonStream::field(member);
      const std::string_view key = JsonStream::key(field);
      const Key k = key_of(key);
      if (k == kKeys) {
        skip_other(key, field);
        continue;
      }
      if (present_[k]) stream_.repeated_key(key);
      present_[k] = true;
      od::value fv = field.value();
      values_[k] = JsonStream::scalar(fv);
      if (k == kSuccessors && values_[k].type == JsonScalar::Type::kArray)
        for (auto item : fv.get_array()) succ_items_.push_back(JsonStream::scalar(item.value()));
    }
  }

  static Key key_of(std::string_view key) {
    return static_cast<Key>(std::find(std::begin(kNames), std::end(kNames), key) -
                            std::begin(kNames));
  }

  const JsonScalar& value(Key k, size_t index, const std::optional<int64_t>& id) const {
    if (!present_[k]) place(k, index, id).fail("missing");
    return values_[k];
  }

  JsonPlace place(Key k, size_t index, const std::optional<int64_t>& id) const {
    return JsonPlace(stream_.origin(), element_path(index, id) + "." + std::string(kNames[k]));
  }
  // The same, built only when a message needs it.
  auto place_of(Key k, size_t index, const std::optional<int64_t>& id) const {
    return [=, this] { return place(k, index, id); };
  }

  void check(size_t index) {
    const int64_t id =
        int64_at_least(value(kTaskId, index, std::nullopt), std::numeric_limits<int64_t>::min(),
                       place_of(kTaskId, index, std::nullopt));
    const JsonScalar& func = value(kFuncName, index, id);
    if (func.type != JsonScalar::Type::kString)
      place(kFuncName, index, id).reject(func, [](const JsonReader& r) { r.string(); });
    const JsonScalar& ct = value(kCoreType, index, id);
    const std::optional<PyptoCore> core =
        core_of(ct.type == JsonScalar::Type::kString ? ct.text : "");
    if (!core)
      place(kCoreType, index, id).reject(ct, [](const JsonReader& r) {
        r.one_of({"AIV", "AIC", "MIXAICORE", "HUB"});
      });
    // A task of at most kMaxTaskCycles, and the graph's total within kMaxGraphCycles, keep every
    // time exact in double: a huge execTime once gave negative waits and -inf/nan.
    const JsonScalar& ex = value(kExecTime, index, id);
    const double exec = ex.number();
    if (!ex.is_number() || !(exec >= 0 && exec <= kMaxTaskCycles))
      place(kExecTime, index, id).reject(ex, [](const JsonReader& r) {
        r.number(0, kMaxTaskCycles);
      });
    const int64_t remaining =
        int64_at_least(value(kRemaining, index, id), 0, place_of(kRemaining, index, id));
    const JsonScalar& succ = value(kSuccessors, index, id);
    if (succ.type != JsonScalar::Type::kArray)
      place(kSuccessors, index, id).fail("expected an array of taskIds, got " + shown(succ));
    succ_ids_.clear();
    for (size_t k = 0; k < succ_items_.size(); ++k)
      succ_ids_.push_back(int64_at_least(succ_items_[k], std::numeric_limits<int64_t>::min(), [&] {
        return JsonPlace(stream_.origin(),
                         fmt::format("{}.successors[{}]", element_path(index, id), k));
      }));
    // tilesimRoot on every task or none (the batch's first element speaks for it; the batches
    // are held to element 0 as they are joined).
    if (index == first_index_) raw_.with_root = present_[kRoot];
    if (present_[kRoot] != raw_.with_root)
      root_mismatch(stream_.origin(), index, id, raw_.with_root);
    const int64_t root =
        raw_.with_root ? int64_at_least(values_[kRoot], 0, place_of(kRoot, index, id)) : 0;
    push(id, func.text, *core, exec, remaining, succ_ids_, root);
  }

  // funcName -> index; tasks of one funcName usually come together, so the last one is cached.
  int32_t intern(std::string_view name) {
    if (last_ >= 0 && raw_.funcs[static_cast<size_t>(last_)] == name) return last_;
    const auto [it, fresh] =
        func_index_.emplace(std::string(name), static_cast<int32_t>(raw_.funcs.size()));
    if (fresh) raw_.funcs.emplace_back(name);
    return last_ = it->second;
  }

  const JsonStream& stream_;
  size_t first_index_ = 0;
  bool present_[kKeys] = {};
  JsonScalar values_[kKeys];
  std::vector<JsonScalar> succ_items_;
  std::vector<int64_t> succ_ids_;
  std::vector<std::string> other_keys_;
  std::unordered_map<std::string, int32_t> func_index_;
  static constexpr size_t kScannedKinds = 16;
  std::unordered_map<KindKey, int32_t, KindHash> kind_index_;  // beyond kScannedKinds kinds
  std::unordered_map<int64_t, int32_t> root_index_;
  int32_t last_ = -1, last_kind_ = -1;
};

// taskId -> task index: a table when the ids are dense (tilesim's own and most PyPTO graphs),
// else a hash map.
class IndexOf {
 public:
  IndexOf(const std::vector<int64_t>& ids, const std::string& origin) {
    const size_t n = ids.size();
    const auto [lo, hi] = std::minmax_element(ids.begin(), ids.end());
    dense_ = static_cast<__int128>(*hi) - *lo < static_cast<__int128>(2 * n);
    min_ = *lo;
    if (dense_)
      table_.assign(static_cast<size_t>(*hi - *lo + 1), -1);
    else
      map_.reserve(n * 2);
    for (size_t i = 0; i < n; ++i) {
      int32_t& slot = dense_ ? table_[static_cast<size_t>(ids[i] - min_)]
                             : map_.emplace(ids[i], -1).first->second;
      if (slot >= 0)
        JsonPlace(origin, element_path(i, ids[i]))
            .fail(fmt::format("duplicate taskId (also element {})", slot));
      slot = static_cast<int32_t>(i);
    }
  }
  int32_t find(int64_t id) const {
    if (dense_) {
      const __int128 k = static_cast<__int128>(id) - min_;
      return k < 0 || k >= static_cast<__int128>(table_.size()) ? -1
                                                                : table_[static_cast<size_t>(k)];
    }
    const auto it = map_.find(id);
    return it == map_.end() ? -1 : it->second;
  }

 private:
  bool dense_ = false;
  int64_t min_ = 0;
  std::vector<int32_t> table_;
  std::unordered_map<int64_t, int32_t> map_;
};

// Successor lists as task indices (CSR over the tasks), a repeated successor counted once (with
// a warning).
struct Successors {
  std::vector<int64_t> off;  // TaskGraph::finalize's layout, so the graph takes them as they are
  std::vector<int32_t> to;
  size_t begin(size_t i) const { return static_cast<size_t>(off[i]); }
  size_t end(size_t i) const { return static_cast<size_t>(off[i + 1]); }
};

// The graph, built batch by batch as the batches are joined (in file order): each batch's tasks go
// straight into the graph's columns, its kinds and root functions renumbered into the graph's.
// What needs every task (successor ids to indices, the checks) follows the last batch.
class GraphBuilder {
 public:
  GraphBuilder(const std::string& origin, PyptoGraph& out) : origin_(origin), out_(out) {
    out_.graph.runtime = RuntimeStyle::kMpmd;
  }

  size_t size() const { return ids_.size(); }

  // Room for n tasks of `edges_per_task` successors each (untouched room costs no memory).
  void reserve(size_t n, double edges_per_task) {
    out_.graph.reserve(n, 0);
    ids_.reserve(n);
    remaining_.reserve(n);
    succ_off_.reserve(n + 1);
    succ_rel_.reserve(static_cast<size_t>(static_cast<double>(n) * edges_per_task));
  }

  void append(const BatchTasks& b) {
    TaskGraph& g = out_.graph;
    kind_map_.clear();
    for (const KindKey& k : b.kinds) kind_map_.push_back(graph_kind(b, k));
    root_map_.clear();
    for (const int64_t key : b.roots) {
      const auto [it, fresh] = root_index_.emplace(key, static_cast<int32_t>(root_keys_.size()));
      if (fresh) root_keys_.push_back(key);
      root_map_.push_back(it->second);
    }
    const size_t n = b.size();
    for (size_t i = 0; i < n; ++i) {
      total_ += b.exec[i];  // in file order, as one sum
      g.add_task(kind_map_[static_cast<size_t>(b.kind[i])],
                 root_map_[static_cast<size_t>(b.root[i])]);
    }
    for (size_t i = 0; i < n; ++i) {
      // A count beyond int32 never equals an in-degree: it is kept aside, for the message.
      const int64_t r = b.remaining[i];
      if (r >= kBigRemaining) big_remaining_.emplace_back(ids_.size() + i, r);
      remaining_.push_back(static_cast<int32_t>(std::min(r, kBigRemaining)));
    }
    if (ids_.empty()) base_id_ = b.id[0];
    for (size_t i = 0; i < n; ++i)
      consecutive_ = consecutive_ && static_cast<__int128>(b.id[i]) - base_id_ ==
                                         static_cast<__int128>(ids_.size() + i);
    ids_.insert(ids_.end(), b.id.begin(), b.id.end());
    const auto base = static_cast<int64_t>(edges());
    add_successors(b.succ);
    for (size_t i = 1; i < b.succ_off.size(); ++i)
      succ_off_.push_back(base + static_cast<int64_t>(b.succ_off[i]));
    out_.hub_tasks += b.hub_tasks;
    out_.mixaicore_tasks += b.mix_tasks;
    hub_nonzero_ += b.hub_nonzero;
  }

  // After the last batch: the checks that need every task, then the graph finalized.
  void finish() {
    const JsonPlace top(origin_, "");
    if (size() == 0) top.fail("the task graph has no tasks");
    if (size() > static_cast<size_t>(std::numeric_limits<int32_t>::max() - 1))
      top.fail(fmt::format("{} tasks (allowed: up to {})", size(),
                           std::numeric_limits<int32_t>::max() - 1),
               ErrorKind::kLimits);
    if (total_ > kMaxGraphCycles)
      top.fail(fmt::format("the tasks' execTime sum to {:.4g} cycles (allowed: at most {:.4g}, "
                           "where every cycle of the timeline is exact in double precision)",
                           total_, kMaxGraphCycles),
               ErrorKind::kLimits);
    Successors succ = successor_indices();
    std::vector<int32_t> indeg(size(), 0);
    for (const int32_t t : succ.to) ++indeg[static_cast<size_t>(t)];
    check_remaining(indeg);
    check_acyclic(succ, indeg);
    indeg = {};
    if (hub_nonzero_ > 0)
      out_.warnings.push_back(fmt::format(
          "{}: {} HUB task(s) have a non-zero execTime; HUB tasks are modeled as zero-cycle "
          "bookkeeping tasks",
          origin_, hub_nonzero_));
    rank_roots();
    out_.graph.finalize(std::move(succ.off), std::move(succ.to));
    out_.task_ids = std::move(ids_);
  }

 private:
  static constexpr int64_t kBigRemaining = std::numeric_limits<int32_t>::max();

  // The graph's kind of a batch's kind (one kind per (funcName, coreType, execTime), one PSG per
  // funcName), made at its first task.
  int32_t graph_kind(const BatchTasks& b, const KindKey& k) {
    const std::string& func = b.funcs[static_cast<size_t>(k.func)];
    const auto [f, fresh_func] = func_index_.emplace(func, static_cast<int32_t>(psg_of_.size()));
    if (fresh_func) psg_of_.push_back(-1);
    const KindKey key{f->second, k.core, k.cycles};
    const auto it = kind_of_.find(key);
    if (it != kind_of_.end()) return it->second;
    TaskGraph& g = out_.graph;
    int& psg = psg_of_[static_cast<size_t>(f->second)];
    if (psg < 0) {
      psg = static_cast<int>(g.psg_names.size());
      g.psg_names.push_back(func);
    }
    TaskKind kind;
    kind.label = func;
    kind.core =
        k.core == PyptoCore::kAic || k.core == PyptoCore::kMix ? CoreType::kAic : CoreType::kAiv;
    kind.psg = psg;
    const int32_t index = g.add_kind(std::move(kind));
    kind_of_.emplace(key, index);
    TaskCost c;
    c.cycles = k.cycles;
    out_.kind_costs.push_back(c);
    return index;
  }

  size_t edges() const { return wide_ ? succ_ids_.size() : succ_rel_.size(); }

  // Successor taskIds, kept as 4-byte offsets from the first task's id while they fit (a
  // successor is a later task: tilesim's and PyPTO's ids count up), else as they are.
  void add_successors(const std::vector<int64_t>& ids) {
    size_t e = 0;
    if (!wide_) {
      for (; e < ids.size(); ++e) {
        const __int128 rel = static_cast<__int128>(ids[e]) - base_id_;
        if (rel < 0 || rel >= std::numeric_limits<int32_t>::max()) break;
        succ_rel_.push_back(static_cast<int32_t>(rel));
      }
      if (e == ids.size()) return;
      wide_ = true;
      succ_ids_.reserve(succ_rel_.capacity());
      for (const int32_t r : succ_rel_) succ_ids_.push_back(base_id_ + r);
      succ_rel_ = {};
    }
    succ_ids_.insert(succ_ids_.end(), ids.begin() + static_cast<std::ptrdiff_t>(e), ids.end());
  }

  // Successor ids to task indices, each list sorted, repeats dropped, in place (the offsets and
  // the indices compacted as they are read); the ids' column is freed. Ids i == first + i
  // need no lookup: the offset is the index.
  Successors successor_indices() {
    const size_t n = size();
    std::optional<IndexOf> index_of;
    if (wide_ || !consecutive_) index_of.emplace(ids_, origin_);  // refuses a repeated taskId
    Successors out;
    out.to = wide_ ? std::vector<int32_t>(succ_ids_.size()) : std::move(succ_rel_);
    const auto id_of = [&](size_t e) { return wide_ ? succ_ids_[e] : base_id_ + out.to[e]; };
    int64_t duplicate_edges = 0;
    std::string first_duplicate;
    size_t w = 0;  // entries kept so far; never past the entry being read
    for (size_t i = 0; i < n; ++i) {
      const size_t begin = w;
      for (auto e = static_cast<size_t>(succ_off_[i]); e < static_cast<size_t>(succ_off_[i + 1]);
           ++e) {
        const int32_t s = index_of                             ? index_of->find(id_of(e))
                          : static_cast<size_t>(out.to[e]) < n ? out.to[e]
                                                               : -1;
        if (s < 0)
          JsonPlace(origin_, element_path(i, ids_[i]))
              .fail(fmt::format("successor {} is not a taskId of this graph", id_of(e)));
        if (s == static_cast<int32_t>(i))
          JsonPlace(origin_, element_path(i, ids_[i])).fail("lists itself as successor");
        out.to[w++] = s;
      }
      const auto first = out.to.begin() + static_cast<std::ptrdiff_t>(begin);
      const auto last = out.to.begin() + static_cast<std::ptrdiff_t>(w);
      if (!std::is_sorted(first, last)) std::sort(first, last);
      const auto dup = std::unique(first, last);
      if (dup != last) {
        if (duplicate_edges == 0)
          first_duplicate = fmt::format("taskId {} lists successor {} twice", ids_[i],
                                        ids_[static_cast<size_t>(*dup)]);
        duplicate_edges += last - dup;
        w = static_cast<size_t>(dup - out.to.begin());
      }
      // Offset i + 1 is read above before it is written here: the compaction never overtakes.
      succ_off_[i] = static_cast<int64_t>(begin);
    }
    succ_off_[n] = static_cast<int64_t>(w);
    out.to.resize(w);
    if (duplicate_edges > 0)
      out_.warnings.push_back(
          fmt::format("{}: {} repeated successor entries counted once (first: {})", origin_,
                      duplicate_edges, first_duplicate));
    succ_ids_ = {};
    out.off = std::move(succ_off_);
    return out;
  }

  // remainingPredecessors against the in-degrees the successor lists give (a warning: the lists
  // are what the scheduler resolves).
  void check_remaining(const std::vector<int32_t>& indeg) {
    int64_t mismatched = 0;
    std::string first_mismatch;
    for (size_t i = 0; i < size(); ++i)
      if (remaining_[i] != indeg[i] && mismatched++ == 0)
        first_mismatch = fmt::format("taskId {} says {}, successor lists give {}", ids_[i],
                                     remaining_of(i), indeg[i]);
    if (mismatched > 0)
      out_.warnings.push_back(
          fmt::format("{}: remainingPredecessors differs from the successor lists for {} task(s) "
                      "(first: {}); the successor lists are used",
                      origin_, mismatched, first_mismatch));
    remaining_ = {};
  }

  int64_t remaining_of(size_t i) const {
    if (remaining_[i] < kBigRemaining) return remaining_[i];
    return std::lower_bound(big_remaining_.begin(), big_remaining_.end(),
                            std::pair<size_t, int64_t>(i, 0))
        ->second;
  }

  // Kahn's algorithm; on a cycle, walks predecessors from a stuck task onto the cycle and names
  // it.
  void check_acyclic(const Successors& succ, const std::vector<int32_t>& indeg) const {
    const size_t n = indeg.size();
    // Every edge forward in the file (as PyPTO writes them): the file's order is a topological
    // one.
    bool forward = true;
    for (size_t i = 0; i < n && forward; ++i)
      for (size_t e = succ.begin(i); e < succ.end(i); ++e)
        forward = forward && static_cast<size_t>(succ.to[e]) > i;
    if (forward) return;
    std::vector<int32_t> left = indeg;
    std::vector<int32_t> queue;
    queue.reserve(n);
    for (size_t i = 0; i < n; ++i)
      if (left[i] == 0) queue.push_back(static_cast<int32_t>(i));
    for (size_t q = 0; q < queue.size(); ++q) {
      const auto t = static_cast<size_t>(queue[q]);
      for (size_t e = succ.begin(t); e < succ.end(t); ++e)
        if (--left[static_cast<size_t>(succ.to[e])] == 0) queue.push_back(succ.to[e]);
    }
    if (queue.size() == n) return;
    std::vector<int32_t> stuck_pred(n, -1);
    for (size_t i = 0; i < n; ++i)
      if (left[i] > 0)
        for (size_t e = succ.begin(i); e < succ.end(i); ++e)
          if (left[static_cast<size_t>(succ.to[e])] > 0)
            stuck_pred[static_cast<size_t>(succ.to[e])] = static_cast<int32_t>(i);
    int32_t t = 0;
    while (left[static_cast<size_t>(t)] == 0) ++t;
    for (size_t step = 0; step < n; ++step) t = stuck_pred[static_cast<size_t>(t)];
    throw Error(
        fmt::format("{}: dependency cycle through taskId {} ({} of {} tasks can never "
                    "become ready)",
                    origin_, ids_[static_cast<size_t>(t)], n - queue.size(), n));
  }

  // Root functions were numbered in first-seen order; they are numbered by increasing key
  // (tilesimRoot, or the PyPTO device task taskId >> 32): the same when the keys come in order.
  void rank_roots() {
    if (std::is_sorted(root_keys_.begin(), root_keys_.end())) return;
    std::vector<int32_t> order(root_keys_.size());
    for (size_t r = 0; r < order.size(); ++r) order[r] = static_cast<int32_t>(r);
    std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
      return root_keys_[static_cast<size_t>(a)] < root_keys_[static_cast<size_t>(b)];
    });
    std::vector<int32_t> rank(order.size());
    for (size_t r = 0; r < order.size(); ++r)
      rank[static_cast<size_t>(order[r])] = static_cast<int32_t>(r);
    for (Task& t : out_.graph.tasks) t.root = rank[static_cast<size_t>(t.root)];
  }

  const std::string& origin_;
  PyptoGraph& out_;
  std::vector<int64_t> ids_;
  std::vector<int32_t> remaining_;                         // clamped to kBigRemaining
  std::vector<std::pair<size_t, int64_t>> big_remaining_;  // (task, count) of those clamped
  int64_t base_id_ = 0;                                    // the first task's taskId
  bool consecutive_ = true;        // every taskId so far is base_id_ + its index
  bool wide_ = false;              // a successor did not fit succ_rel_: succ_ids_ holds them all
  std::vector<int32_t> succ_rel_;  // successor taskId - base_id_
  std::vector<int64_t> succ_ids_;
  std::vector<int64_t> succ_off_{0};
  double total_ = 0;
  int64_t hub_nonzero_ = 0;
  std::unordered_map<std::string, int32_t> func_index_;  // funcName -> index into psg_of_
  std::vector<int> psg_of_;
  std::unordered_map<KindKey, int32_t, KindHash> kind_of_;
  std::unordered_map<int64_t, int32_t> root_index_;  // root key -> first-seen number
  std::vector<int64_t> root_keys_;
  std::vector<int32_t> kind_map_, root_map_;  // the batch being joined: its numbers -> graph's
};

PyptoGraph read_graph(JsonStream& stream, int threads) {
  const std::string& origin = stream.origin();
  PyptoGraph out;
  GraphBuilder graph(origin, out);
  bool with_root = false;
  bool joined_any = false;
  // Readers, reused batch after batch (their columns keep their room).
  std::mutex spare_mutex;
  std::vector<std::unique_ptr<JsonBatchReader>> spare;
  stream.for_each_batch(
      threads,
      [&](size_t first_index) {
        std::unique_ptr<JsonBatchReader> reader;
        {
          const std::lock_guard lock(spare_mutex);
          if (!spare.empty()) {
            reader = std::move(spare.back());
            spare.pop_back();
          }
        }
        if (!reader) reader = std::make_unique<TaskReader>(stream);
        static_cast<TaskReader&>(*reader).start(first_index);
        return reader;
      },
      [&](std::unique_ptr<JsonBatchReader> reader, bool failed) {
        if (!reader) return;
        const auto keep = [&] {
          const std::lock_guard lock(spare_mutex);
          spare.push_back(std::move(reader));
        };
        const auto& batch = static_cast<const TaskReader&>(*reader);
        const BatchTasks& b = batch.raw_;
        if (b.size() == 0) return keep();
        // Element 0 says whether every task has a tilesimRoot; the batch's first element may
        // be the first to differ (the batch checked the rest against it).
        if (!joined_any) {
          // Room for the whole file's tasks, if they are like the first batch's.
          with_root = b.with_root;
          const double per_task =
              static_cast<double>(reader->bytes) / static_cast<double>(b.size());
          graph.reserve(static_cast<size_t>(
                            std::min(static_cast<double>(stream.size_bytes()) / per_task * 1.05,
                                     static_cast<double>(max_tasks()))),
                        static_cast<double>(b.succ.size()) / static_cast<double>(b.size()));
        }
        if (b.with_root != with_root)
          root_mismatch(origin, batch.first_index(), b.id[0], with_root);
        joined_any = true;
        if (!failed) graph.append(b);
        keep();
      },
      [&](JsonScalar::Type type) {
        JsonPlace(origin, "")
            .fail(std::string("expected a fixed-latency task graph (a JSON array "
                              "of task objects), got ") +
                  JsonScalar::type_name(type));
      });
  graph.finish();
  return out;
}
}  // namespace

PyptoGraph pypto_graph_from_text(std::string text, const std::string& origin, int threads) {
  JsonStream stream(std::move(text), origin, "fixed-latency task graph");
  return read_graph(stream, threads);
}

PyptoGraph pypto_graph_from_json(const nlohmann::json& doc, const std::string& origin) {
  return pypto_graph_from_text(doc.dump(), origin);
}

PyptoGraph load_pypto_graph(const std::filesystem::path& file, int threads) {
  JsonStream stream(file, "fixed-latency task graph");
  return read_graph(stream, threads);
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
