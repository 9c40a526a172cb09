// spmd launches as they form: a stage's blocks wait, as the open launch, until the next stage is
// lowered; when that stage's blocks read and write only what the same block wrote before them in
// the launch (or what nobody in it wrote), each block runs them after its earlier passes in the
// same launch: a Triton program making its mean, variance and normalise passes over its own rows
// is one launch, as on the board (no grid-wide sync where no block reads another's results). A
// pass that reads what other blocks wrote (a statistic split over blocks, a fold's atomic
// result, a workspace slot) starts a launch of its own.
#include <algorithm>
#include <map>

#include "kernels/lower/program/lowering_context.hpp"
#include "model/error.hpp"
#include "model/ub_budget.hpp"

namespace tilesim {

namespace {

bool overlap(const Block& a, const Block& b) {
  for (size_t d = 0; d < a.origin.size() && d < b.origin.size(); ++d)
    if (a.origin[d] >= b.origin[d] + b.extent[d] || b.origin[d] >= a.origin[d] + a.extent[d])
      return false;
  return true;
}

int64_t first_origin(const Block& b) {
  return b.origin.empty() ? 0 : b.origin[0];
}
int64_t first_extent(const Block& b) {
  return b.extent.empty() ? 1 : b.extent[0];
}

}  // namespace

bool LoweringContext::row_local() const {
  // The open launch's regions per tensor, by their first dim's origin, with their block.
  struct Entry {
    const Region* region;
    size_t block;
  };
  std::map<int, std::vector<Entry>> by_tensor;
  std::map<int, int64_t> widest;  // per tensor: the largest extent along the first dim
  for (size_t i = 0; i < open_.size(); ++i)
    for (const Region& g : open_[i].regions) {
      by_tensor[g.tensor].push_back({&g, i});
      widest[g.tensor] = std::max(widest[g.tensor], first_extent(g.r));
    }
  for (auto& [t, v] : by_tensor)
    std::stable_sort(v.begin(), v.end(), [](const Entry& a, const Entry& b) {
      return first_origin(a.region->r) < first_origin(b.region->r);
    });
  for (size_t j = 0; j < stage_.size(); ++j)
    for (const Region& q : stage_[j].regions) {
      const auto it = by_tensor.find(q.tensor);
      if (it == by_tensor.end()) continue;
      const std::vector<Entry>& v = it->second;
      const int64_t from = first_origin(q.r) - widest.at(q.tensor);
      auto e = std::upper_bound(v.begin(), v.end(), from, [](int64_t x, const Entry& a) {
        return x < first_origin(a.region->r);
      });
      for (; e != v.end() && first_origin(e->region->r) < first_origin(q.r) + first_extent(q.r);
           ++e)
        if (e->block != j && (q.write || e->region->write) && overlap(q.r, e->region->r))
          return false;
    }
  return true;
}

void LoweringContext::settle_stage() {
  const bool joins = stage_joins_ && !unlogged_;
  bool joined =
      open_joins_ && joins && !open_.empty() && open_.size() == stage_.size() && row_local();
  // Each block's passes in sequence: the later pass's steps after the earlier ones', its buffers
  // reusing theirs role by role. A merged plan that does not fit UB keeps the launches apart.
  std::vector<TaskKind> merged(joined ? open_.size() : 0);
  for (size_t j = 0; joined && j < open_.size(); ++j) {
    if (open_[j].idle || stage_[j].idle) continue;
    TaskKind& m = merged[j];
    m = out_.graph.kinds[static_cast<size_t>(open_[j].kind)];
    TaskKind part = out_.graph.kinds[static_cast<size_t>(stage_[j].kind)];
    m.label += "+" + part.label;
    merge_buffers(m, part.buffers);
    append_kind(m, std::move(part));
    try {
      plan_buffers(m, hw_);
    } catch (const Error&) {
      joined = false;
    }
  }
  if (joined) {
    for (size_t j = 0; j < open_.size(); ++j) {
      LaunchBlock& a = open_[j];
      LaunchBlock& b = stage_[j];
      if (b.idle) continue;
      if (a.idle) {
        a.s = b.s;
        a.kind = b.kind;
      } else {
        a.kind = kind_id(*a.s, merged[j]);
      }
      a.idle = false;
      a.acc.insert(a.acc.end(), b.acc.begin(), b.acc.end());
      a.regions.insert(a.regions.end(), b.regions.begin(), b.regions.end());
    }
  } else {
    close_launch();
    open_ = std::move(stage_);
    open_joins_ = joins;
  }
  stage_.clear();
  regions_.clear();
  unlogged_ = false;
}

void LoweringContext::close_launch() {
  if (open_.empty()) return;
  for (const LaunchBlock& b : open_) {
    const int32_t task = out_.graph.add_task(b.kind, 0, -1, launch_);
    for (const Access& a : b.acc) out_.graph.add_access(task, a);
  }
  open_.clear();
  open_joins_ = false;
  ++launch_;
}

}  // namespace tilesim
