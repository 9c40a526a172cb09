#pragma once
// Evaluating a sweep: every candidate goes through a cheap pre-check, then (if it passes) the
// full model. Timeloop-style, the pre-check runs the model's own checks in order of cost:
//   1. alignment and rank (kernels' validate_tile),
//   2. the rulebook figures from the tile geometry (prod(tile), auto_tiles, contiguous bytes,
//      tile > shape), pruning only what the config's constraints say to prune,
//   3. lowering (lower_kernel: the kernel's own checks and the UB budget of every task kind),
// and only then simulation. A rejected candidate keeps its reason and its class; the sweep counts
// rejections by class. Candidates are independent, so evaluation runs in parallel (oneTBB) and
// the result is identical for any thread count.

#include <atomic>
#include <cstdint>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "kernels/lowering.hpp"
#include "sim/metrics.hpp"
#include "tools/analyses/spmd_figures.hpp"
#include "tools/analyses/zones.hpp"
#include "tools/formats/sweep_config.hpp"

namespace tilesim {

// An evaluated candidate is its run's Metrics record (all zero for a rejected one) plus what the
// sweep knows about it: the figures are never copied into fields of its own.
struct CandidateResult : Metrics {
  size_t index = 0;  // position in the expanded candidate list
  Dims tile;         // an spmd launch: the sub-tile
  int64_t loop_count = 1;
  int64_t grid = 0;        // spmd: blocks launched (0: not spmd)
  Dims block;              // spmd: the block region (empty: not set)
  NamedTiles named_tiles;  // a program's other named tiles (candidates.program_tiles)
  nlohmann::json params = nlohmann::json::object();  // the op's params it sets (candidates.params)
  bool ok = false;
  // Pre-check: alignment, tile_over_shape, limits, contiguous. Lowering: the ErrorKind of its
  // error (capacity: UB, L1 or L0A/B/C overflow; alignment; limits; params; input). Then
  // simulation.
  std::string reject_class;
  std::string reason;

  // Rulebook figures (filled for every candidate whose tile has the shape's rank).
  int64_t contiguous_bytes = 0;
  int64_t prod_tile = 0;
  int64_t auto_tiles = 0;
  std::vector<int> tile_over_shape_dims;
  std::vector<std::string> limit_violations;
  bool under_contiguous = false;           // contiguous_bytes < constraints.flag_contiguous_bytes
  std::vector<std::string> flags() const;  // "under_1kb", "tile_over_shape", "over_limit"

  // From lowering (ok candidates).
  Diagnostics diag;
  SpmdFigures spmd;  // ok spmd candidates: waves, occupancy, sub-tiles and copies per block

  Zone zone = Zone::kNone;
  std::string zone_evidence;
  int series = -1;  // candidates sharing everything but the swept axis
  double axis_value = 0;
};

struct SweepResult {
  std::vector<CandidateResult> candidates;  // in expansion order
  std::vector<size_t> ranking;              // ok candidates, fastest first (ties: index)
  std::optional<size_t> recommended;        // index of the fastest candidate
  std::optional<size_t> runner_up;          // the second in the ranking
  bool tie = false;  // the runner-up is within the zones tolerance of the recommended
  std::string why;   // one line: why the recommendation wins
  std::map<std::string, int64_t> rejected_by_class;
  SweepAxis axis;  // resolved (never kAuto)
  std::string axis_label;
  bool axis_finer_with_larger = true;
  // The grid axis of a block sweep whose grid follows the block (cdiv(shape, block)): a series
  // holds one point per block, the block moving with the grid.
  bool block_follows_grid = false;
};

struct SweepOptions {
  int threads = 0;                           // 0: every core
  std::atomic<int64_t>* progress = nullptr;  // incremented once per finished candidate
  // Checked before each candidate: once set, the sweep stops (SweepCancelled, the workers'
  // remaining candidates cancelled) and returns nothing.
  const std::atomic<bool>* cancel = nullptr;
};

struct SweepCancelled : std::exception {
  const char* what() const noexcept override { return "the sweep was cancelled"; }
};

// Pre-check and (if it passes) simulate one candidate. Never throws for a bad candidate.
CandidateResult evaluate_candidate(const SweepConfig& cfg, const Hardware& hw, const Candidate& c,
                                   size_t index = 0);
// Evaluates `candidates` (or the config's whole space when empty), ranks, zones, recommends:
// evaluate_candidates over every index, then rank_sweep.
SweepResult run_sweep(const SweepConfig& cfg, const Hardware& hw, const SweepOptions& options = {},
                      std::vector<Candidate> candidates = {});
// The candidates at `indices` (positions in `candidates`), evaluated in parallel; the results
// follow `indices`. A shard of a sweep is such a subset (tools/analyses/sweep_shard.hpp).
std::vector<CandidateResult> evaluate_candidates(const SweepConfig& cfg, const Hardware& hw,
                                                 const std::vector<Candidate>& candidates,
                                                 const std::vector<size_t>& indices,
                                                 const SweepOptions& options = {});
// The same into `out` (out.size() == indices.size()), whose memory the caller owns.
void evaluate_candidates(const SweepConfig& cfg, const Hardware& hw,
                         const std::vector<Candidate>& candidates,
                         const std::vector<size_t>& indices, std::span<CandidateResult> out,
                         const SweepOptions& options = {});
// Ranks, zones and recommends once every candidate is evaluated (`results[i]` is candidate i):
// the same result whether the results came from one run or from merged shards.
SweepResult rank_sweep(const SweepConfig& cfg, const std::vector<Candidate>& candidates,
                       std::vector<CandidateResult> results);

// The candidate's value of the sweep's objective (cfg.objective), in us.
double objective_of(const SweepConfig& cfg, const CandidateResult& c);
// `other` is within the zones tolerance of `best`'s objective: a tie, not a difference.
bool ties(const SweepConfig& cfg, const CandidateResult& best, const CandidateResult& other);

// "tile (1, 8192) loop 1", or for an spmd candidate "grid 48 sub-tile (1, 4096)" (and its block
// when set): how reports name a candidate.
std::string candidate_label(const CandidateResult& c);
// "col (8, 64), out (1, 512)": a candidate's other named tiles.
std::string named_tiles_text(const NamedTiles& tiles);
// "l0_tile [128, 256, 64], swizzle [3, 0]": a candidate's params (candidates.params), "" without.
std::string params_text(const nlohmann::json& params);

// Picks the axis for kAuto: the grid when it varies, else the loop count when it varies, else the
// tile dim whose series are longest (the first reduction dim on a tie); with nothing varying, the
// reduction dim's tile, else the loop count (pypto) or the grid (spmd).
SweepAxis resolve_axis(const SweepConfig& cfg, const std::vector<Candidate>& candidates);

}  // namespace tilesim
