#pragma once
// A sweep config: one kernel (the keys of a run config) plus the candidate space to evaluate.
//
//   {
//     "description": "...", "hardware": "ascend910b1",
//     "op": "softmax", "shape": [16, 16384], "dtype": "fp32", "dim": 1, "params": {...},
//     "partition": {"style": "spmd"},             an spmd sweep: the grid comes from the space
//     "candidates": {
//       "tiles": [[1, 8192], [2, 4096]],          explicit tiles (an spmd launch: sub-tiles)
//       "loop_counts": [1, 2, 4],                 explicit loop counts (pypto only)
//       "generate_tiles": {                       generated tiles (cartesian product per dim):
//         "fixed": {"0": 1},                        dims held at one value
//         "max": [16, 16384],                       per-dim upper bound (default: the shape)
//         "last_dim": "aligned"                     "aligned": every multiple of the UB alignment
//       },                                          (32 B / dtype bytes); "pow2": powers of two
//       "generate_loop_counts": {"from": 1, "to": 128, "factor": 2},   log scale (pypto only)
//       "grids": [24, 48, 49],                    spmd: explicit grids
//       "generate_grids": {"from": 1, "to": 192, "factor": 2, "include_cores": true},
//                                                 log scale; include_cores adds, for every
//                                                 multiple m = k * C of the op's core count C
//                                                 (AIV or AIC) in [from, to], m and m + 1 (one
//                                                 full wave more, and one block over it)
//       "blocks": [[64, 4096]],                   spmd: explicit block regions
//       "generate_blocks": {"fixed": {...}, "max": [...]},   per dim powers of two up to the
//                                                 bound (default the shape) and the bound
//       "params": {"l0_tile": [[128, 256, 64], [128, 128, 64]], "swizzle": [[3, 0], [3, 1]]},
//                                                 values of the op's params, every combination
//                                                 (each overrides the kernel's "params" entry)
//       "constraints": {
//         "prune_over_limits": true,      rulebook limits prod(tile), auto_tiles reject (else flag)
//         "allow_tile_over_shape": true,  false: tile[i] > shape[i] is rejected (else flagged)
//         "min_contiguous_bytes": 0,      reject tiles whose contiguous run is shorter
//         "flag_contiguous_bytes": 1024,  the rulebook's "< 1 KB" flag
//         "max_candidates": 100000        a space (or one generated axis) above this is refused
//       },
//       "axis": "auto"                    "loop_count", "grid", "tile:N" (tile dim N) or "auto"
//     },
//     "zones": {"tolerance": 0.02, "evidence_rise": 0.05, "min_wait_share": 0.25,
//               "min_tail_occupancy": 0.5, "max_block_overhead_share": 0.1},
//     "runtime": {"ready_order": "oldest_root_first"}   runtime policies, as in a run config
//     "objective": "gen_time_us"          what ranks: gen_time_us, kernel_time_us or a pipe's
//                                         busy time (tools/formats/sweep_objective.hpp)
//   }
//
// Non-last tile dims are generated as powers of two up to the bound (and the bound itself).
// The tile space is the explicit tiles then the generated ones, or the kernel's "tile" when
// neither is given; the loop space likewise falls back to "loop_count" (default 1), the grid space
// to partition.grid and the block space to "not set". Candidates are every (grid, block, tile,
// loop count, program tiles, params), grid outermost, duplicates removed, in that order. Generated
// spaces stop before a step would pass their bound (never overflowing), and a space larger than
// constraints.max_candidates is refused. Unknown keys and impossible spaces throw tilesim::Error
// naming the file, the key and what is allowed; so do loop counts in an spmd sweep, a grid space
// outside one, and partition.grid together with a grid space.

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/spec/kernel_spec.hpp"
#include "model/hardware.hpp"
#include "sim/simulator.hpp"
#include "tools/formats/sweep_objective.hpp"
#include "tools/formats/zone_options.hpp"

