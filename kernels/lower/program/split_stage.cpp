// A stage ending in a reduction whose tile splits a reduced dim: its tiles group into chains (one
// per output block) whose partials merge by the op's merge mode. pypto: in_task (one task walks
// the row's tiles, folding in UB, as Triton and Ascend C loops do), chain, tree or atomic across
// tasks, as the reduce family's merge. spmd: rows (or, past the grid, row pieces) shared over the
// blocks, a split row added up atomically or by a second launch.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "kernels/lower/program/lowering_context.hpp"
#include "kernels/tiling/block_regions.hpp"
#include "kernels/tiling/merge_modes.hpp"
#include "kernels/tiling/vector_work.hpp"
#include "model/error.hpp"

namespace tilesim {

void LoweringContext::combine(const ProgStage& s, int64_t out_elems, std::vector<VecOp>& v) const {
  for (int o = s.reduce_first; o <= s.last; ++o) {
    const ProgOp& red = op(o);
    // A sumexp reusing the group's amax as its running max (X10) rescales to the amax's merge.
    reduce_merge_work(*red.info->reduction, out_elems, tensor(red.in[0]).dtype,
                      tensor(red.out).dtype, v, reused_max(program(), s, red) >= 0 ? 1 : 0);
  }
}

namespace {

// The output tensors of split stage s's statistics, in program order.
std::vector<int> statistics(const LoweringContext& cx, const ProgStage& s) {
  std::vector<int> out;
  for (int o = s.reduce_first; o <= s.last; ++o) out.push_back(cx.op(o).out);
  return out;
}

// Appends kind t's steps and buffers to k, work run later in the same task (an empty k takes t).
void append_work(TaskKind& k, TaskKind&& t) {
  if (k.steps.empty() && k.buffers.empty()) {
    k = std::move(t);
    return;
  }
  for (const TileStep& st : t.steps) append_step(k, st);
  merge_buffers(k, t.buffers);
}

// The second pass's tiles `tiles` (grid indices) were written by `task`.
void produced_by(StageRun& pass, const std::vector<int64_t>& tiles, int32_t task) {
  for (Producer& pr : pass.stores) {
    pr.tasks.resize(static_cast<size_t>(pass.grid.count()));
    for (int64_t i : tiles) pr.tasks[static_cast<size_t>(i)] = {task};
  }
}

// What both partitions' lowerings share: the statistics' copies and merges, and the work the task
// that finishes a row runs after it.
class SplitLowering {
 protected:
  SplitLowering(LoweringContext& cx, StageRun& run, std::vector<Access>& acc)
      : cx_(cx), run_(run), red_(cx.op(run.s.last)), stats_(statistics(cx, run.s)), acc_(acc) {}

  // The UB of one partial of output block `out`: every statistic's block.
  int64_t statistics_bytes(const Block& out) const {
    int64_t bytes = 0;
    for (int t : stats_) bytes += cx_.ub_bytes(t, out);
    return bytes;
  }
  // Stores each statistic's output block `out` but those `dropped` (StageRun::dropped).
  void store(const Block& out, const std::vector<int>& dropped, TileStep& st) {
    for (int t : stats_)
      if (std::find(dropped.begin(), dropped.end(), t) == dropped.end())
        st.stores.push_back(cx_.dma(DmaDir::kWrite, t, out, acc_));
  }
  // Adds (max, min) the partial into the statistics in GM atomically.
  void add_atomically(const Block& out, TileStep& st) {
    store(out, {}, st);
    st.accumulates = true;
    cx_.combine(run_.s, product(out.extent), st.fold);
  }
  // Folds the partial into the running statistics in GM: read, combined, written back.
  void fold_into(const Block& out, TileStep& st) {
    for (int t : stats_) st.loads.push_back(cx_.dma(DmaDir::kRead, t, out, acc_));
    cx_.combine(run_.s, product(out.extent), st.vec);
    store(out, {}, st);
  }
  // The epilogue on output block c (its grid index), in the task that completes the block, on the
  // statistics in UB (else loaded from GM: after atomic partials).
  void append_epilogue(int64_t c, bool in_ub, TaskKind& k) {
    const StageRun& epi = *run_.epilogue;
    append_work(k, cx_.vector_kind(epi.s, epi.grid.block(c), acc_, run_.dropped,
                                   in_ub ? stats_ : std::vector<int>{}));
  }
  // The second pass over tile b in the task that holds the row's statistics (and the epilogue's
  // results) in UB; `deps`: the tasks its other loads wait for.
  void append_second_pass(const Block& b, TaskKind& k, std::vector<int32_t>& deps) {
    const StageRun& pass = *run_.second;
    std::vector<int> held = stats_;
    if (run_.epilogue)
      for (int o = run_.epilogue->s.first; o <= run_.epilogue->s.last; ++o)
        held.push_back(cx_.op(o).out);
    append_work(k, cx_.vector_kind(pass.s, b, acc_, {}, held));
    const auto d = cx_.load_deps(pass.s, b, run_.produced);
    deps.insert(deps.end(), d.begin(), d.end());
  }

