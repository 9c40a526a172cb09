#pragma once
// What the reducing families' run configs say about merges and partitions: the merge and
// spmd_rows params every reducing family declares, and the partition checks their builders run
// first (their messages name the param and what is allowed).

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

// The merge param every reducing family declares, and its value for a spec.
ParamDecl merge_param();
// spmd_rows: how an spmd launch shares output rows over its blocks (auto, whole, split).
ParamDecl spmd_rows_param();
MergeMode merge_mode_of(const KernelSpec& spec);

}  // namespace tilesim
