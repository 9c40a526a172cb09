#include "kernels/lower/reduction_graph.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "model/dma_cost.hpp"
#include "model/error.hpp"

namespace tilesim {

struct ReductionBuilder::Ctx {
  const ReductionPlan& plan;
  const ReduceFamily& fam;
  int32_t root_offset;
  const SegmentDeps& deps;
  DType in;  // dtype of the tensors the tiles read
  Dims out_shape;
  std::vector<Access> acc = {};  // GM blocks of the task being built
  size_t chain = 0;
  int psg_partial = 0, psg_merge = 0, psg_second = 0, psg_fused = 0;
};

namespace {
std::vector<int32_t> merged(std::vector<int32_t> a, const std::vector<int32_t>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}
}  // namespace

TaskKind ReductionBuilder::base_kind(Ctx& c, const std::string& role, const Dims& extent) const {
  TaskKind k;
  k.label = c.fam.psg + ":" + role + format_dims(extent);
  k.buffer_count = buffer_count_;
  const int64_t tile_bytes = ub_tile_bytes(c.plan.tile, c.in, hw_);
  const int64_t out_elems = product(c.plan.tile) / [&] {
    int64_t r = 1;
    for (int d : c.plan.dims) r *= c.plan.tile[static_cast<size_t>(d)];
    return r;
  }();
  const int live = c.fam.live_inputs > 0 ? c.fam.live_inputs : c.fam.inputs;
  for (int i = 0; i < live; ++i)
    k.buffers.push_back({"in" + std::to_string(i), tile_bytes, BufferRole::kInput, MemSpace::kUb});
  // Vector ops work in place on the tile; the running statistics need their own buffer.
  k.buffers.push_back({"stats", out_elems * c.fam.stats * 4 * 2, BufferRole::kTemp, MemSpace::kUb});
  const bool full_output = c.fam.second_pass;
  k.buffers.push_back({"out", full_output ? tile_bytes : out_elems * dtype_bytes(c.fam.out_dtype),
                       BufferRole::kOutput, MemSpace::kUb});
  return k;
}

DmaOp ReductionBuilder::input_dma(Ctx& c, const Block& b, DmaDir dir) const {
  DmaOp op = block_dma(dir, c.plan.shape, b.origin, b.extent, c.in, hw_.dma.gm_granule_bytes);
  if (c.plan.grid > 0) op = data_copy_pad(op);  // spmd: an unaligned sub-tile row is padded
  // Reads of phase 0 are the kernel inputs, later phases read the previous phase's output;
  // writes of the input's shape are the kernel's output.
  if (dir == DmaDir::kWrite)
    c.acc.push_back({block_key(kOutputTensor, b.origin), op.bytes(), true});
  else
    for (int i = 0; i < c.fam.inputs; ++i)
      c.acc.push_back({block_key(phase_ == 0 ? static_cast<uint32_t>(i)
                                             : kWorkspaceTensor + static_cast<uint32_t>(phase_ - 1),
                                 b.origin),
                       op.bytes(), false});
  return op;
}

DmaOp ReductionBuilder::stats_dma(Ctx& c, int64_t out_elems, DmaDir dir) const {
  // Partial statistics live in a contiguous fp32 workspace.
  const DmaOp op{dir, 1, out_elems * c.fam.stats * 4, 0};
  c.acc.push_back(
      {block_key(kStatsTensor + static_cast<uint32_t>(phase_), {static_cast<int64_t>(c.chain)}),
       op.bytes(), dir == DmaDir::kWrite});
  return op;
}

DmaOp ReductionBuilder::output_dma(Ctx& c, const Block& out) const {
  const DmaOp op = block_dma(DmaDir::kWrite, c.out_shape, out.origin, out.extent, c.fam.out_dtype,
                             hw_.dma.gm_granule_bytes);
  c.acc.push_back(
      {block_key(kWorkspaceTensor + static_cast<uint32_t>(phase_), out.origin), op.bytes(), true});
  return op;
}

int32_t ReductionBuilder::add_task(Ctx& c, TaskKind kind, int32_t root,
                                   const std::vector<int32_t>& deps) {
  const int32_t t = g_.add_task(kinds_.get(g_, kind), root + c.root_offset);
  for (int32_t d : deps) g_.add_edge(d, t);
  for (const Access& a : c.acc) g_.add_access(t, a);
  c.acc.clear();
  return t;
}

std::vector<int32_t> ReductionBuilder::seg_deps(const Ctx& c, const Block& seg) const {
  return c.deps ? c.deps(seg) : std::vector<int32_t>{};
}

// Vector ops run on the static tile shape where the tile exceeds the tensor (wasted work).
TileReduceGeometry ReductionBuilder::geom(const Ctx& c, const Block& b) const {
  return reduce_geometry(compute_extent(c.plan.shape, c.plan.tile, b.extent), c.plan.dims);
}

// A segment's loads: the block of every input (each recorded), then the family's extra loads.
TileStep ReductionBuilder::load_step(Ctx& c, const Block& seg) const {
  TileStep st;
  const DmaOp read = input_dma(c, seg, DmaDir::kRead);  // records every input's block
  for (int i = 0; i < c.fam.inputs; ++i) st.loads.push_back(read);
  if (c.fam.extra_loads) c.fam.extra_loads(reduce_geometry(seg.extent, c.plan.dims), st.loads);
  return st;
}

// The output pass of a segment: re-read it, apply the final statistics, write the tile.
TileStep ReductionBuilder::apply_step(Ctx& c, const Block& seg, int64_t out_elems,
                                      bool load_stats) const {
  TileStep st = load_step(c, seg);
  if (load_stats) st.loads.push_back(stats_dma(c, out_elems, DmaDir::kRead));
  c.fam.second_work(geom(c, seg), c.in, st.vec);
  st.stores.push_back(input_dma(c, seg, DmaDir::kWrite));
  return st;
}

// A one-segment row done in one task: partial, finalize and apply on the tile in UB.
TaskKind ReductionBuilder::fused_kind(Ctx& c, const Block& seg, int64_t out_elems) const {
  TaskKind k = base_kind(c, "fused", seg.extent);
  k.psg = c.psg_fused;
  TileStep st = load_step(c, seg);
  c.fam.partial_work(geom(c, seg), c.in, st.vec);
  c.fam.finalize_work(out_elems, st.vec);
  (c.fam.fused_second_work ? c.fam.fused_second_work : c.fam.second_work)(geom(c, seg), c.in,
                                                                          st.vec);
  st.stores.push_back(input_dma(c, seg, DmaDir::kWrite));
  k.steps.push_back(st);
  return k;
}

// Finishing a result: finalize, then write the reduced output (unless a second pass uses it).
void ReductionBuilder::finish_result(Ctx& c, const ReduceChain& chain, int64_t out_elems,
                                     TileStep& st) const {
  c.fam.finalize_work(out_elems, st.vec);
  if (!c.fam.second_pass) st.stores.push_back(output_dma(c, chain.out));
}

// Leaving a result's statistics in the workspace for a later task.
void ReductionBuilder::keep_stats(Ctx& c, int64_t out_elems, TileStep& st) const {
  st.stores.push_back(stats_dma(c, out_elems, DmaDir::kWrite));
}

ReductionTasks ReductionBuilder::add(const ReductionPlan& plan, const ReduceFamily& fam,
                                     int32_t root_offset, const SegmentDeps& deps) {
  Ctx c{plan, fam, root_offset, deps, fam.fp32_inputs ? DType::kFp32 : dtype_, plan.shape};
  for (int d : plan.dims) c.out_shape[static_cast<size_t>(d)] = 1;
  c.psg_partial = g_.add_psg(fam.psg + ":partial");
  c.psg_merge = g_.add_psg(fam.psg + ":merge");
  c.psg_second = g_.add_psg(fam.psg + ":apply");
  c.psg_fused = g_.add_psg(fam.psg + ":fused");
  if (plan.grid > 0 && (plan.merge != MergeMode::kInTask || deps ||
                        static_cast<int64_t>(plan.blocks.size()) != plan.grid))
    throw InternalError(fam.psg + ": spmd blocks accumulate in UB and start at launch");
  ReductionTasks out;
  if (plan.grid > 0)
    out = add_spmd_blocks(c);
  else
    for (size_t ci = 0; ci < plan.chains.size(); ++ci) add_chain(c, ci, out);
  ++phase_;
  return out;
}

// spmd: a block is one task walking its parts in order (one in-UB accumulation each); a part
// holding a whole row finishes it, a part of a split row adds its partial into GM atomically.
ReductionTasks ReductionBuilder::add_spmd_blocks(Ctx& c) {
  const ReductionPlan& plan = c.plan;
  ReductionTasks out;
  out.finals.resize(plan.chains.size());
  for (int64_t b = 0; b < plan.grid; ++b) {
    TaskKind block;
    const auto& parts = plan.blocks[static_cast<size_t>(b)];
    for (const ReductionPlan::Part& part : parts) {
      TaskKind k = spmd_part_kind(c, part);
      if (block.steps.empty())
        block = std::move(k);
      else
        for (const TileStep& st : k.steps) append_step(block, st);
    }
    if (parts.empty()) block.psg = c.psg_partial;  // a block past the work: it only starts
    block.label = fmt::format("{}_block{}", c.fam.psg, b);
    const int32_t t =
        g_.add_task(kinds_.get(g_, block),
                    plan.chains[parts.empty() ? 0 : static_cast<size_t>(parts.front().chain)].root +
                        c.root_offset);  // placed, not pinned
    for (const Access& a : c.acc) g_.add_access(t, a);
    c.acc.clear();
    for (const ReductionPlan::Part& part : parts) {
      auto& f = out.finals[static_cast<size_t>(part.chain)];
      if (f.empty() || f.back() != t) f.push_back(t);
    }
    out.all.push_back(t);
  }
  return out;
}

// The steps of one part of an spmd block: its segments accumulated in UB, then the result
// finished (a whole row) or added into GM (a part of a split row).
TaskKind ReductionBuilder::spmd_part_kind(Ctx& c, const ReductionPlan::Part& part) const {
  const ReduceFamily& fam = c.fam;
  const ReduceChain& chain = c.plan.chains[static_cast<size_t>(part.chain)];
  c.chain = static_cast<size_t>(part.chain);
  const auto n = static_cast<int64_t>(chain.segments.size());
  const bool whole = part.s0 == 0 && part.s1 == n;
  const int64_t out_elems = product(chain.out.extent);
  if (whole && n == 1 && fam.fuse_single) return fused_kind(c, chain.segments[0], out_elems);
  TaskKind k = base_kind(c, "chain", chain.segments[static_cast<size_t>(part.s0)].extent);
  k.psg = c.psg_partial;
  for (int64_t s = part.s0; s < part.s1; ++s) {
    const Block& seg = chain.segments[static_cast<size_t>(s)];
    TileStep st = load_step(c, seg);
    fam.partial_work(geom(c, seg), c.in, st.vec);
    if (s > part.s0) fam.combine_work(out_elems, st.vec);
    k.steps.push_back(st);
  }
  TileStep fin;
  fam.finalize_work(out_elems, fin.vec);
  if (!fam.second_pass) fin.stores.push_back(output_dma(c, chain.out));
  if (!whole) {
    fin.accumulates = true;
    fam.combine_work(out_elems, fin.fold);
  }
  k.steps.push_back(fin);
  if (fam.second_pass)  // whole rows only (share_over_blocks)
    for (const Block& seg : chain.segments) k.steps.push_back(apply_step(c, seg, out_elems, false));
  return k;
}

// The tasks of chain `ci` (mpmd): one fused task, one task walking it, or a task per segment
// merged afterwards. Its finals and every task it added go to `out`.
void ReductionBuilder::add_chain(Ctx& c, size_t ci, ReductionTasks& out) {
  const ReductionPlan& plan = c.plan;
  const ReduceChain& chain = plan.chains[ci];
  c.chain = ci;
  const int n = static_cast<int>(chain.segments.size());
  const int64_t out_elems = product(chain.out.extent);
  std::vector<int32_t> finals;
  std::vector<int32_t> tasks;

  if (n == 1 && c.fam.fuse_single) {
    const Block& seg = chain.segments[0];
    finals.push_back(add_task(c, fused_kind(c, seg, out_elems), chain.root, seg_deps(c, seg)));
    tasks = finals;
  } else if (plan.merge == MergeMode::kInTask) {
    finals.push_back(add_chain_in_task(c, chain, out_elems));
    tasks = finals;
  } else {
    // One task per segment. kChain folds into the previous result, kTree merges pairwise
    // afterwards, kAtomic accumulates into GM.
    std::vector<int32_t> holder = add_partials(c, chain, out_elems, tasks);
    if (plan.merge == MergeMode::kTree) add_merge_tree(c, chain, out_elems, holder, tasks);
    finals = add_finals(c, chain, out_elems, holder, tasks);
    if (c.fam.second_pass) add_apply_tasks(c, chain, out_elems, finals, tasks);
  }
  out.finals.push_back(finals);
  out.all.insert(out.all.end(), tasks.begin(), tasks.end());
}

// One task walks every segment accumulating in UB, then (second pass) walks them again.
int32_t ReductionBuilder::add_chain_in_task(Ctx& c, const ReduceChain& chain, int64_t out_elems) {
  const ReduceFamily& fam = c.fam;
  const int n = static_cast<int>(chain.segments.size());
  TaskKind k = base_kind(c, "chain", chain.segments[0].extent);
  k.psg = c.psg_partial;
  std::vector<int32_t> d;
  for (int s = 0; s < n; ++s) {
    const Block& seg = chain.segments[static_cast<size_t>(s)];
    TileStep st = load_step(c, seg);
    fam.partial_work(geom(c, seg), c.in, st.vec);
    if (s > 0) fam.combine_work(out_elems, st.vec);
    k.steps.push_back(st);
    d = merged(d, seg_deps(c, seg));
  }
  TileStep fin;
  finish_result(c, chain, out_elems, fin);
  k.steps.push_back(fin);
  if (fam.second_pass)
    for (const Block& seg : chain.segments) k.steps.push_back(apply_step(c, seg, out_elems, false));
  return add_task(c, k, chain.root, d);
}

// One partial task per segment (added to `tasks`); returns, per segment, the task holding its
// result so far.
std::vector<int32_t> ReductionBuilder::add_partials(Ctx& c, const ReduceChain& chain,
                                                    int64_t out_elems,
                                                    std::vector<int32_t>& tasks) {
  const ReduceFamily& fam = c.fam;
  const MergeMode merge = c.plan.merge;
  const int n = static_cast<int>(chain.segments.size());
  std::vector<int32_t> holder(static_cast<size_t>(n), -1);
  for (int s = 0; s < n; ++s) {
    const Block& seg = chain.segments[static_cast<size_t>(s)];
    TaskKind k = base_kind(c, "partial", seg.extent);
    k.psg = c.psg_partial;
    TileStep st = load_step(c, seg);
    fam.partial_work(geom(c, seg), c.in, st.vec);
    std::vector<int32_t> d = seg_deps(c, seg);
    if (merge == MergeMode::kChain && s > 0) {
      st.loads.push_back(stats_dma(c, out_elems, DmaDir::kRead));
      fam.combine_work(out_elems, st.vec);
      d.push_back(holder[static_cast<size_t>(s - 1)]);
    }
    const bool completes = merge == MergeMode::kAtomic  ? !fam.second_pass
                           : merge == MergeMode::kChain ? s == n - 1
                                                        : n == 1;
    if (completes)
      finish_result(c, chain, out_elems, st);
    else
      keep_stats(c, out_elems, st);
    if (completes && fam.second_pass) keep_stats(c, out_elems, st);
    if (merge == MergeMode::kAtomic) {
      st.accumulates = true;
      fam.combine_work(out_elems, st.fold);
    }
    k.steps.push_back(st);
    holder[static_cast<size_t>(s)] = add_task(c, k, chain.root, d);
    tasks.push_back(holder[static_cast<size_t>(s)]);
  }
  return holder;
}

// kTree: the partials merge pairwise, level by level, into holder[0].
void ReductionBuilder::add_merge_tree(Ctx& c, const ReduceChain& chain, int64_t out_elems,
                                      std::vector<int32_t>& holder, std::vector<int32_t>& tasks) {
  const int n = static_cast<int>(chain.segments.size());
  const auto levels = merge_levels(n, MergeMode::kTree);
  for (size_t l = 0; l < levels.size(); ++l)
    for (const auto& m : levels[l]) {
      TaskKind k = base_kind(c, "merge", chain.out.extent);
      k.psg = c.psg_merge;
      TileStep st;
      st.loads.push_back(stats_dma(c, out_elems, DmaDir::kRead));
      st.loads.push_back(stats_dma(c, out_elems, DmaDir::kRead));
      c.fam.combine_work(out_elems, st.vec);
      const bool last = l + 1 == levels.size();
      if (last) finish_result(c, chain, out_elems, st);
      if (!last || c.fam.second_pass) keep_stats(c, out_elems, st);
      k.steps.push_back(st);
      const int32_t t = add_task(
          c, k, chain.root, {holder[static_cast<size_t>(m.a)], holder[static_cast<size_t>(m.b)]});
      holder[static_cast<size_t>(m.a)] = t;
      tasks.push_back(t);
    }
}

// The tasks that complete a chain of per-segment partials (with kAtomic and a second pass, a
// task added to finalise them).
std::vector<int32_t> ReductionBuilder::add_finals(Ctx& c, const ReduceChain& chain,
                                                  int64_t out_elems,
                                                  const std::vector<int32_t>& holder,
                                                  std::vector<int32_t>& tasks) {
  const MergeMode merge = c.plan.merge;
  const int n = static_cast<int>(chain.segments.size());
  std::vector<int32_t> finals;
  if (merge == MergeMode::kAtomic && c.fam.second_pass) {
    // Atomic statistics are raw sums: one task waits for every partial (n edges, not n^2)
    // and finalises them for the output pass.
    TaskKind k = base_kind(c, "merge", chain.out.extent);
    k.psg = c.psg_merge;
    TileStep st;
    st.loads.push_back(stats_dma(c, out_elems, DmaDir::kRead));
    c.fam.finalize_work(out_elems, st.vec);
    keep_stats(c, out_elems, st);
    k.steps.push_back(st);
    finals.push_back(add_task(c, k, chain.root, holder));
    tasks.push_back(finals.back());
  } else if (merge == MergeMode::kAtomic) {
    finals = holder;  // the result is complete when every partial has landed
  } else {
    finals.push_back(merge == MergeMode::kTree ? holder[0] : holder[static_cast<size_t>(n - 1)]);
  }
  return finals;
}

// The second pass: an apply task per segment, after the chain's finals and the segment's deps.
void ReductionBuilder::add_apply_tasks(Ctx& c, const ReduceChain& chain, int64_t out_elems,
                                       const std::vector<int32_t>& finals,
                                       std::vector<int32_t>& tasks) {
  for (const Block& seg : chain.segments) {
    TaskKind k = base_kind(c, "apply", seg.extent);
    k.psg = c.psg_second;
    k.steps.push_back(apply_step(c, seg, out_elems, true));
    tasks.push_back(add_task(c, k, chain.root, merged(finals, seg_deps(c, seg))));
  }
}

// add_blocks' two launches over the plan's blocks, with what their steps share.
class ReductionBuilder::BlockTasks {
 public:
  BlockTasks(ReductionBuilder& b, const ReductionPlan& plan, const ReduceFamily& fam,
             const ReduceFamily* fold, int32_t root_offset)
      : b_(b),
        plan_(plan),
        fam_(fam),
        fold_(fold),
        root_offset_(root_offset),
        c_{plan, fam, root_offset, none_, fam.fp32_inputs ? DType::kFp32 : b.dtype_, plan.shape},
        atomic_(fam.atomic_merge),
        row_parts_(block_row_parts(plan)) {
    for (int d : plan.dims) c_.out_shape[static_cast<size_t>(d)] = 1;
    c_.psg_partial = b.g_.add_psg(fam.psg + ":partial");
    if (plan.second_launch)
      c_.psg_second = b.g_.add_psg(fam.psg + (fam.second_pass ? ":apply" : ":finish"));
    out_.finals.resize(plan.chains.size());
  }

