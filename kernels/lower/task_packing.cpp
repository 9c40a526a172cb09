#include "kernels/lower/task_packing.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "kernels/tiling/kind_cache.hpp"
#include "model/tile_geometry.hpp"

namespace tilesim {

namespace {

// Whether step a, accumulating into GM block `ta` (0: it does not accumulate), keeps its partial
// in UB for step b after it (into `tb`): both once, into the same block.
bool keeps_in_ub(const TileStep& a, uint64_t ta, const TileStep& b, uint64_t tb) {
  return ta != 0 && ta == tb && a.repeat == 1 && b.repeat == 1;
}

// Consecutive steps accumulating into the same GM block (`target`, 0 for other steps): the
// running partial stays in UB (one fold each) and only the last step of the run stores it.
void keep_partials_in_ub(std::vector<TileStep>& steps, const std::vector<uint64_t>& target) {
  for (size_t i = 0; i + 1 < steps.size(); ++i) {
    TileStep& a = steps[i];
    TileStep& b = steps[i + 1];
    if (!keeps_in_ub(a, target[i], b, target[i + 1])) continue;
    a.stores.pop_back();
    a.accumulates = false;
    b.vec.insert(b.vec.end(), b.fold.begin(), b.fold.end());
  }
}

// The block a task's accumulating steps add into: its last write.
uint64_t accumulate_target(const TaskGraph& g, int32_t t) {
  for (const Access* a = g.access_end(t); a != g.access_begin(t);)
    if ((--a)->write) return a->block;
  return 0;
}

bool accumulates(const TaskKind& k) {
  return std::any_of(k.steps.begin(), k.steps.end(),
                     [](const TileStep& st) { return st.accumulates; });
}

const TaskKind& kind_of(const TaskGraph& g, int32_t t) {
  return g.kinds[static_cast<size_t>(g.tasks[static_cast<size_t>(t)].kind)];
}

// Whether task a, followed by task b in a pack, keeps its partial in UB for b
// (keep_partials_in_ub across the two members): a's last step and b's first accumulate, once
// each, into the same GM block.
bool keeps_partial_for(const TaskGraph& g, int32_t a, int32_t b) {
  const TaskKind &ka = kind_of(g, a), &kb = kind_of(g, b);
  if (ka.steps.empty() || kb.steps.empty()) return false;
  const TileStep &last = ka.steps.back(), &first = kb.steps.front();
  return keeps_in_ub(last, last.accumulates ? accumulate_target(g, a) : 0, first,
                     first.accumulates ? accumulate_target(g, b) : 0);
}

double kind_read_bytes(const TaskKind& k) {
  double bytes = 0;
  for (const auto& st : k.steps)
    for (const auto& op : st.loads)
      bytes += static_cast<double>(st.repeat) * static_cast<double>(op.bytes());
  return bytes;
}

// One task running members `m` back to back: their steps in order (partials accumulating into
// one GM block kept in UB), the largest member's buffers.
TaskKind packed_kind(const TaskGraph& g, const std::vector<int32_t>& m) {
  const TaskKind& first = kind_of(g, m.front());
  TaskKind k = first;
  k.steps.clear();
  int64_t biggest = -1;
  std::vector<uint64_t> target;
  for (int32_t t : m) {
    const TaskKind& mk = kind_of(g, t);
    k.steps.insert(k.steps.end(), mk.steps.begin(), mk.steps.end());
    const uint64_t into = accumulate_target(g, t);
    for (const auto& st : mk.steps) target.push_back(st.accumulates ? into : 0);
    int64_t bytes = 0;
    for (const auto& b : mk.buffers) bytes += b.bytes;
    if (bytes > biggest) {  // the largest member's buffers serve them all
      biggest = bytes;
      k.buffers = mk.buffers;
    }
  }
  keep_partials_in_ub(k.steps, target);
  if (m.size() > 1) k.label = fmt::format("{} x{}", first.label, m.size());
  return k;
}

// The packs of each (root, psg) group, in creation order within a group.
std::vector<std::vector<int32_t>> packs_of(const TaskGraph& g, const int64_t max_tasks[2],
                                           int64_t cube_copyin_cap) {
  std::map<std::pair<int32_t, int>, std::vector<int32_t>> groups;
  for (size_t i = 0; i < g.tasks.size(); ++i) {
    const auto t = static_cast<int32_t>(i);
    groups[{g.tasks[i].root, kind_of(g, t).psg}].push_back(t);
  }
  std::vector<std::vector<int32_t>> members;
  for (const auto& [key, list] : groups) {
    const TaskKind& lead = kind_of(g, list[0]);
    const int core = lead.core == CoreType::kAiv ? 0 : 1;
    const auto n = static_cast<int64_t>(list.size());
    int64_t packs = max_tasks[core] > 0 && !lead.carries_state ? std::min(n, max_tasks[core]) : n;
    if (core == 1 && cube_copyin_cap > 0 && !lead.carries_state) {
      double heaviest = 0;
      for (const int32_t t : list) heaviest = std::max(heaviest, kind_read_bytes(kind_of(g, t)));
      const auto per_pack = std::max<int64_t>(
          1, static_cast<int64_t>(static_cast<double>(cube_copyin_cap) / std::max(heaviest, 1.0)));
      packs = std::max(packs, std::min(n, ceil_div(n, per_pack)));
    }
    for (int64_t p = 0; p < packs; ++p)
      members.emplace_back(list.begin() + n * p / packs, list.begin() + n * (p + 1) / packs);
  }
  return members;
}

}  // namespace

TaskGraph pack_tasks(const TaskGraph& g, const int64_t max_tasks[2], int64_t cube_copyin_cap) {
  // Packed tasks are numbered in the order of their first member, which keeps every edge
  // pointing from an earlier to a later task.
  std::vector<std::vector<int32_t>> members = packs_of(g, max_tasks, cube_copyin_cap);
  std::sort(members.begin(), members.end(),
            [](const auto& a, const auto& b) { return a.front() < b.front(); });
  std::vector<int32_t> pack_of(g.tasks.size(), -1);
  TaskGraph out;
  out.runtime = g.runtime;
  out.psg_names = g.psg_names;
  KindCache kinds;
  // A lone member without accumulating steps keeps its kind: its new id, once per old kind.
  std::vector<int> kept(g.kinds.size(), -1);
  // A pack's kind is decided by its members' kinds and which neighbours add into one GM block
  // (keep_partials_in_ub): packs alike share their new id without building it again.
  std::map<std::vector<int64_t>, int> packed;
  std::vector<int64_t> key;
  for (const auto& m : members) {
    const Task& lead = g.tasks[static_cast<size_t>(m.front())];
    const TaskKind& first = g.kinds[static_cast<size_t>(lead.kind)];
    int kind = kept[static_cast<size_t>(lead.kind)];
    if (m.size() > 1 || accumulates(first)) {
      key.clear();
      uint64_t prev = 0;
      for (const int32_t t : m) {
        const uint64_t into = accumulates(kind_of(g, t)) ? accumulate_target(g, t) : 0;
        key.push_back(g.tasks[static_cast<size_t>(t)].kind);
        key.push_back(into != 0 && into == prev ? 1 : 0);
        prev = into;
      }
      const auto found = packed.find(key);
      kind = found != packed.end()
                 ? found->second
                 : packed.emplace(key, kinds.get(out, packed_kind(g, m))).first->second;
    } else if (kind < 0) {
      kind = kept[static_cast<size_t>(lead.kind)] = kinds.get(out, first);
    }
    const int32_t id = out.add_task(kind, lead.root, -1, lead.launch);
    for (size_t i = 0; i < m.size(); ++i) {
      const int32_t t = m[i];
      pack_of[static_cast<size_t>(t)] = id;
      // A partial kept in UB for the next member (keep_partials_in_ub) is never stored: its
      // write leaves the task's GM accesses, as it left its steps.
      const uint64_t kept_in_ub =
          i + 1 < m.size() && keeps_partial_for(g, t, m[i + 1]) ? accumulate_target(g, t) : 0;
      for (const Access* a = g.access_begin(t); a != g.access_end(t); ++a)
        if (!(a->write && a->block == kept_in_ub)) out.add_access(id, *a);
    }
  }
  for (size_t i = 0; i < g.tasks.size(); ++i)
    for (const int32_t* s = g.succ_begin(static_cast<int32_t>(i));
         s != g.succ_end(static_cast<int32_t>(i)); ++s)
      if (pack_of[i] != pack_of[static_cast<size_t>(*s)])
        out.add_edge(pack_of[i], pack_of[static_cast<size_t>(*s)]);
  out.finalize();
  return out;
}

}  // namespace tilesim
