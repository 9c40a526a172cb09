#pragma once
// What the reducing families' run configs say about merges and partitions: the merge and
// spmd_rows params every reducing family declares, and the partition checks their builders run
// first (their messages name the param and what is allowed), the merge a spec resolves to, and the
// spec as a builder sees it (its view of shape, tile and reduced dims).

#include <cstddef>

#include "kernels/spec/registry.hpp"
#include "kernels/tiling/merge_modes.hpp"

namespace tilesim {

// What a reducing kernel's run config may ask of its partition: ascendc is refused; spmd_rows
// needs spmd; under spmd one launch (`launches`: the passes that are not folded into the first),
// no loop_count, merge auto or in_task, no phase2_tile where the blocks fold the batch mean
// (`folds_rows`), and partition.block over one reduced dim of the shape as given (not
// `reshaped`: merged dims, or several reduced). Throws naming the param and what is allowed.
void check_reducing_partition(const KernelSpec& spec, size_t launches, bool reshaped,
                              bool folds_rows);

// The merge param every reducing family declares.
ParamDecl merge_param();
// spmd_rows: how an spmd launch shares output rows over its blocks (auto, whole, split).
ParamDecl spmd_rows_param();
// The spec's merge; "auto" is in_task under spmd (a block accumulates in UB), `pypto_auto` else.
MergeMode merge_mode_of(const KernelSpec& spec, MergeMode pypto_auto);
// The spec as a reducing family's builder sees it: `shape`, `tile` and reduced `dims` (the family's
// view of the tensor), its loop axis the spec's or the outermost one not reduced.
KernelSpec reducing_view(const KernelSpec& spec, Dims shape, Dims tile, std::vector<int> dims);

}  // namespace tilesim