  ReductionTasks run() {
    for (int64_t blk = 0; blk < plan_.grid; ++blk) first_launch_block(blk);
    if (plan_.second_launch)
      for (int64_t blk = 0; blk < plan_.grid; ++blk) second_launch_block(blk);
    return std::move(out_);
  }

 private:
  TileReduceGeometry geom(const Block& b) const {
    return reduce_geometry(compute_extent(plan_.shape, plan_.tile, b.extent), plan_.dims);
  }
  const Block& segment(int64_t ci, int64_t s) const {
    return plan_.chains[static_cast<size_t>(ci)].segments[static_cast<size_t>(s)];
  }
  int64_t out_elems(int64_t ci) const {
    return product(plan_.chains[static_cast<size_t>(ci)].out.extent);
  }
  // Statistics of a row part in GM: atomic families share one slot per row, others keep one slot
  // per part (`slots` slots read at once: a row's parts are contiguous).
  DmaOp slot_dma(int64_t ci, int64_t slot, int64_t slots, DmaDir dir) {
    const DmaOp op{dir, 1, slots * out_elems(ci) * fam_.stats * 4, 0};
    c_.acc.push_back({block_key(kStatsTensor + static_cast<uint32_t>(b_.phase_), {ci, slot}),
                      op.bytes(), dir == DmaDir::kWrite});
    return op;
  }
  // A segment's pass over the input: statistics (partial) or the output (second pass).
  TileStep pass_step(int64_t ci, int64_t s, int64_t s0, bool second) {
    const Block& seg = segment(ci, s);
    TileStep st;
    const DmaOp read = b_.input_dma(c_, seg, DmaDir::kRead);
    for (int i = 0; i < fam_.inputs; ++i) st.loads.push_back(read);
    if (fam_.extra_loads && !second)
      fam_.extra_loads(reduce_geometry(seg.extent, plan_.dims), st.loads);
    if (second) {
      fam_.second_work(geom(seg), c_.in, st.vec);
      st.stores.push_back(b_.input_dma(c_, seg, DmaDir::kWrite));
    } else {
      fam_.partial_work(geom(seg), c_.in, st.vec);
      if (s > s0) fam_.combine_work(out_elems(ci), st.vec);
    }
    return st;
  }
  // One block task of `launch`; `rows` finished rows fold into the scalar output.
  void add_block(TaskKind& k, int64_t blk, int32_t launch, int64_t rows,
                 const std::vector<int64_t>& completes) {
    if (fold_ && rows > 0) {
      TileStep st;
      fold_->partial_work(reduce_geometry({rows}, {0}), DType::kFp32, st.vec);
      fold_->finalize_work(1, st.vec);  // the batch mean is linear: each block scales its share
      const DmaOp op{DmaDir::kWrite, 1, fold_->stats * 4, 0};
      c_.acc.push_back({block_key(kWorkspaceTensor + static_cast<uint32_t>(b_.phase_ + 1), {0}),
                        op.bytes(), true});
      st.stores.push_back(op);
      st.accumulates = true;
      fold_->combine_work(1, st.fold);
      append_step(k, st);
    }
    if (k.steps.empty()) return;
    k.label = fmt::format("{}_{}block{}", fam_.psg, launch > 0 ? "finish_" : "", blk);
    const int32_t t = b_.g_.add_task(b_.kinds_.get(b_.g_, k), root_offset_, -1, launch);
    for (const Access& a : c_.acc) b_.g_.add_access(t, a);
    c_.acc.clear();
    for (const int64_t ci : completes) out_.finals[static_cast<size_t>(ci)].push_back(t);
    out_.all.push_back(t);
  }
  void first_launch_block(int64_t blk) {
    TaskKind k = b_.base_kind(c_, "block", plan_.tile);
    k.psg = c_.psg_partial;
    int64_t rows = 0;
    std::vector<int64_t> completes;
    for (const RowPart& p : row_parts_[static_cast<size_t>(blk)]) {
      c_.chain = static_cast<size_t>(p.chain);
      for (int64_t s = p.s0; s < p.s1; ++s) append_step(k, pass_step(p.chain, s, p.s0, false));
      TileStep fin;
      if (plan_.second_launch) {
        // Leave the part's statistics in GM for launch 1.
        fin.stores.push_back(slot_dma(p.chain, atomic_ ? 0 : p.index, 1, DmaDir::kWrite));
        if (atomic_ && p.parts > 1) {
          fin.accumulates = true;
          fam_.combine_work(out_elems(p.chain), fin.fold);
        }
      } else {
        // A whole row (or, with linear_finalize, a part: its scaled share) finished here, its
        // value kept in UB for the fold.
        fam_.finalize_work(out_elems(p.chain), fin.vec);
        rows += out_elems(p.chain);
        if (p.parts == 1) completes.push_back(p.chain);
      }
      append_step(k, fin);
    }
    add_block(k, blk, 0, rows, completes);
  }
  void second_launch_block(int64_t blk) {
    TaskKind k = b_.base_kind(c_, "finish", plan_.tile);
    k.psg = c_.psg_second;
    int64_t slots = 1, rows = 0;
    std::vector<int64_t> completes;
    for (const RowPart& p : row_parts_[static_cast<size_t>(blk)]) {
      // Every part of a row is normalised by its own block; a reduced row is finished by the
      // block holding its first part.
      if (!fam_.second_pass && p.index > 0) continue;
      c_.chain = static_cast<size_t>(p.chain);
      const int64_t n = out_elems(p.chain);
      TileStep fin;
      fin.loads.push_back(slot_dma(p.chain, 0, atomic_ ? 1 : p.parts, DmaDir::kRead));
      if (!atomic_)
        for (int64_t i = 1; i < p.parts; ++i) fam_.combine_work(n, fin.vec);
      slots = std::max(slots, atomic_ ? 1 : p.parts);
      fam_.finalize_work(n, fin.vec);
      if (!fam_.second_pass && !fold_)
        fin.stores.push_back(b_.output_dma(c_, plan_.chains[c_.chain].out));
      append_step(k, fin);
      if (fam_.second_pass)
        for (int64_t s = p.s0; s < p.s1; ++s) append_step(k, pass_step(p.chain, s, p.s0, true));
      else
        rows += n;
      completes.push_back(p.chain);
    }
    if (slots > 1)
      k.buffers.push_back({"partials", slots * product(plan_.chains[0].out.extent) * fam_.stats * 4,
                           BufferRole::kTemp, MemSpace::kUb});
    add_block(k, blk, 1, rows, completes);
  }