  LoweringContext& cx_;
  StageRun& run_;
  const ProgOp& red_;
  const std::vector<int> stats_;
  std::vector<Access>& acc_;  // the GM accesses of the task being built
};

// What a split stage's chains build task by task, kept from chain to chain so that its storage
// is reused (a sweep lowers thousands of candidates, each with a chain per output row).
struct ChainScratch {
  std::vector<Access> acc;
  TaskKind kind, merge;
  std::vector<int32_t> tile_tasks;
  int64_t levels_of = -1;  // the chain length `levels` is for (-1: none yet)
  std::vector<std::vector<MergeStep>> levels;
};

// One chain (an output block's row of tiles) of a split stage under pypto.
class ChainLowering : SplitLowering {
 public:
  ChainLowering(LoweringContext& cx, StageRun& run, const std::vector<std::vector<int64_t>>& chains,
                size_t c, ChainScratch& scratch)
      : SplitLowering(cx, run, scratch.acc),
        scratch_(scratch),
        chain_(chains[c]),
        c_(static_cast<int64_t>(c)),
        root_(run.base + run.grid.root(chain_.front())),
        out_(output_region(cx.program(), red_, run.grid.block(chain_.front()))),
        n_(static_cast<int64_t>(chain_.size())),
        tile_tasks_(scratch.tile_tasks) {
    tile_tasks_.clear();
    if (run.epilogue && run.epilogue->grid.count() != static_cast<int64_t>(chains.size()))
      throw InternalError("program: a split stage's epilogue has a block per output block");
  }

  // in_task: one task walks the row's tiles, folding each partial into the accumulator in UB.
  int32_t in_task() {
    acc_.clear();
    TaskKind k;
    std::vector<int32_t> deps;
    for (int64_t j = 0; j < n_; ++j) {
      TaskKind t = cx_.vector_kind(run_.s, block(j), acc_, stats_);
      if (j > 0) cx_.combine(run_.s, product(out_.extent), t.steps.back().vec);
      append_tile(k, std::move(t));
      const auto d = cx_.load_deps(run_.s, block(j), run_.produced);
      deps.insert(deps.end(), d.begin(), d.end());
    }
    if (n_ > 1)
      k.buffers.push_back({"partial", statistics_bytes(out_), BufferRole::kTemp, MemSpace::kUb});
    TileStep fin;
    store(out_, run_.dropped, fin);
    if (!fin.stores.empty()) k.steps.push_back(fin);
    if (run_.epilogue) append_epilogue(c_, true, k);
    if (run_.second)
      for (int64_t j = 0; j < n_; ++j) append_second_pass(block(j), k, deps);
    const int32_t task = cx_.add_task(run_.s, std::move(k), run_.psg, root_, acc_, deps);
    tile_tasks_.assign(chain_.size(), task);
    finished_by(task);
    if (run_.second) produced_by(*run_.second, chain_, task);
    return task;
  }

