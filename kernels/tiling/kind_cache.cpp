#include "kernels/tiling/kind_cache.hpp"

namespace tilesim {

void append_step_signature(const TileStep& st, std::vector<int64_t>& s) {
  for (const auto* ops : {&st.loads, &st.stores}) {
    s.push_back(static_cast<int64_t>(ops->size()));
    for (const auto& d : *ops)
      s.insert(s.end(), {d.bursts, d.burst_bytes, d.extra_granules, d.padded ? 1 : 0,
                         static_cast<int64_t>(d.path), d.src_bytes, d.atomic ? 1 : 0});
  }
  for (const auto* ops : {&st.load_fill, &st.vec}) {
    s.push_back(static_cast<int64_t>(ops->size()));
    for (const auto& v : *ops)
      s.insert(s.end(), {static_cast<int64_t>(v.cls) * 2 + (v.same_op ? 1 : 0),
                         static_cast<int64_t>(v.dtype), v.batch, v.rows, v.cols});
  }
  s.push_back(st.accumulates ? static_cast<int64_t>(st.fold.size()) : -1);
  for (const auto& v : st.fold)
    s.insert(s.end(),
             {static_cast<int64_t>(v.cls), static_cast<int64_t>(v.dtype), v.batch, v.rows, v.cols});
  s.push_back(static_cast<int64_t>(st.cube.size()));
  for (const auto& c : st.cube)
    s.insert(s.end(), {static_cast<int64_t>(c.dtype), c.m, c.k, c.n, c.l0a_bytes, c.l0b_bytes});
}

void append_kind_signature(const TaskKind& kind, std::vector<int64_t>& s) {
  s.insert(s.end(), {static_cast<int64_t>(kind.core), kind.psg, kind.buffer_count, kind.l0_depth,
                     static_cast<int64_t>(kind.carries_state), kind.overlap});
  for (const auto& b : kind.buffers) {
    s.push_back(b.bytes);
    s.push_back(static_cast<int64_t>(b.role) * 8 + static_cast<int64_t>(b.space));
  }
  for (const auto& st : kind.steps) {
    s.push_back(-1);
    s.push_back(st.repeat);
    append_step_signature(st, s);
  }
}

void append_step(TaskKind& kind, const TileStep& step) {
  // Scratch per thread: lowerings run in parallel over a sweep's candidates.
  thread_local std::vector<int64_t> last, next;
  if (!kind.steps.empty()) {
    last.clear();
    next.clear();
    append_step_signature(kind.steps.back(), last);
    append_step_signature(step, next);
    if (last == next) {
      kind.steps.back().repeat += step.repeat;
      return;
    }
  }
  kind.steps.push_back(step);
}

int KindCache::get(TaskGraph& graph, const TaskKind& kind) {
  sig_.clear();
  append_kind_signature(kind, sig_);
  if (last_id_ >= 0 && sig_ == last_sig_) return last_id_;
  auto it = ids_.find(sig_);
  const int id = it != ids_.end() ? it->second : graph.add_kind(kind);
  if (it == ids_.end()) ids_.emplace(sig_, id);
  last_sig_.assign(sig_.begin(), sig_.end());
  last_id_ = id;
  return id;
}

}  // namespace tilesim
