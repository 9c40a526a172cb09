#pragma once
// The tiling plan of a reduction: which tiles feed which output block, in which loop chunk, and in
// which order their partial results merge. Both the task-graph builder and the functional
// executor (kernels/functional/functional.hpp) walk the same plan, so the proof that the numbers
// come out right is a proof about the graph that gets timed.

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/tiling/block_regions.hpp"
#include "kernels/tiling/tile_rules.hpp"
#include "model/enum_names.hpp"

namespace tilesim {

// How partials of one output block merge:
//  - kInTask: one task walks the block's segments and accumulates in UB (a chain inside a task);
//  - kChain: one task per segment, each folding its partial into the running result (in GM) after
//    the previous one;
//  - kTree: one task per segment writes its partial; merge tasks combine them pairwise, level by
//    level (ceil(log2(segments)) levels);
//  - kAtomic: one task per segment accumulates its partial into GM with an atomic DMA write
//    (sum, max and min statistics only); no merge tasks, the output is assumed initialised
//    before the kernel, as Ascend C kernels do.
//  - kAuto (the default) resolves to kAtomic where the family allows it, kTree elsewhere.
enum class MergeMode { kInTask, kChain, kTree, kAtomic, kAuto };
inline constexpr std::array<EnumName<MergeMode>, 5> kMergeModeNames = {
    {{MergeMode::kAuto, "auto"},
     {MergeMode::kInTask, "in_task"},
     {MergeMode::kChain, "chain"},
     {MergeMode::kTree, "tree"},
     {MergeMode::kAtomic, "atomic"}}};
MergeMode parse_merge_mode(
    const std::string& text);  // "in_task", "chain", "tree", "atomic", "auto"
const char* merge_mode_name(MergeMode m);

// One output block and the tiles (segments) whose partials it needs, in reduction order.
struct ReduceChain {
  int32_t root = 0;  // loop chunk
  Block out;         // in the input's coordinates, reduced dims collapsed to origin 0, extent 1
  std::vector<Block> segments;
};

struct ReductionPlan {
  Dims shape;
  Dims tile;
  std::vector<int> dims;  // reduced dims, ascending
  int loop_axis = 0;
  MergeMode merge = MergeMode::kTree;
  // spmd: `grid` blocks (0: not spmd, one task set per chain), each one task walking its parts
  // in order and accumulating each part's segments in UB (merge kInTask). A part that is not a
  // whole chain (a row split across blocks) adds its partial into GM atomically, or leaves it
  // for a second launch (second_launch). `blocks` is the one record of which parts each block
  // holds; block_row_parts and splits_rows derive from it.
  int64_t grid = 0;
  using Part = ChainRun;  // segments [s0, s1) of the chain
  std::vector<std::vector<Part>> blocks;
  // spmd, a row split across blocks (splits_rows) whose partials cannot finish in GM by atomic
  // accumulation (a second pass re-reads the input, the statistics do not add, or a loss folds
  // its finished rows): launch 0 leaves each row part's statistics in GM, launch 1 combines and
  // finishes them (block_row_parts).
  bool second_launch = false;
  std::vector<Chunk> chunks;
  std::vector<ReduceChain> chains;
  int64_t segments_per_chain() const {
    return chains.empty() ? 0 : static_cast<int64_t>(chains[0].segments.size());
  }
};

// spmd: true when some block's part is not a whole chain (a row split across blocks).
bool splits_rows(const ReductionPlan& plan);
// spmd: a run of sub-tiles [s0, s1) of chain `chain` that one block holds; `index` counts the
// parts of the same row in earlier blocks, `parts` all of them (1: a whole row).
struct RowPart {
  int64_t chain = 0;
  int64_t s0 = 0, s1 = 0;
  int64_t index = 0, parts = 1;
};
// The row parts of each block of plan.blocks, in order (one scan of plan.blocks).
std::vector<std::vector<RowPart>> block_row_parts(const ReductionPlan& plan);

bool is_reduced(const std::vector<int>& dims, size_t d);
// Cuts `loop_axis` into loop_count chunks and groups each chunk's tiles by output block.
ReductionPlan plan_reduction(const Dims& shape, const Dims& tile, std::vector<int> dims,
                             int loop_axis, int64_t loop_count, MergeMode merge,
                             const std::string& op);

// spmd with explicit block regions: re-cuts the plan's chains by the two-level cut (one reduced
// dim; chains are the non-reduced sub-tile pieces in row-major order, segments the reduced ones)
// and returns each region's parts, in region order.
std::vector<std::vector<ReductionPlan::Part>> cut_block_regions(ReductionPlan& plan,
                                                                const Dims& block);

// One merge: partial `b` folds into partial `a` (the result keeps index `a`).
struct MergeStep {
  int a;
  int b;
};
// Merge levels for `n` partials: steps within a level are independent. kTree pairs neighbours;
// kChain, kInTask and kAtomic fold 1, 2, ... into 0 one level at a time.
std::vector<std::vector<MergeStep>> merge_levels(int n, MergeMode mode);

}  // namespace tilesim