  // A task per segment, merged as the op says, then the second pass's tasks; the tasks that
  // complete the output block.
  std::vector<int32_t> segments(int& merge_psg) {
    std::vector<int32_t> holder(static_cast<size_t>(n_), -1);
    for (int64_t j = 0; j < n_; ++j) {
      acc_.clear();
      // The segment's kind, built in the scratch kind: its last step gains the merge.
      TaskKind& k = scratch_.kind;
      cx_.vector_kind_into(k, run_.s, block(j), acc_, stats_);
      std::vector<int32_t> deps = cx_.load_deps(run_.s, block(j), run_.produced);
      add_merge(j, k.steps.back(), deps, holder);
      // The last segment of a chain, or a lone one, completes the block.
      const bool completes = j == n_ - 1 && (red_.merge == MergeMode::kChain ||
                                             (red_.merge == MergeMode::kTree && n_ == 1));
      if (completes && run_.epilogue) append_epilogue(c_, true, k);
      holder[static_cast<size_t>(j)] = cx_.add_task(run_.s, k, run_.psg, root_, acc_, deps);
      if (completes) finished_by(holder[static_cast<size_t>(j)]);
      tile_tasks_.push_back(holder[static_cast<size_t>(j)]);
    }
    if (red_.merge == MergeMode::kTree && n_ > 1) merge_tree(holder, merge_psg);
    if (red_.merge == MergeMode::kAtomic && run_.epilogue) {
      // The partials land in GM atomically: a task after them all finishes the block.
      acc_.clear();
      TaskKind k;
      append_epilogue(c_, false, k);
      finished_by(
          cx_.add_task(run_.epilogue->s, std::move(k), run_.epilogue->psg, root_, acc_, holder));
    }
    const std::vector<int32_t> done = red_.merge == MergeMode::kAtomic ? holder
                                      : red_.merge == MergeMode::kChain
                                          ? std::vector<int32_t>{holder.back()}
                                          : std::vector<int32_t>{holder.front()};
    // The epilogue's task follows every task of the row: it alone is waited for.
    if (run_.second) second_pass_tasks(finisher_ >= 0 ? std::vector<int32_t>{finisher_} : done);
    return done;
  }
  // The task that ran each tile, in chain order.
  const std::vector<int32_t>& tile_tasks() const { return tile_tasks_; }

 private:
  Block block(int64_t j) const { return run_.grid.block(chain_[static_cast<size_t>(j)]); }
  // The epilogue's block of this chain was written by `task`.
  void finished_by(int32_t task) {
    if (!run_.epilogue) return;
    produced_by(*run_.epilogue, {c_}, task);
    finisher_ = task;
  }
  // The second pass over the chain's tiles, a task per tile (the reducing families' apply tasks)
  // waiting for the tasks that completed the row (`done`) and those that wrote what else it loads.
  void second_pass_tasks(const std::vector<int32_t>& done) {
    StageRun& pass = *run_.second;
    for (int64_t i : chain_) {
      acc_.clear();
      const Block b = pass.grid.block(i);
      cx_.vector_kind_into(scratch_.kind, pass.s, b, acc_);
      std::vector<int32_t> deps = cx_.load_deps(pass.s, b, run_.produced);
      deps.insert(deps.end(), done.begin(), done.end());
      produced_by(
          pass, {i},
          cx_.add_task(pass.s, scratch_.kind, pass.psg, pass.base + pass.grid.root(i), acc_, deps));
    }
  }
  void add_merge(int64_t j, TileStep& st, std::vector<int32_t>& deps,
                 const std::vector<int32_t>& holder) {
    if (red_.merge == MergeMode::kAtomic) {
      add_atomically(out_, st);
    } else if (red_.merge == MergeMode::kChain && j > 0) {
      // Folded into the running results the previous segment wrote.
      fold_into(out_, st);
      deps.push_back(holder[static_cast<size_t>(j - 1)]);
    } else if (red_.merge == MergeMode::kChain || n_ == 1) {
      store(out_, {}, st);  // the first of a chain, or a lone segment
    } else {                // kTree: the partials to the workspace
      st.stores.push_back(cx_.partial_dma(DmaDir::kWrite, run_.s, out_, j, acc_));
    }
  }
  void merge_tree(std::vector<int32_t>& holder, int& merge_psg) {
    if (merge_psg < 0) merge_psg = cx_.graph().add_psg(run_.s.psg + ":merge");
    if (scratch_.levels_of != n_) {
      scratch_.levels = merge_levels(static_cast<int>(n_), MergeMode::kTree);
      scratch_.levels_of = n_;
    }
    const auto& levels = scratch_.levels;
    const std::string label = fmt::format("{}:merge{}", run_.s.psg, format_dims(out_.extent));
    for (size_t l = 0; l < levels.size(); ++l)
      for (const MergeStep& m : levels[l]) {
        acc_.clear();
        // A merge task's kind, in the scratch (one step; its vectors keep their room).
        TaskKind& k = scratch_.merge;
        k.buffer_count = cx_.spec().buffer_count;
        k.label = label;
        k.steps.resize(1);
        TileStep& st = k.steps.front();
        st.clear();
        st.loads.push_back(cx_.partial_dma(DmaDir::kRead, run_.s, out_, m.a, acc_));
        st.loads.push_back(cx_.partial_dma(DmaDir::kRead, run_.s, out_, m.b, acc_));
        cx_.combine(run_.s, product(out_.extent), st.vec);
        const bool root = l + 1 == levels.size();
        if (root)
          store(out_, run_.dropped, st);
        else
          st.stores.push_back(cx_.partial_dma(DmaDir::kWrite, run_.s, out_, m.a, acc_));
        k.buffers.assign(
            1, {"partials", 2 * statistics_bytes(out_), BufferRole::kInput, MemSpace::kUb});
        if (root && run_.epilogue) append_epilogue(c_, true, k);
        holder[static_cast<size_t>(m.a)] =
            cx_.add_task(run_.s, k, merge_psg, root_, acc_,
                         {holder[static_cast<size_t>(m.a)], holder[static_cast<size_t>(m.b)]});
        if (root) finished_by(holder[static_cast<size_t>(m.a)]);
      }
  }

