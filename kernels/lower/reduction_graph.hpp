#pragma once
// Turns a ReductionPlan and a ReduceFamily into tasks: partial, merge, finalize and second-pass
// work with their buffers, DMA instructions and dependencies (see MergeMode for the shapes).

#include <functional>
#include <map>
#include <vector>

#include "kernels/lower/reduce_family.hpp"
#include "kernels/tiling/kind_cache.hpp"
#include "kernels/tiling/reduction_plan.hpp"
#include "model/hardware.hpp"

namespace tilesim {

struct ReductionTasks {
  std::vector<std::vector<int32_t>> finals;  // per chain: the tasks that complete its result
  std::vector<int32_t> all;                  // every task added
};

// Dependencies of a task that reads the inputs of `segment` (tasks of an earlier phase).
using SegmentDeps = std::function<std::vector<int32_t>(const Block& segment)>;

class ReductionBuilder {
 public:
  ReductionBuilder(TaskGraph& graph, KindCache& kinds, const Hardware& hw, DType dtype,
                   int buffer_count)
      : g_(graph), kinds_(kinds), hw_(hw), dtype_(dtype), buffer_count_(buffer_count) {}

  // Adds one reduction. Root functions are plan roots + `root_offset`.
  ReductionTasks add(const ReductionPlan& plan, const ReduceFamily& fam, int32_t root_offset,
                     const SegmentDeps& deps = {});
  // spmd blocks that end in GM by more than one launch or fold their finished rows (`fold`, the
  // family of a loss's batch mean, or null): each block's parts of plan.blocks (whole rows or
  // row parts, block_row_parts) in launch 0; with plan.second_launch, launch 0 leaves each row
  // part's statistics in GM and launch 1 combines, finalizes and applies (or finishes) them. A
  // folding block adds its rows' folded value into the scalar output atomically.
  ReductionTasks add_blocks(const ReductionPlan& plan, const ReduceFamily& fam,
                            const ReduceFamily* fold, int32_t root_offset);

 private:
  struct Ctx;
  class BlockTasks;  // add_blocks' launches (reduction_graph.cpp)
  int32_t add_task(Ctx& c, TaskKind kind, int32_t root, const std::vector<int32_t>& deps);
  TaskKind base_kind(Ctx& c, const std::string& role, const Dims& extent) const;
  // Each DMA helper also records the GM block it touches for the task being built.
  DmaOp input_dma(Ctx& c, const Block& b, DmaDir dir) const;
  DmaOp stats_dma(Ctx& c, int64_t out_elems, DmaDir dir) const;
  DmaOp output_dma(Ctx& c, const Block& out) const;

  // The steps of add() (reduction_graph.cpp says what each builds).
  std::vector<int32_t> seg_deps(const Ctx& c, const Block& seg) const;
  TileReduceGeometry geom(const Ctx& c, const Block& b) const;
  TileStep load_step(Ctx& c, const Block& seg) const;
  TileStep apply_step(Ctx& c, const Block& seg, int64_t out_elems, bool load_stats) const;
  TaskKind fused_kind(Ctx& c, const Block& seg, int64_t out_elems) const;
  void finish_result(Ctx& c, const ReduceChain& chain, int64_t out_elems, TileStep& st) const;
  void keep_stats(Ctx& c, int64_t out_elems, TileStep& st) const;
  ReductionTasks add_spmd_blocks(Ctx& c);
  TaskKind spmd_part_kind(Ctx& c, const ReductionPlan::Part& part) const;
  void add_chain(Ctx& c, size_t ci, ReductionTasks& out);
  int32_t add_chain_in_task(Ctx& c, const ReduceChain& chain, int64_t out_elems);
  std::vector<int32_t> add_partials(Ctx& c, const ReduceChain& chain, int64_t out_elems,
                                    std::vector<int32_t>& tasks);
  void add_merge_tree(Ctx& c, const ReduceChain& chain, int64_t out_elems,
                      std::vector<int32_t>& holder, std::vector<int32_t>& tasks);
  std::vector<int32_t> add_finals(Ctx& c, const ReduceChain& chain, int64_t out_elems,
                                  const std::vector<int32_t>& holder, std::vector<int32_t>& tasks);
  void add_apply_tasks(Ctx& c, const ReduceChain& chain, int64_t out_elems,
                       const std::vector<int32_t>& finals, std::vector<int32_t>& tasks);

  TaskGraph& g_;
  KindCache& kinds_;
  const Hardware& hw_;
  DType dtype_;
  int buffer_count_;
  int phase_ = 0;  // how many reductions were added before: names their tensors
};

// For a later phase that reads the output of a reduction: the final task of the chain whose
// output block starts at the same origin (same tile grid, reduced dims collapsed).
SegmentDeps deps_by_origin(const ReductionPlan& plan, const ReductionTasks& tasks);
// For a phase reading a 1-D per-row vector: the final tasks of chains whose rows along axis 0
// overlap the segment's rows along axis 0.
SegmentDeps deps_by_rows(const ReductionPlan& plan, const ReductionTasks& tasks);

}  // namespace tilesim
