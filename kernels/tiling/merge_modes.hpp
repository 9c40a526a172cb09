#pragma once
// How a split reduction's partials merge: the merge modes and the order of their merges, which
// the program lowering (kernels/lower/program/split_stage.cpp) and the functional executor
// (kernels/functional/program_functional.cpp) both follow.

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
//  - kAuto (the default) resolves to kAtomic where the statistic allows it, kTree elsewhere.
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

// One merge: partial `b` folds into partial `a` (the result keeps index `a`).
struct MergeStep {
  int a;
  int b;
};
// Merge levels for `n` partials: steps within a level are independent. kTree pairs neighbours;
// kChain, kInTask and kAtomic fold 1, 2, ... into 0 one level at a time.
std::vector<std::vector<MergeStep>> merge_levels(int n, MergeMode mode);

}  // namespace tilesim