  ChainScratch& scratch_;
  const std::vector<int64_t>& chain_;
  const int64_t c_;  // the chain's index: its output block's
  const int32_t root_;
  const Block out_;
  const int64_t n_;
  std::vector<int32_t>& tile_tasks_;
  int32_t finisher_ = -1;
};

void lower_split_pypto(LoweringContext& cx, StageRun& run) {
  const ProgStage& s = run.s;
  const std::vector<int> stats = statistics(cx, s);
  const auto chains = split_chains(cx.program(), s, run.grid);
  cx.note_segments(static_cast<int64_t>(chains.front().size()));
  std::vector<std::vector<int32_t>> by_tile(static_cast<size_t>(run.grid.count()));
  std::vector<std::vector<int32_t>> by_chain(chains.size());
  int merge_psg = -1;
  ChainScratch scratch;
  for (size_t c = 0; c < chains.size(); ++c) {
    ChainLowering chain(cx, run, chains, c, scratch);
    by_chain[c] = cx.op(s.last).merge == MergeMode::kInTask ? std::vector<int32_t>{chain.in_task()}
                                                            : chain.segments(merge_psg);
    for (size_t j = 0; j < chains[c].size(); ++j)
      by_tile[static_cast<size_t>(chains[c][j])] = {chain.tile_tasks()[j]};
  }
  for (size_t i = 0; i < s.stores.size(); ++i)
    run.stores[i].tasks =
        std::find(stats.begin(), stats.end(), s.stores[i]) != stats.end() ? by_chain : by_tile;
}

// spmd: whole rows per block while there are at least as many rows as blocks (or always, with
// spmd_rows "whole"); past that (or always, "split") the blocks share (row, tile) units, and a
// row split over blocks finishes in GM. With partition.block each block region is a unit: the
// grid's pieces are the regions' sub-tiles (grid_of), so a region's rows are whole or split as
// the regions cut them.
// The accesses a SplitSpmd builds its blocks' tasks in: a base constructed before SplitLowering,
// which keeps a reference to them.
struct OwnAccesses {
  std::vector<Access> accesses_;
};

class SplitSpmd : OwnAccesses, SplitLowering {
 public:
  SplitSpmd(LoweringContext& cx, StageRun& run)
      : SplitLowering(cx, run, accesses_),
        chains_(split_chains(cx.program(), run.s, run.grid)),
        rows_(static_cast<int64_t>(chains_.size())),
        segs_(static_cast<int64_t>(chains_.front().size())),
        parts_of_(static_cast<size_t>(rows_), 0) {
    cx.note_segments(segs_);
    const int64_t grid = cx.spec().grid;
    if (!cx.spec().block.empty()) {
      const BlockTiling cut(run.s.shape, cx.spec().block, run.s.tile);
      units_ = region_chain_runs(cut, static_cast<size_t>(red_.dims.front()));
      what_ = "block regions";
    } else if (red_.spmd_rows == SpmdRows::kSplit || red_.spmd_rows == SpmdRows::kParts ||
               in_gm() || (red_.spmd_rows == SpmdRows::kAuto && grid > rows_)) {
      for (int64_t u = 0; u < rows_ * segs_; ++u)
        units_.push_back({{u / segs_, u % segs_, u % segs_ + 1}});
      what_ = "sub-tiles";
    } else {
      for (int64_t c = 0; c < rows_; ++c) units_.push_back({{c, 0, segs_}});
      what_ = "output row tiles";
    }
    // The epilogue and the second pass run in the blocks when every row is whole in one block
    // (read from the blocks' runs, neighbouring parts of a row joined, not from the units).
    used_ = std::min(grid, static_cast<int64_t>(units_.size()));
    for (int64_t blk = 0; blk < used_; ++blk)
      for (const Part& p : block_chain_runs(units_, used_, blk))
        whole_rows_ = whole_rows_ && whole(p);
    fuse_second_ = run.second != nullptr && whole_rows_;
    // X13: the fold goes into the blocks that finish rows, or that add a linear statistic's parts
    // (each part's scaled share is its share of the fold); otherwise the per-row result is stored
    // and the fold's reduction runs as a launch of its own.
    folds_ = run.fold && (whole_rows_ || (atomic_parts() && !run.epilogue));
    // Rows split over blocks with an epilogue and no second pass: the epilogue's launch, which
    // finishes the rows, folds them.
    if (run.fold && !folds_ && run.epilogue && !run.second) {
      run.epilogue->fold = run.fold;
      run.epilogue->dropped.push_back(fold_input());
      run.fold = nullptr;
    }
    if (run.fold && !folds_) std::erase(run.dropped, fold_input());
  }

