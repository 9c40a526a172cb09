#include "model/task_graph.hpp"

#include <algorithm>

#include "model/error.hpp"
#include "model/stop.hpp"

namespace tilesim {

const char* core_type_name(CoreType t) {
  return enum_name(kCoreTypeNames, t);
}

const char* vec_class_name(VecClass c) {
  return enum_name(kVecClassNames, c);
}

const char* dma_path_name(DmaPath p) {
  return enum_name(kDmaPathNames, p);
}

const char* mem_space_name(MemSpace m) {
  return enum_name(kMemSpaceNames, m);
}

int TaskGraph::add_psg(const std::string& name) {
  auto it = std::find(psg_names.begin(), psg_names.end(), name);
  if (it != psg_names.end()) return static_cast<int>(it - psg_names.begin());
  psg_names.push_back(name);
  return static_cast<int>(psg_names.size() - 1);
}

int TaskGraph::add_kind(TaskKind kind) {
  kinds.push_back(std::move(kind));
  return static_cast<int>(kinds.size() - 1);
}

int32_t TaskGraph::add_task(int32_t kind, int32_t root, int32_t pinned_core, int32_t launch,
                            bool continues_block) {
  if (kind < 0 || kind >= static_cast<int32_t>(kinds.size()))
    throw InternalError("task graph: task refers to unknown kind " + std::to_string(kind));
  if (launch < 0) throw InternalError("task graph: negative launch " + std::to_string(launch));
  if ((tasks.size() & 0xfff) == 0) check_stop();  // a long lowering stops when asked
  tasks.push_back(Task{kind, root, pinned_core, launch, continues_block});
  num_roots_ = std::max(num_roots_, root + 1);
  num_launches_ = std::max(num_launches_, launch + 1);
  return static_cast<int32_t>(tasks.size() - 1);
}

void TaskGraph::reserve(size_t num_tasks, size_t num_edges) {
  tasks.reserve(num_tasks);
  edges_.reserve(num_edges);
}

void TaskGraph::add_edge(int32_t from, int32_t to) {
  edges_.emplace_back(from, to);
}

void TaskGraph::add_access(int32_t task, Access a) {
  if (((access_.size() + pending_access_.size()) & 0xfff) == 0)
    check_stop();                                               // a long lowering stops when asked
  const auto first = static_cast<int32_t>(access_off_.size());  // tasks with offsets so far
  if (pending_access_.empty() && task >= first - 1 && task >= 0) {
    // In task order, as lowerings add them: straight into the final lists.
    access_off_.resize(static_cast<size_t>(task) + 1, static_cast<int64_t>(access_.size()));
    access_.push_back(a);
    return;
  }
  if (pending_access_.empty()) {  // out of order: the lists so far become (task, access) pairs
    pending_access_.reserve(access_.size() + 1);
    for (int32_t t = 0; t < first; ++t) {
      const auto end = t + 1 < first ? access_off_[static_cast<size_t>(t) + 1]
                                     : static_cast<int64_t>(access_.size());
      for (auto i = access_off_[static_cast<size_t>(t)]; i < end; ++i)
        pending_access_.emplace_back(t, access_[static_cast<size_t>(i)]);
    }
    access_off_.clear();
    access_.clear();
  }
  pending_access_.emplace_back(task, a);
}

void TaskGraph::finalize() {
  const auto n = static_cast<int32_t>(tasks.size());
  for (const auto& [a, b] : edges_)
    if (a < 0 || a >= n || b < 0 || b >= n || a == b)
      throw InternalError("task graph: bad dependency edge " + std::to_string(a) + " -> " +
                          std::to_string(b));
  if (!std::is_sorted(edges_.begin(), edges_.end())) std::sort(edges_.begin(), edges_.end());
  edges_.erase(std::unique(edges_.begin(), edges_.end()), edges_.end());
  succ_off_.assign(n + 1, 0);
  for (const auto& [a, b] : edges_) ++succ_off_[a + 1];
  for (int32_t i = 0; i < n; ++i) succ_off_[i + 1] += succ_off_[i];
  succ_.resize(edges_.size());
  for (size_t i = 0; i < edges_.size(); ++i) succ_[i] = edges_[i].second;  // already sorted by from
  edges_.clear();
  edges_.shrink_to_fit();
  finish();
}

void TaskGraph::finalize(std::vector<int64_t> succ_off, std::vector<int32_t> succ) {
  const auto n = static_cast<int32_t>(tasks.size());
  if (!edges_.empty()) throw InternalError("task graph: successor lists given after add_edge");
  if (succ_off.size() != tasks.size() + 1 || succ_off.front() != 0 ||
      succ_off.back() != static_cast<int64_t>(succ.size()))
    throw InternalError("task graph: successor offsets do not match the tasks and edges");
  for (int32_t a = 0; a < n; ++a) {
    if (succ_off[a + 1] < succ_off[a])
      throw InternalError("task graph: successor offsets decrease at task " + std::to_string(a));
    for (int64_t e = succ_off[a]; e < succ_off[a + 1]; ++e) {
      const int32_t b = succ[static_cast<size_t>(e)];
      if (b < 0 || b >= n || b == a || (e > succ_off[a] && b <= succ[static_cast<size_t>(e - 1)]))
        throw InternalError("task graph: bad dependency edge " + std::to_string(a) + " -> " +
                            std::to_string(b) + " (lists must be increasing, without self-edges)");
    }
  }
  succ_off_ = std::move(succ_off);
  succ_ = std::move(succ);
  finish();
}

void TaskGraph::finish() {
  const auto n = static_cast<int32_t>(tasks.size());
  indeg_.assign(n, 0);
  for (const int32_t b : succ_) ++indeg_[b];
  if (pending_access_.empty()) {  // added in task order: the offsets of the tasks after the last
    if (static_cast<int32_t>(access_off_.size()) > n)
      throw InternalError("task graph: access of unknown task " +
                          std::to_string(access_off_.size() - 1));
    if (!access_.empty())
      access_off_.resize(static_cast<size_t>(n) + 1, static_cast<int64_t>(access_.size()));
    finalized_ = true;
    return;
  }
  access_off_.assign(n + 1, 0);
  for (const auto& [t, a] : pending_access_) {
    if (t < 0 || t >= n)
      throw InternalError("task graph: access of unknown task " + std::to_string(t));
    ++access_off_[t + 1];
  }
  for (int32_t i = 0; i < n; ++i) access_off_[i + 1] += access_off_[i];
  access_.resize(pending_access_.size());
  std::vector<int64_t> fill(access_off_.begin(), access_off_.end() - 1);
  for (const auto& [t, a] : pending_access_) access_[static_cast<size_t>(fill[t]++)] = a;
  pending_access_.clear();
  pending_access_.shrink_to_fit();
  finalized_ = true;
}

}  // namespace tilesim
