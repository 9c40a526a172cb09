#include "sim/l2_residency.hpp"

#include <algorithm>
#include <utility>
#include <vector>

namespace tilesim {

const char* l2_start_name(L2Start s) {
  switch (s) {
    case L2Start::kCold:
      return "cold";
    case L2Start::kWarm:
      return "warm";
    case L2Start::kDirty:
      return "flushed";
  }
  return "?";
}

L2Residency::L2Residency(const TaskGraph& graph, double capacity_bytes, L2Start start)
    : graph_(graph), capacity_(capacity_bytes) {
  if (start == L2Start::kDirty) dirty_left_ = capacity_bytes;
  if (!graph.has_accesses()) return;
  std::unordered_map<uint64_t, int64_t> footprint;
  std::vector<std::pair<uint64_t, int64_t>> inputs;  // first touched by a read, in task order
  for (int32_t t = 0; t < static_cast<int32_t>(graph.tasks.size()); ++t)
    for (const Access* a = graph.access_begin(t); a != graph.access_end(t); ++a) {
      const auto [it, fresh] = footprint.emplace(a->block, a->bytes);
      it->second = std::max(it->second, a->bytes);
      if (fresh && !a->write) inputs.emplace_back(a->block, a->bytes);
    }
  double total = 0;
  for (const auto& [key, bytes] : footprint) total += static_cast<double>(bytes);
  absorb_writes_ = total <= capacity_;
  last_touch_.reserve(footprint.size());
  if (start != L2Start::kWarm) return;
  double input_bytes = 0;
  for (const auto& [block, bytes] : inputs) input_bytes += static_cast<double>(bytes);
  if (input_bytes > capacity_) return;
  for (const auto& [block, bytes] : inputs) {
    stamp_ += static_cast<double>(bytes);
    last_touch_[block] = stamp_;
  }
}

std::optional<Traffic> L2Residency::on_start(int32_t task) {
  if (graph_.access_begin(task) == graph_.access_end(task)) return std::nullopt;
  double moved = 0, read = 0, read_miss = 0, write_hbm = 0;
  for (const Access* a = graph_.access_begin(task); a != graph_.access_end(task); ++a) {
    const auto b = static_cast<double>(a->bytes);
    moved += b;
    const auto it = last_touch_.find(a->block);
    const bool resident = it != last_touch_.end() && stamp_ - it->second < capacity_;
    if (!resident) {
      const double evicted = std::min(b, dirty_left_);
      dirty_left_ -= evicted;
      write_hbm += evicted;
    }
    if (a->write) {
      if (!absorb_writes_) write_hbm += b;
    } else {
      read += b;
      if (!resident) read_miss += b;
    }
    stamp_ += b;
    last_touch_[a->block] = stamp_;
  }
  if (moved <= 0) return Traffic{};
  return Traffic{read_miss / moved, write_hbm / moved, read > 0 ? 1 - read_miss / read : 0};
}

}  // namespace tilesim
