#include "kernels/lower/program/lowering_context.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <utility>

#include "kernels/tiling/tile_rules.hpp"
#include "model/dma_cost.hpp"
#include "model/error.hpp"
#include "model/ub_budget.hpp"

namespace tilesim {

void overlapping(const Producer& pr, const Block& r, std::vector<int32_t>& out) {
  std::vector<std::pair<size_t, size_t>> range;  // per axis: [first, last) piece
  for (size_t a = 0; a < pr.pieces.size(); ++a) {
    const auto& ps = pr.pieces[a];
    const int64_t lo = r.origin[a], hi = r.origin[a] + r.extent[a];
    auto first = std::upper_bound(ps.begin(), ps.end(), lo,
                                  [](int64_t v, const Piece& p) { return v < p.offset + p.size; });
    auto last = std::lower_bound(ps.begin(), ps.end(), hi,
                                 [](const Piece& p, int64_t v) { return p.offset < v; });
    if (first >= last) return;
    range.emplace_back(first - ps.begin(), last - ps.begin());
  }
  // The pieces' tasks in row-major order, axis by axis.
  const auto walk = [&](const auto& self, size_t a, size_t flat) -> void {
    if (a == range.size()) {
      if (flat >= pr.tasks.size()) throw InternalError("overlapping: a producer without its tasks");
      out.insert(out.end(), pr.tasks[flat].begin(), pr.tasks[flat].end());
      return;
    }
    for (size_t i = range[a].first; i < range[a].second; ++i)
      self(self, a + 1, flat * pr.pieces[a].size() + i);
  };
  walk(walk, 0, 0);
}

void append_kind(TaskKind& block, TaskKind&& part) {
  if (block.steps.empty()) {
    block = std::move(part);
    return;
  }
  for (const TileStep& st : part.steps) append_step(block, st);
}

void append_tile(TaskKind& walk, TaskKind&& tile) {
  const TileStep last = std::move(tile.steps.back());
  tile.steps.pop_back();
  append_kind(walk, std::move(tile));
  append_step(walk, last);
}

void merge_buffers(TaskKind& kind, const std::vector<Buffer>& buffers) {
  // The later work reuses the kind's buffers role by role, in order (its n-th input buffer is the
  // kind's n-th), each grown to the larger size; what it needs beyond them is added.
  const size_t own = kind.buffers.size();
  std::vector<bool> taken(own, false);
  for (const Buffer& b : buffers) {
    size_t i = 0;
    while (i < own &&
           (taken[i] || kind.buffers[i].role != b.role || kind.buffers[i].space != b.space))
      ++i;
    if (i == own) {
      kind.buffers.push_back(b);
    } else {
      taken[i] = true;
      kind.buffers[i].bytes = std::max(kind.buffers[i].bytes, b.bytes);
    }
  }
}

DmaOp LoweringContext::gm_dma(DmaDir dir, const Dims& shape, const Block& r, DType dt, uint64_t key,
                              std::vector<Access>& acc) const {
  DmaOp d = block_dma(dir, shape, r.origin, r.extent, dt, hw_.dma.gm_granule_bytes);
  unlogged_ = unlogged_ || !in_dma_;
  if (spmd_) d = data_copy_pad(d);
  acc.push_back({key, d.bytes(), dir == DmaDir::kWrite});
  return d;
}

namespace {

// Block r of tensor t as the part of the tensor whose bytes it names, through aliases of
// aliases: through views only for a copy (it strides as the viewed tensor's rows do; a reshape's
// copy reads its own bytes in its own shape), through reshapes too for the tasks that wrote it.
std::pair<int, Block> named_part(const Program& p, int t, Block r, bool views_only) {
  for (;;) {
    const ProgTensor& x = p.tensors[static_cast<size_t>(t)];
    if (x.alias_of < 0 || (views_only && !x.is_view())) return {t, r};
    r = alias_region(p, t, r);
    t = x.alias_of;
  }
}

}  // namespace

DmaOp LoweringContext::dma(DmaDir dir, int view, const Block& vr, std::vector<Access>& acc) const {
  const auto [t, r] = named_part(p_, view, vr, true);
  if (spmd_) regions_.push_back({t, r, dir == DmaDir::kWrite});
  in_dma_ = true;
  const DmaOp d = gm_dma(dir, tensor(t).shape, r, tensor(t).dtype,
                         block_key(static_cast<uint32_t>(t), r.origin), acc);
  in_dma_ = false;
  acc.back().bypass_l2 = dir == DmaDir::kRead && tensor(t).l2_bypass;
  return d;
}

int64_t LoweringContext::copy_bytes(int view, const Block& vr) const {
  const auto [t, r] = named_part(p_, view, vr, true);
  return ub_copy_bytes(block_dma(DmaDir::kRead, tensor(t).shape, r.origin, r.extent,
                                 tensor(t).dtype, hw_.dma.gm_granule_bytes),
                       hw_);
}

int64_t LoweringContext::ub_bytes(int t, const Block& r) const {
  return ub_tile_bytes(r.extent, tensor(t).dtype, hw_);
}

const ProgOp& LoweringContext::reader(const ProgStage& s, int t) const {
  const auto it = s.reader_op.find(t);
  if (it == s.reader_op.end())
    throw InternalError("program: a stage loads a tensor none of its ops reads");
  return op(it->second);
}

const ProgOp& LoweringContext::writer(const ProgStage& s, int t) const {
  const auto it = s.writer_op.find(t);
  if (it == s.writer_op.end())
    throw InternalError("program: a stage stores a tensor none of its ops writes");
  return op(it->second);
}

DmaOp LoweringContext::partial_dma(DmaDir dir, const ProgStage& s, const Block& out, int64_t slot,
                                   std::vector<Access>& acc, int64_t slots) const {
  // The statistics' partials of one output block side by side: the last dim holds each
  // statistic's values in turn (one statistic: the output's own layout), then the next slot's.
  const int red = op(s.last).out;
  const ProgTensor& t = tensor(red);
  const int64_t k = (s.last - s.reduce_first + 1) * slots;
  Dims shape = t.shape;
  Block r = out;
  shape.back() *= k;
  r.origin.back() *= k;
  r.extent.back() *= k;
  Dims key = out.origin;
  key.push_back(slot);  // a workspace block per slot, apart from the output's own blocks
  return gm_dma(dir, shape, r, t.dtype,
                block_key(static_cast<uint32_t>(p_.tensors.size() + static_cast<size_t>(red)), key),
                acc);
}

uint64_t LoweringContext::ring_key(uint32_t t, Dims place, int64_t slot) const {
  place.push_back(slot);
  return block_key(static_cast<uint32_t>(2 * p_.tensors.size()) + t, place);
}

int LoweringContext::kind_id(const ProgStage& s, const TaskKind& k) {
  const size_t before = out_.graph.kinds.size();
  const int id = kinds_.get(out_.graph, k);
  if (out_.graph.kinds.size() > before) {
    try {
      plan_buffers(k, hw_);
    } catch (const Error& e) {
      if (p_.built_in) throw;
      throw Error(fmt::format("{}: stage '{}' tile {}: {}", where(op(s.first)), s.psg,
                              format_dims(s.tile), e.what()),
                  e.kind());
    }
  }
  return id;
}

Producer LoweringContext::producer_of(const ProgStage& s, const StageGrid& g, int t) const {
  const ProgOp& w = writer(s, t);
  Producer pr;
  const size_t r = g.pieces.size();
  for (size_t a = 0; a < r; ++a) {
    if (w.info->kind == OpKind::kMatmul && a == r - 2) continue;  // k
    const bool reduced =
        w.info->kind == OpKind::kReduce &&
        std::find(w.dims.begin(), w.dims.end(), static_cast<int>(a)) != w.dims.end();
    if (reduced && !w.keepdim) continue;
    // A column op's output: 1 where the stage's iteration space is wider.
    const Dims& ts = tensor(t).shape;
    const bool column =
        w.info->kind != OpKind::kReduce && ts.size() == r && ts[a] == 1 && s.shape[a] != 1;
    pr.pieces.push_back(reduced || column ? std::vector<Piece>{{0, 1}} : g.pieces[a]);
  }
  return pr;
}

std::vector<int32_t> LoweringContext::load_deps(const ProgStage& s, const Block& b,
                                                const Produced& produced) const {
  std::vector<int32_t> deps;
  // spmd: a launch starts when the one before ends; producers keep no tasks to wait on.
  if (spmd_) return deps;
  for (int t : s.loads) {
    // An alias waits for the tasks writing the part of the tensor it names.
    const auto [made, r] = named_part(p_, t, operand_region(p_, reader(s, t), t, b), false);
    const auto it = produced.find(made);
    if (it != produced.end()) overlapping(it->second, r, deps);
  }
  return deps;
}

int32_t LoweringContext::add_task(const ProgStage& s, TaskKind& k, int psg, int32_t root,
                                  const std::vector<Access>& acc,
                                  const std::vector<int32_t>& deps) {
  k.psg = psg;
  TaskGraph& g = out_.graph;
  const int32_t task = g.add_task(kind_id(s, k), root);
  for (const Access& a : acc) g.add_access(task, a);
  std::vector<int32_t>& d = deps_scratch_;
  d.assign(deps.begin(), deps.end());
  std::sort(d.begin(), d.end());
  d.erase(std::unique(d.begin(), d.end()), d.end());
  for (int32_t x : d) g.add_edge(x, task);
  return task;
}

void LoweringContext::add_block(const ProgStage& s, TaskKind k, int psg, int64_t blk,
                                const std::vector<Access>& acc) {
  // Ascend C tasks are pinned to their core; spmd blocks are placed by the hardware.
  const bool pinned = ascendc();
  k.label = fmt::format("{}_{}{}", s.psg, pinned ? "core" : "block", blk);
  k.psg = psg;
  if (spmd_) {  // a task once the launch closes (launch_join.cpp)
    stage_.push_back({&s, kind_id(s, k), acc, std::move(regions_), false});
    regions_.clear();
    return;
  }
  const int32_t task =
      out_.graph.add_task(kind_id(s, k), 0, pinned ? static_cast<int32_t>(blk) : -1, launch_);
  for (const Access& a : acc) out_.graph.add_access(task, a);
}

void LoweringContext::end_launch(const ProgStage& s, int psg, int64_t used,
                                 const std::string& units, const std::string& name, CoreType core) {
  const bool blocks = !stage_.empty();  // else the stage made its tasks itself
  if (!blocks) close_launch();
  if (spmd_) {
    check_grid(spec_, used, units, "");
    for (int64_t blk = used; blk < spec_.grid; ++blk) {
      TaskKind idle;
      idle.label = fmt::format("{}_block{}", name, blk);
      idle.psg = psg;
      idle.core = core;
      if (blocks)
        stage_.push_back({&s, kind_id(s, idle), {}, {}, true});
      else
        out_.graph.add_task(kind_id(s, idle), 0, -1, launch_);
    }
  }
  if (blocks) {
    settle_stage();
    return;
  }
  ++launch_;
  regions_.clear();
  unlogged_ = false;
}

}  // namespace tilesim