namespace tilesim {

struct TileSpaceSpec {
  bool enabled = false;
  std::map<int, int64_t> fixed;  // dim -> value
  Dims max;                      // per-dim upper bound; empty: the shape
  bool last_dim_pow2 = false;    // false: every multiple of the UB alignment
};

// A log-scale space: from, from * factor, ... up to `to`.
struct LoopSpaceSpec {
  bool enabled = false;
  int64_t from = 1;
  int64_t to = 1;
  int64_t factor = 2;
};

struct GridSpaceSpec {
  LoopSpaceSpec scale;
  bool include_cores = false;  // multiples of the op's core count, and each plus one
};

struct SweepConstraints {
  bool prune_over_limits = true;
  bool allow_tile_over_shape = true;
  int64_t min_contiguous_bytes = 0;
  int64_t flag_contiguous_bytes = 1024;
  int64_t max_candidates = 100000;  // the largest space (and generated axis) a sweep accepts
};

// The axis results are plotted and zoned along.
struct SweepAxis {
  enum class Kind { kAuto, kLoopCount, kTileDim, kGrid } kind = Kind::kAuto;
  int dim = -1;  // kTileDim
};

struct SweepConfig {
  std::filesystem::path path;
  std::string description;
  KernelSpec base;  // tile, loop_count, grid and block are replaced per candidate
  std::filesystem::path hardware;
  std::vector<Dims> tiles;
  std::vector<int64_t> loop_counts;
  TileSpaceSpec generate_tiles;
  LoopSpaceSpec generate_loops;
  std::vector<int64_t> grids;  // spmd; falls back to partition.grid
  GridSpaceSpec generate_grids;
  std::vector<Dims> blocks;  // spmd; empty with no generate_blocks: the block is not set
  TileSpaceSpec generate_blocks;
  // A tile program's other named tiles, each with its shapes: candidates take every combination.
  std::vector<std::pair<std::string, std::vector<Dims>>> program_tiles;
  // A built-in op's params, each with its values (candidates.params): every combination.
  std::vector<std::pair<std::string, std::vector<nlohmann::json>>> param_values;
  // spmd with a block space and no grid anywhere: each block's grid is cdiv(shape, block) per
  // dim, multiplied (Triton's grid = (triton.cdiv(n, BLOCK),)).
  bool grid_from_block = false;
  // ... and with no tile either: each block is walked as one tile (a Triton program whose
  // BLOCK_SIZE is both its region and its tile).
  bool tile_from_block = false;
  SweepConstraints constraints;
  SweepAxis axis;
  ZoneOptions zones;
  SimOptions options;  // the "runtime" policies
  // What ranks, zones and explains the candidates: by default the time a board measures around
  // the kernel (launch to end).
  Objective objective = Objective::kKernelTime;
};

struct Candidate {
  Dims tile;
  int64_t loop_count = 1;
  int64_t grid = 0;          // spmd: blocks launched (0: not an spmd candidate)
  Dims block{};              // spmd: the block region (empty: not set)
  NamedTiles named_tiles{};  // a program's other named tiles (candidates.program_tiles)
  // The op's params this candidate sets (candidates.params), over the kernel's "params".
  nlohmann::json params = nlohmann::json::object();
};

SweepConfig sweep_config_from_json(const nlohmann::json& doc, const std::filesystem::path& origin);
SweepConfig load_sweep_config(const std::filesystem::path& file);

// Generated tile values per dim (needs the hardware's UB alignment); throws on an empty dim.
std::vector<Dims> generate_tile_values(const SweepConfig& cfg, const Hardware& hw);
// Generated grids, ascending (needs the op's core count for include_cores: the first tile of the
// space that lowers tells the core type). Throws over constraints.max_candidates.
std::vector<int64_t> generate_grid_values(const SweepConfig& cfg, const Hardware& hw);
// Every candidate, explicit first, duplicates removed. Throws when the space is empty or larger
// than constraints.max_candidates.
std::vector<Candidate> expand_candidates(const SweepConfig& cfg, const Hardware& hw);
KernelSpec candidate_spec(const SweepConfig& cfg, const Candidate& c);

std::string axis_name(const SweepAxis& axis);
// from, from * factor, ... <= to; stops before a step would pass `to` (never overflows).
std::vector<int64_t> log_scale(int64_t from, int64_t to, int64_t factor);

}  // namespace tilesim
