#include "sim/l2_residency.hpp"

#include <algorithm>
#include <limits>
#include <utility>
#include <vector>

#include "model/stop.hpp"

namespace tilesim {

const char* l2_start_name(L2Start s) {
  return enum_name(kL2StartNames, s);
}

L2Residency::L2Residency(const TaskGraph& graph, double capacity_bytes, L2Start start)
    : graph_(graph), capacity_(capacity_bytes) {
  if (start == L2Start::kDirty) dirty_left_ = capacity_bytes;
  if (!graph.has_accesses()) return;
  std::unordered_map<uint64_t, int64_t> footprint;
  std::unordered_map<uint64_t, int32_t> reader;      // a block's first reading task
  std::vector<std::pair<uint64_t, int64_t>> inputs;  // first touched by a read, in task order
  size_t touches = 0;
  for (int32_t t = 0; t < static_cast<int32_t>(graph.tasks.size()); ++t) {
    check_stop();
    for (const Access* a = graph.access_begin(t); a != graph.access_end(t); ++a) {
      if (!a->write) {
        const auto [r, first] = reader.emplace(a->block, t);
        shared_blocks_ = shared_blocks_ || (!first && r->second != t);
      }
      if (a->bypass_l2) continue;  // takes no room in L2
      ++touches;
      const auto [it, fresh] = footprint.emplace(a->block, a->bytes);
      it->second = std::max(it->second, a->bytes);
      if (fresh && !a->write) inputs.emplace_back(a->block, a->bytes);
    }
  }
  double total = 0;
  for (const auto& [key, bytes] : footprint) total += static_cast<double>(bytes);
  absorb_writes_ = total <= capacity_;
  last_touch_.reserve(footprint.size());
  double input_bytes = 0;
  for (const auto& [block, bytes] : inputs) input_bytes += static_cast<double>(bytes);
  const bool warm = start == L2Start::kWarm && input_bytes <= capacity_;
  tree_.assign(touches + (warm ? inputs.size() : 0) + 1, 0.0);
  if (!warm) return;
  for (const auto& [block, bytes] : inputs) touch(block, static_cast<double>(bytes));
}

void L2Residency::add(int64_t pos, double bytes) {
  for (auto i = static_cast<size_t>(pos) + 1; i < tree_.size(); i += i & (~i + 1))
    tree_[i] += bytes;
  live_ += bytes;
}

double L2Residency::bytes_after(int64_t pos) const {
  double upto = 0;  // bytes at touches 0..pos
  for (auto i = static_cast<size_t>(pos) + 1; i > 0; i -= i & (~i + 1)) upto += tree_[i];
  return live_ - upto;
}

void L2Residency::touch(uint64_t block, double bytes) {
  const auto [it, fresh] = last_touch_.try_emplace(block, Last{next_, bytes});
  if (!fresh) {
    add(it->second.pos, -it->second.bytes);
    it->second = Last{next_, bytes};
  }
  add(next_++, bytes);
}

void L2Residency::use_prior_starts(std::vector<double> starts) {
  prior_ = std::move(starts);
  prior_readers_.clear();
  for (int32_t t = 0; t < static_cast<int32_t>(graph_.tasks.size()); ++t)
    for (const Access* a = graph_.access_begin(t); a != graph_.access_end(t); ++a)
      if (!a->write) prior_readers_[a->block].emplace_back(prior_[static_cast<size_t>(t)], t);
  for (auto& [block, v] : prior_readers_) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
}

int64_t L2Residency::prior_co_readers(uint64_t block, int32_t task, double window) const {
  const auto& v = prior_readers_.at(block);
  const double at = prior_[static_cast<size_t>(task)];
  // Strictly inside (at - window, at + window), itself excluded.
  const auto lo = std::upper_bound(v.begin(), v.end(),
                                   std::pair{at - window, std::numeric_limits<int32_t>::max()});
  const auto hi = std::lower_bound(v.begin(), v.end(),
                                   std::pair{at + window, std::numeric_limits<int32_t>::min()});
  return std::max<int64_t>(0, hi - lo - 1);
}

std::optional<Traffic> L2Residency::on_start(int32_t task, double now, double run, double hit_run) {
  if (hit_run < 0) hit_run = run;
  if (graph_.access_begin(task) == graph_.access_end(task)) return std::nullopt;
  check_stop();  // a task's accesses are the simulation's work: a cancelled sweep stops here
  double moved = 0, read = 0, read_miss = 0, write_hbm = 0, shared = 0, queued = 0, in_flight = 0;
  double task_read = 0;
  for (const Access* a = graph_.access_begin(task); a != graph_.access_end(task); ++a)
    if (!a->write) task_read += static_cast<double>(a->bytes);
  for (const Access* a = graph_.access_begin(task); a != graph_.access_end(task); ++a) {
    double window = 0;
    const auto it = last_touch_.find(a->block);
    const bool resident = it != last_touch_.end() && bytes_after(it->second.pos) < capacity_;
    if (!a->write && run > 0) {
      auto& q = readers_[a->block];
      window = (resident ? hit_run : run) * static_cast<double>(a->bytes) / task_read;
      while (!q.empty() && q.front().at <= now - window) q.pop_front();
      // Other tasks only: a task reading one block twice does not wait for itself.
      const auto others =
          prior_.empty()
              ? std::count_if(q.begin(), q.end(), [&](const Read& r) { return r.task != task; })
              : prior_co_readers(a->block, task, window);
      if (others > 0) {
        shared += static_cast<double>(a->bytes);
        queued += static_cast<double>(a->bytes) * static_cast<double>(others + 1);
      }
      q.push_back({now, task});
    }
    const auto b = static_cast<double>(a->bytes);
    moved += b;
    if (a->bypass_l2) {  // read past L2: no allocation, so nothing evicted and nothing kept
      read += b;
      if (!resident) read_miss += b;
      continue;
    }
    if (!resident) {
      const double evicted = std::min(b, dirty_left_);
      dirty_left_ -= evicted;
      write_hbm += evicted;
    }
    if (a->write) {
      if (!absorb_writes_) write_hbm += b;
    } else {
      read += b;
      if (!resident) {
        read_miss += b;
        if (run > 0) fetched_[a->block] = {now, task};
      } else if (run > 0) {
        const auto f = fetched_.find(a->block);
        if (f != fetched_.end() && f->second.task != task && now - f->second.at < window)
          in_flight += b;
      }
    }
    touch(a->block, b);
  }
  if (moved <= 0) return Traffic{};
  return Traffic{read_miss / moved, write_hbm / moved,
                 read > 0 ? 1 - (read_miss + in_flight) / read : 0, read > 0 ? shared / read : 0,
                 read > 0 ? queued / read : 0};
}

}  // namespace tilesim
