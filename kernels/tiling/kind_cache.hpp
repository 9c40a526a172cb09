#pragma once
// Task kinds de-duplicated by the exact work they contain (identical tiles share one kind), and a
// looping task's steps merged where they repeat.
//
// A kind's work is everything the cost model prices: its core, PSG, buffer depth, L0 depth,
// state, overlap, the compiler's multibuffering, buffer sizes and roles, and each step's repeat,
// copies, vector work (bank conflicts included) and cube work. Its label and buffer names are not
// work.

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "model/task_graph.hpp"

namespace tilesim {

class KindCache {
 public:
  // The id of a kind with `kind`'s work, adding it (a copy, or moved in) when there is none.
  int get(TaskGraph& graph, const TaskKind& kind);
  int get(TaskGraph& graph, TaskKind&& kind);

 private:
  template <class Kind>
  int find_or_add(TaskGraph& graph, Kind&& kind);
  // Ids of the graph's kinds by the hash of their work (a bucket holds the rare collisions).
  std::unordered_map<uint64_t, std::vector<int>> ids_;
  // The last kind asked for: consecutive tasks often share one (a chain's middle segments).
  int last_id_ = -1;
};
// True when two kinds (steps) hold the same work.
bool same_kind_work(const TaskKind& a, const TaskKind& b);
bool same_step_work(const TileStep& a, const TileStep& b);  // a step's repeat aside
// Appends `step` to a looping task: onto the last step's repeat when their work is identical.
void append_step(TaskKind& kind, const TileStep& step);

}  // namespace tilesim