  void lower() {
    for (int64_t blk = 0; blk < used_; ++blk) first_launch_block(blk);
    cx_.end_launch(run_.s, run_.psg, used_, what_, run_.s.psg);
    // Products, indices and log-sum-exps do not accumulate atomically: a row's parts go to a
    // workspace and a second launch folds them (with a second pass and an epilogue, that of the
    // second pass: each block folds its own parts' rows, as the softmax family's does).
    if (!atomic_parts() && !(run_.second && run_.epilogue && !whole_rows_)) second_launch();
    // Rows split over blocks: once they are whole, a launch in which each block finishes the rows
    // of its own parts (the epilogue) and walks those parts again (the second pass); without a
    // second pass the epilogue is a launch of its own.
    if (run_.fold && !folds_)
      run_.fold->s.split ? lower_split_stage(cx_, *run_.fold) : lower_vector_stage(cx_, *run_.fold);
    if (whole_rows_) return;
    if (run_.second) {
      for (int64_t blk = 0; blk < used_; ++blk) second_pass_block(blk);
      cx_.end_launch(run_.second->s, run_.second->psg, used_, what_, run_.second->s.psg);
    } else if (run_.epilogue) {
      lower_vector_stage(cx_, *run_.epilogue);
    }
  }

 private:
  using Part = ChainRun;
  int fold_input() const { return run_.fold ? cx_.op(run_.fold->s.first).in[0] : -1; }
  bool whole(const Part& p) const { return p.s0 == 0 && p.s1 == segs_; }
  // A row's parts added into the output atomically (else written to slots a launch folds).
  bool atomic_parts() const {
    for (int o = run_.s.reduce_first; o <= run_.s.last; ++o)
      if (!cx_.op(o).info->reduction->merges_atomically) return false;
    return red_.spmd_rows != SpmdRows::kSlots && red_.spmd_rows != SpmdRows::kParts;
  }
  // A block's part kept in GM, sub-tile by sub-tile (spmd_rows tiles or slots).
  bool in_gm() const {
    return red_.spmd_rows == SpmdRows::kTiles || red_.spmd_rows == SpmdRows::kSlots;
  }
  Block out_of(int64_t chain) const {
    return output_region(cx_.program(), red_,
                         run_.grid.block(chains_[static_cast<size_t>(chain)].front()));
  }
  // Tile j of part p's row.
  Block tile(const Part& p, int64_t j) const {
    return run_.grid.block(chains_[static_cast<size_t>(p.chain)][static_cast<size_t>(j)]);
  }
  void first_launch_block(int64_t blk) {
    acc_.clear();
    block_first_ = true;
    TaskKind k;
    int64_t values = 0;  // of the fold's input (X13)
    for (const Part& part : block_chain_runs(units_, used_, blk)) {
      append_kind(k, part_kind(part));
      values += product(out_of(part.chain).extent);
    }
    if (folds_) append_kind(k, fold_kind(cx_, run_, values, acc_));
    cx_.add_block(run_.s, std::move(k), run_.psg, blk, acc_);
  }
  void second_pass_block(int64_t blk) {
    acc_.clear();
    TaskKind k;
    int64_t most = 0;
    for (const Part& part : block_chain_runs(units_, used_, blk)) {
      if (run_.epilogue) epilogue_of_part(part.chain, k, most);
      std::vector<int32_t> deps;  // spmd: launches run in order
      for (int64_t j = part.s0; j < part.s1; ++j)
        if (run_.epilogue)
          append_second_pass(tile(part, j), k, deps);
        else
          append_work(k, cx_.vector_kind(run_.second->s, tile(part, j), acc_));
    }
    if (most > 0) merge_buffers(k, {{"partials", most, BufferRole::kInput, MemSpace::kUb}});
    cx_.add_block(run_.second->s, std::move(k), run_.second->psg, blk, acc_);
  }
  // The epilogue of row c in the second pass's block: on the statistics read from GM, or on the
  // row's workspace slots loaded and folded in UB first.
  void epilogue_of_part(int64_t c, TaskKind& k, int64_t& most) {
    const int64_t parts = parts_of_[static_cast<size_t>(c)];
    if (atomic_parts() || parts < 2) {
      append_epilogue(c, false, k);
      return;
    }
    const Block out = out_of(c);
    // The row's slots lie side by side: one copy.
    const DmaOp slots = cx_.partial_dma(DmaDir::kRead, run_.s, out, 0, acc_, parts);
    const StageRun& epi = *run_.epilogue;
    TaskKind e = cx_.vector_kind(epi.s, epi.grid.block(c), acc_, run_.dropped, stats_);
    // The fold and the finalize are one step: the finalize's instructions follow the fold's.
    if (e.steps.empty()) e.steps.emplace_back();
    TileStep& first = e.steps.front();
    first.loads.insert(first.loads.begin(), slots);
    std::vector<VecOp> fold;
    for (int64_t q = 1; q < parts; ++q) cx_.combine(run_.s, product(out.extent), fold);
    first.vec.insert(first.vec.begin(), fold.begin(), fold.end());
    append_work(k, std::move(e));
    most = std::max(most, parts * statistics_bytes(out));
  }
  // A part of a row: its tiles folded in UB, then the whole row written, or the part added
  // atomically, or written to its workspace slot; spmd_rows tiles / slots: each sub-tile's
  // partial added into GM, atomically (tiles) or into the part's slot (slots; a whole row's
  // slot is the output).
  TaskKind part_kind(const Part& part) {
    const Block out = out_of(part.chain);
    int64_t& parts = parts_of_[static_cast<size_t>(part.chain)];
    TaskKind pk;
    for (int64_t j = part.s0; j < part.s1; ++j) {
      const Block b = tile(part, j);
      resident_loads(cx_, run_.s, b, block_first_, held_, skip_);
      block_first_ = false;
      TaskKind t = cx_.vector_kind(run_.s, b, acc_, stats_, skip_);
      TileStep& st = t.steps.back();
      if (in_gm() && red_.spmd_rows == SpmdRows::kTiles) {
        add_atomically(out, st);
      } else if (in_gm() && whole(part)) {
        fold_into(out, st);
      } else if (in_gm()) {
        st.loads.push_back(cx_.partial_dma(DmaDir::kRead, run_.s, out, parts, acc_));
        cx_.combine(run_.s, product(out.extent), st.vec);
        st.stores.push_back(cx_.partial_dma(DmaDir::kWrite, run_.s, out, parts, acc_));
      } else if (j > part.s0) {
        cx_.combine(run_.s, product(out.extent), st.vec);
      }
      append_tile(pk, std::move(t));
    }
    TileStep fin;
    if (in_gm()) {
      // Each sub-tile merged its partial in GM.
    } else if (whole(part)) {
      // Rows split over blocks keep their statistics in GM for the launches after (but the
      // fold's input, which the block folds).
      std::vector<int> unstored = run_.dropped;
      if (!whole_rows_)
        std::erase_if(unstored, [&](int t) { return !folds_ || t != fold_input(); });
      store(out, unstored, fin);
    } else if (folds_) {
      // A linear statistic's part: its scaled share stays in UB for the block's fold.
    } else if (atomic_parts()) {
      add_atomically(out, fin);
    } else {
      fin.stores.push_back(cx_.partial_dma(DmaDir::kWrite, run_.s, out, parts, acc_));
    }
    ++parts;
    if (!fin.stores.empty()) pk.steps.push_back(fin);
    if (run_.epilogue && whole_rows_) append_epilogue(part.chain, true, pk);
    if (fuse_second_) {
      std::vector<int32_t> deps;  // spmd: launches run in order, blocks start at launch
      for (int64_t j = part.s0; j < part.s1; ++j) append_second_pass(tile(part, j), pk, deps);
    }
    return pk;
  }
  // The second launch: each split row's parts folded and written, rows shared over the blocks.
  void second_launch() {
    std::vector<int64_t> split;
    for (int64_t c = 0; c < rows_; ++c)
      if (parts_of_[static_cast<size_t>(c)] > 1) split.push_back(c);
    if (split.empty()) return;
    TaskGraph& g = cx_.graph();
    const int merge_psg = g.add_psg(run_.s.psg + ":merge");
    const int64_t blocks = std::min(cx_.spec().grid, static_cast<int64_t>(split.size()));
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const BlockRange range = block_range(static_cast<int64_t>(split.size()), blocks, blk);
      acc_.clear();
      TaskKind k;
      k.buffer_count = cx_.spec().buffer_count;
      k.label = fmt::format("{}:merge_block{}", run_.s.psg, blk);
      k.psg = merge_psg;
      int64_t most = 0;
      for (int64_t r = range.begin; r < range.end; ++r) {
        const int64_t c = split[static_cast<size_t>(r)];
        const Block out = out_of(c);
        TileStep st;
        const int64_t parts = parts_of_[static_cast<size_t>(c)];
        for (int64_t q = 0; q < parts; ++q)
          st.loads.push_back(cx_.partial_dma(DmaDir::kRead, run_.s, out, q, acc_));
        for (int64_t q = 1; q < parts; ++q) cx_.combine(run_.s, product(out.extent), st.vec);
        store(out, {}, st);
        append_step(k, st);
        // Slots, one per block, stream through two buffers (the wrapper's sum over them).
        const bool streamed =
            red_.spmd_rows == SpmdRows::kSlots || red_.spmd_rows == SpmdRows::kParts;
        const int64_t held = streamed ? std::min<int64_t>(parts, 2) : parts;
        most = std::max(most, held * statistics_bytes(out));
      }
      k.buffers = {{"partials", most, BufferRole::kInput, MemSpace::kUb}};
      const int32_t task = g.add_task(cx_.kind_id(run_.s, k), 0, -1, cx_.launch());
      for (const Access& a : acc_) g.add_access(task, a);
    }
    cx_.end_launch(run_.s, merge_psg, blocks, "split rows", run_.s.psg + ":merge");
  }

  const std::vector<std::vector<int64_t>> chains_;
  const int64_t rows_, segs_;
  int64_t used_ = 0;                      // the blocks with work
  bool whole_rows_ = true;                // every row whole in one block
  bool fuse_second_ = false;              // run_.second runs in the first launch's blocks
  bool folds_ = false;                    // run_.fold runs in the first launch's blocks
  std::vector<std::vector<Part>> units_;  // shared in contiguous runs over the blocks
  std::string what_;                      // the units, for the grid check's message
  std::vector<int64_t> parts_of_;         // per row: the parts written so far
  // Resident inputs: loaded by a block's first sub-tile (resident_loads), held for the others.
  bool block_first_ = true;
  std::map<int, Block> held_;
  std::vector<int> skip_;
};

}  // namespace

void lower_split_stage(LoweringContext& cx, StageRun& run) {
  if (cx.spmd())
    SplitSpmd(cx, run).lower();
  else
    lower_split_pypto(cx, run);
}

}  // namespace tilesim
