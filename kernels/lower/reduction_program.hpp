#pragma once
// A reducing kernel as a sequence of phases, each a reduction plan with its family. Phase 0 reads
// the kernel's inputs; a later phase reads the previous phase's reduced output. The same program
// is lowered to a task graph (timing) and executed with Eigen (functional proof).

#include <string>
#include <vector>

#include "kernels/lower/reduce_family.hpp"
#include "kernels/lower/reduction_graph.hpp"
#include "kernels/spec/registry.hpp"
#include "kernels/tiling/reduction_plan.hpp"

namespace tilesim {

struct Phase {
  ReductionPlan plan;
  ReduceFamily fam;
  // How this phase's tasks wait for the previous phase: the same tile grid (a chained
  // reduction) or overlapping rows (a per-sample value reduced over the batch).
  // kInBlocks (spmd): the previous phase's blocks do this phase's work, each folding the rows it
  // finished (one segment per block) and adding the result into the output atomically.
  enum class Link { kNone, kByOrigin, kByRows, kInBlocks } link = Link::kNone;
  // Where a later phase's tile comes from, for messages ("params.phase2_tile"); "" = the spec's.
  std::string tile_key;
};

// A phase with its merge mode resolved (kAuto -> kAtomic where the family allows, else kTree).
Phase make_phase(ReductionPlan plan, ReduceFamily fam, Phase::Link link);

struct ReductionProgram {
  std::vector<Phase> phases;
};

// The reducing families' program for `spec` (throws for other ops), its rows shared over blocks
// under spmd.
ReductionProgram describe_reduction_program(const KernelSpec& spec);

// The spmd partition of a described program: its first phase's chains (whole output rows)
// shared over partition.grid blocks that accumulate in UB (plan.blocks); with more blocks than
// rows (or params.spmd_rows = "split"), the (row, sub-tile) units are shared instead, and with
// partition.block the block regions are (kernels/tiling/block_regions.hpp): split rows add up
// atomically in one launch where the statistics allow and nothing follows, else a second launch
// finishes them. A loss's batch mean is folded into the blocks (Phase::Link::kInBlocks). Throws
// naming what is not modelled (other families, chained phases, cross-task merges, loop_count,
// a grid above the units).
void share_over_blocks(ReductionProgram& prog, const KernelSpec& spec);

// What a reducing kernel's run config may ask of its partition: ascendc is refused; spmd_rows
// needs spmd; under spmd one launch (`launches`: the phases that are not folded into the first),
// no loop_count, merge auto or in_task, no phase2_tile where the blocks fold the batch mean
// (`folds_rows`), and partition.block over one reduced dim of the shape as given (not
// `reshaped`: merged dims, or several reduced). Throws naming the param and what is allowed.
void check_reducing_partition(const KernelSpec& spec, size_t launches, bool reshaped,
                              bool folds_rows);

// Builds every phase's tasks; later phases get root functions after the earlier ones'.
void build_program(const ReductionProgram& prog, const KernelSpec& spec, const Hardware& hw,
                   LoweredKernel& out);

// Diagnostics for a reducing kernel: the common figures plus reduction segments of phase 0.
void fill_reduction_diagnostics(const KernelSpec& spec, const Hardware& hw,
                                const ReductionProgram& prog, LoweredKernel& out);

// Lowering of every reducing family: validate the tile, describe the program, build its tasks.
LoweredKernel lower_reducing_kernel(const KernelSpec& spec, const Hardware& hw);

// The merge param every reducing family declares, and its value for a spec.
ParamDecl merge_param();
// spmd_rows: how an spmd launch shares output rows over its blocks (auto, whole, split).
ParamDecl spmd_rows_param();
MergeMode merge_mode_of(const KernelSpec& spec);

}  // namespace tilesim
