#include "kernels/tiling/kind_cache.hpp"

#include <algorithm>
#include <utility>

namespace tilesim {

namespace {

bool same_copy(const DmaOp& a, const DmaOp& b) {
  return a.bursts == b.bursts && a.burst_bytes == b.burst_bytes &&
         a.extra_granules == b.extra_granules && a.padded == b.padded && a.path == b.path &&
         a.src_bytes == b.src_bytes && a.atomic == b.atomic;
}

bool same_vec(const VecOp& a, const VecOp& b) {
  return a.cls == b.cls && a.same_op == b.same_op && a.bank_conflict == b.bank_conflict &&
         a.dst_block_stride == b.dst_block_stride && a.block_reduce == b.block_reduce &&
         a.dtype == b.dtype && a.batch == b.batch && a.rows == b.rows && a.cols == b.cols;
}

bool same_cube(const CubeOp& a, const CubeOp& b) {
  return a.dtype == b.dtype && a.m == b.m && a.k == b.k && a.n == b.n &&
         a.l0a_bytes == b.l0a_bytes && a.l0b_bytes == b.l0b_bytes && a.bt_bytes == b.bt_bytes;
}

template <class T, class Eq>
bool same_list(const std::vector<T>& a, const std::vector<T>& b, Eq eq) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), eq);
}

// FNV-1a over 64-bit values: cheap, and collisions only cost a comparison.
struct Hash {
  uint64_t h = 1469598103934665603ull;
  void add(int64_t v) { h = (h ^ static_cast<uint64_t>(v)) * 1099511628211ull; }
};

void hash_step(const TileStep& st, Hash& h) {
  h.add(st.repeat);
  for (const auto* ops : {&st.loads, &st.stores}) {
    h.add(static_cast<int64_t>(ops->size()));
    for (const DmaOp& d : *ops) {
      h.add(d.bursts);
      h.add(d.burst_bytes);
      h.add(d.extra_granules);
      h.add(static_cast<int64_t>(d.path) * 4 + (d.padded ? 2 : 0) + (d.atomic ? 1 : 0));
      h.add(d.src_bytes);
    }
  }
  for (const auto* ops : {&st.load_fill, &st.vec, &st.fold}) {
    h.add(static_cast<int64_t>(ops->size()));
    for (const VecOp& v : *ops) {
      h.add(static_cast<int64_t>(v.cls) * 256 + static_cast<int64_t>(v.dtype) * 8 +
            (v.block_reduce ? 4 : 0) + (v.bank_conflict ? 2 : 0) + (v.same_op ? 1 : 0));
      h.add(v.batch);
      h.add(v.rows);
      h.add(v.cols);
      h.add(v.dst_block_stride);
    }
  }
  h.add(st.accumulates ? 1 : 0);
  h.add(static_cast<int64_t>(st.cube.size()));
  for (const CubeOp& c : st.cube) {
    h.add(c.m * 131 + c.k * 7 + c.n + static_cast<int64_t>(c.dtype));
    h.add(c.l0a_bytes);
    h.add(c.l0b_bytes);
    if (c.bt_bytes != 0) h.add(c.bt_bytes);  // a bias (kinds without one keep their keys)
  }
}

uint64_t kind_hash(const TaskKind& k) {
  Hash h;
  h.add(static_cast<int64_t>(k.core));
  h.add(k.psg);
  h.add(k.buffer_count);
  h.add(k.l0_depth);
  h.add((k.carries_state ? 1 : 0) + (k.compiler_multibuffer ? 2 : 0));
  h.add(k.overlap);
  for (const Buffer& b : k.buffers) {
    h.add(b.bytes);
    h.add(static_cast<int64_t>(b.role) * 8 + static_cast<int64_t>(b.space));
  }
  for (const TileStep& st : k.steps) hash_step(st, h);
  return h.h;
}

}  // namespace

bool same_step_work(const TileStep& a, const TileStep& b) {
  return a.accumulates == b.accumulates && same_list(a.loads, b.loads, same_copy) &&
         same_list(a.stores, b.stores, same_copy) && same_list(a.vec, b.vec, same_vec) &&
         same_list(a.load_fill, b.load_fill, same_vec) && same_list(a.fold, b.fold, same_vec) &&
         same_list(a.cube, b.cube, same_cube);
}

bool same_kind_work(const TaskKind& a, const TaskKind& b) {
  return a.core == b.core && a.psg == b.psg && a.buffer_count == b.buffer_count &&
         a.l0_depth == b.l0_depth && a.carries_state == b.carries_state &&
         a.compiler_multibuffer == b.compiler_multibuffer && a.overlap == b.overlap &&
         same_list(a.buffers, b.buffers,
                   [](const Buffer& x, const Buffer& y) {
                     return x.bytes == y.bytes && x.role == y.role && x.space == y.space;
                   }) &&
         same_list(a.steps, b.steps, [](const TileStep& x, const TileStep& y) {
           return x.repeat == y.repeat && same_step_work(x, y);
         });
}

void append_step(TaskKind& kind, const TileStep& step) {
  if (!kind.steps.empty() && same_step_work(kind.steps.back(), step)) {
    kind.steps.back().repeat += step.repeat;
    return;
  }
  kind.steps.push_back(step);
}

template <class Kind>
int KindCache::find_or_add(TaskGraph& graph, Kind&& kind) {
  const auto at = [&](int id) -> const TaskKind& { return graph.kinds[static_cast<size_t>(id)]; };
  if (last_id_ >= 0 && same_kind_work(kind, at(last_id_))) return last_id_;
  std::vector<int>& bucket = ids_[kind_hash(kind)];
  for (const int id : bucket)
    if (same_kind_work(kind, at(id))) return last_id_ = id;
  last_id_ = graph.add_kind(std::forward<Kind>(kind));
  bucket.push_back(last_id_);
  return last_id_;
}

int KindCache::get(TaskGraph& graph, const TaskKind& kind) {
  return find_or_add(graph, kind);
}

int KindCache::get(TaskGraph& graph, TaskKind&& kind) {
  return find_or_add(graph, std::move(kind));
}

}  // namespace tilesim
