#pragma once
// Task kinds de-duplicated by the exact work they contain (identical tiles share one kind), and a
// looping task's steps merged where they repeat.

#include <cstdint>
#include <map>
#include <vector>

#include "model/task_graph.hpp"

namespace tilesim {

class KindCache {
 public:
  int get(TaskGraph& graph, const TaskKind& kind);

 private:
  std::map<std::vector<int64_t>, int> ids_;
  std::vector<int64_t> sig_;  // reused: a lowering asks once per task
  // The last kind asked for: consecutive tasks often share one (a chain's middle segments).
  std::vector<int64_t> last_sig_;
  int last_id_ = -1;
};
// A kind's or a step's work as numbers (a step's without its repeat), appended to `out`.
void append_kind_signature(const TaskKind& kind, std::vector<int64_t>& out);
void append_step_signature(const TileStep& step, std::vector<int64_t>& out);
// Appends `step` to a looping task: onto the last step's repeat when their work is identical.
void append_step(TaskKind& kind, const TileStep& step);

}  // namespace tilesim
