#pragma once
// What an spmd candidate's run says about its launch, in the words an Ascend C / Triton-Ascend
// author tunes by: blocks per core, waves and the tail wave's occupancy, idle cores, sub-tiles per
// block and the block's copy sizes, and the share of core time spent starting blocks. Waves and
// occupancy are read from the simulation (which core ran how many blocks of each launch: a
// multi-launch graph runs its launches one after another, so a wave is counted within a launch),
// overhead from the per-core metrics (busy and waiting for how long), the sub-tiles and copies
// from the lowered graph.

#include <cstdint>
#include <string>
#include <vector>

#include "model/hardware.hpp"
#include "model/task_graph.hpp"
#include "sim/metrics.hpp"
#include "sim/simulator.hpp"

namespace tilesim {

struct SpmdFigures {
  bool valid = false;  // an spmd run was evaluated
  int64_t grid = 0;
  int64_t cores = 0;           // cores of the blocks' type (AIV, or AIC for cube blocks)
  int64_t cores_used = 0;      // cores that ran at least one block
  int64_t waves = 0;           // most blocks any core ran in one launch (ceil(grid / cores))
  int64_t tail_blocks = 0;     // cores that ran `waves` blocks (in the first launch where one
                               // did): the last wave's blocks
  double tail_occupancy = 0;   // tail_blocks / cores (1: every wave full)
  double blocks_per_core = 0;  // grid / cores
  double utilisation = 0;      // sum of busy time over all `cores` / (cores * gen_time)
  double core_time_us = 0;     // sum over cores of busy + Wait Schedule time
  double block_busy_us = 0;    // busy time per block (mean)
  // How long the last wave ran alone: gen_time minus the latest a core that ran fewer than
  // `waves` blocks finished (0 when every core ran `waves` blocks, with one wave, or with several
  // launches, whose per-core totals mix the launches).
  double tail_exposed_us = 0;
  double block_overhead_share = 0;             // Wait Schedule (block starts) / core_time
  int64_t subtiles_min = 0, subtiles_max = 0;  // sub-tile steps per block
  int64_t copy_bytes = 0;     // the smallest sub-tile copy of a block (a step's largest load)
  int64_t burst_bytes = 0;    // its smallest contiguous run
  double block_gm_bytes = 0;  // GM bytes read + written per block (mean)
};

// The figures by name, in the order the CSV columns and the JSON "spmd" object list them: a new
// figure is added here and both writers have it.
struct SpmdField {
  const char* name;
  bool integer;
  double (*get)(const SpmdFigures&);
};
const std::vector<SpmdField>& spmd_fields();

// Figures of an spmd run of `grid` blocks (valid = false when the graph is not an spmd launch).
SpmdFigures spmd_figures(const TaskGraph& graph, const SimResult& sim, const Metrics& m,
                         const Hardware& hw, int64_t grid);

// One line in SPMD terms: "grid 48 on 48 AIV: 1.00 blocks/core, 1 wave, tail wave 48/48 (100%),
// 85-86 sub-tiles/block, copies 16384 B (bursts 16384 B), 2.7 MB GM per block".
std::string spmd_summary(const SpmdFigures& f);

}  // namespace tilesim