  ReductionBuilder& b_;
  const ReductionPlan& plan_;
  const ReduceFamily& fam_;
  const ReduceFamily* fold_;
  const int32_t root_offset_;
  const SegmentDeps none_;
  Ctx c_;
  const bool atomic_;
  const std::vector<std::vector<RowPart>> row_parts_;
  ReductionTasks out_;
};

ReductionTasks ReductionBuilder::add_blocks(const ReductionPlan& plan, const ReduceFamily& fam,
                                            const ReduceFamily* fold, int32_t root_offset) {
  ReductionTasks out = BlockTasks(*this, plan, fam, fold, root_offset).run();
  ++phase_;
  return out;
}

SegmentDeps deps_by_origin(const ReductionPlan& plan, const ReductionTasks& tasks) {
  auto index = std::make_shared<std::map<Dims, std::vector<int32_t>>>();
  for (size_t i = 0; i < plan.chains.size(); ++i)
    (*index)[plan.chains[i].out.origin] = tasks.finals[i];
  return [index](const Block& seg) {
    auto it = index->find(seg.origin);
    return it == index->end() ? std::vector<int32_t>{} : it->second;
  };
}

SegmentDeps deps_by_rows(const ReductionPlan& plan, const ReductionTasks& tasks) {
  struct Rows {
    int64_t begin, end;
    int32_t task;
  };
  auto rows = std::make_shared<std::vector<Rows>>();
  for (size_t i = 0; i < plan.chains.size(); ++i) {
    const auto& out = plan.chains[i].out;
    for (int32_t t : tasks.finals[i])
      rows->push_back({out.origin[0], out.origin[0] + out.extent[0], t});
  }
  std::sort(rows->begin(), rows->end(), [](const Rows& a, const Rows& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.task < b.task;
  });
  int64_t longest = 0;
  for (const auto& r : *rows) longest = std::max(longest, r.end - r.begin);
  return [rows, longest](const Block& seg) {
    const int64_t b = seg.origin[0], e = seg.origin[0] + seg.extent[0];
    std::vector<int32_t> d;
    auto it = std::lower_bound(rows->begin(), rows->end(), b - longest + 1,
                               [](const Rows& r, int64_t v) { return r.begin < v; });
    for (; it != rows->end() && it->begin < e; ++it)
      if (it->end > b) d.push_back(it->task);
    return d;
  };
}

}  // namespace tilesim
