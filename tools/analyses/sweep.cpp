#include "tools/analyses/sweep.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "kernels/lower/diagnostics.hpp"
#include "kernels/tiling/tile_rules.hpp"
#include "model/error.hpp"
#include "model/stop.hpp"
#include "model/tile_geometry.hpp"
#include "sim/simulator.hpp"
#include "tools/analyses/parallel_indices.hpp"

namespace tilesim {

std::vector<std::string> CandidateResult::flags() const {
  std::vector<std::string> f;
  if (under_contiguous) f.push_back("under_1kb");
  if (!tile_over_shape_dims.empty()) f.push_back("tile_over_shape");
  if (!limit_violations.empty()) f.push_back("over_limit");
  return f;
}

namespace {

void reject(CandidateResult& r, std::string cls, std::string reason) {
  r.ok = false;
  r.reject_class = std::move(cls);
  r.reason = std::move(reason);
}

}  // namespace

std::string named_tiles_text(const NamedTiles& tiles) {
  std::string s;
  for (const auto& [name, dims] : tiles)
    s += fmt::format("{}{} {}", s.empty() ? "" : ", ", name, format_dims(dims));
  return s;
}

namespace {

// [128, 256, 64] as the tiles print; other values as JSON ("strided").
std::string param_value_text(const nlohmann::json& v) {
  if (!v.is_array()) return v.dump();
  std::vector<std::string> items;
  for (const auto& e : v) items.push_back(param_value_text(e));
  return fmt::format("[{}]", fmt::join(items, ", "));
}

}  // namespace

std::string params_text(const nlohmann::json& params) {
  std::string s;
  for (const auto& [name, value] : params.items())
    s += fmt::format("{}{} {}", s.empty() ? "" : ", ", name, param_value_text(value));
  return s;
}

std::string candidate_label(const CandidateResult& c) {
  std::string named = c.named_tiles.empty() ? "" : ", " + named_tiles_text(c.named_tiles);
  if (!c.params.empty()) named += ", " + params_text(c.params);
  if (c.grid == 0)
    return fmt::format("tile {} loop {}{}", format_dims(c.tile), c.loop_count, named);
  std::string s = fmt::format("grid {} sub-tile {}", c.grid, format_dims(c.tile));
  if (!c.block.empty()) s += " block " + format_dims(c.block);
  return s + named;
}

CandidateResult evaluate_candidate(const SweepConfig& cfg, const Hardware& hw, const Candidate& c,
                                   size_t index) {
  CandidateResult r;
  r.index = index;
  r.tile = c.tile;
  r.loop_count = c.loop_count;
  r.grid = c.grid;
  r.block = c.block;
  r.named_tiles = c.named_tiles;
  r.params = c.params;
  const KernelSpec spec = candidate_spec(cfg, c);
  const auto& k = cfg.constraints;
  // 1. Rank and alignment: the kernels' own validation.
  try {
    validate_tile(spec, hw);
  } catch (const Error& e) {
    reject(r, "alignment", e.what());
    if (spec.tile.size() != spec.shape.size()) return r;
  }
  // 2. Rulebook figures from the tile geometry (the same functions the lowering reports with).
  RuleFigures f = rule_figures(spec, hw);
  r.contiguous_bytes = f.contiguous_bytes;
  r.prod_tile = f.prod_tile;
  r.auto_tiles = f.auto_tiles;
  r.tile_over_shape_dims = std::move(f.tile_exceeds_shape);
  r.limit_violations = std::move(f.limit_violations);
  r.under_contiguous = r.contiguous_bytes < k.flag_contiguous_bytes;
  if (!r.reject_class.empty()) return r;
  if (!k.allow_tile_over_shape && !r.tile_over_shape_dims.empty()) {
    reject(r, "tile_over_shape",
           fmt::format("tile {} exceeds shape {} in dim(s) {} (constraints.allow_tile_over_shape "
                       "is false)",
                       format_dims(spec.tile), format_dims(spec.shape),
                       fmt::join(r.tile_over_shape_dims, ", ")));
    return r;
  }
  if (k.prune_over_limits && !r.limit_violations.empty()) {
    reject(r, "limits", fmt::format("{}", fmt::join(r.limit_violations, "; ")));
    return r;
  }
  if (r.contiguous_bytes < k.min_contiguous_bytes) {
    reject(r, "contiguous",
           fmt::format("contiguous {} B < constraints.min_contiguous_bytes = {}",
                       r.contiguous_bytes, k.min_contiguous_bytes));
    return r;
  }
  // 3. Lowering: the kernel's own checks and the UB budget of every task kind.
  LoweredKernel lowered;
  try {
    lowered = lower_kernel(spec, hw);
  } catch (const Error& e) {
    // Filed by the kind the error carries where it was thrown, never by its text: capacity (a
    // buffer does not fit UB, L1 or L0A/B/C), alignment, limits, params or input.
    reject(r, std::string(error_kind_name(e.kind())), e.what());
    return r;
  }
  r.diag = lowered.diag;
  // 4. Simulation.
  try {
    const SimResult sim = simulate(lowered.graph, hw, cfg.options);
    static_cast<Metrics&>(r) = compute_metrics(lowered.graph, sim, hw);
    if (spec.partition == PartitionStyle::kSpmd)
      r.spmd = spmd_figures(lowered.graph, sim, r, hw, spec.grid);
  } catch (const Error& e) {
    reject(r, "simulation", e.what());
    return r;
  }
  r.ok = true;
  return r;
}

double objective_of(const SweepConfig& cfg, const CandidateResult& c) {
  return objective_us(c, cfg.objective);
}

bool ties(const SweepConfig& cfg, const CandidateResult& best, const CandidateResult& other) {
  return objective_of(cfg, other) <= objective_of(cfg, best) * (1.0 + cfg.zones.tolerance);
}

SweepAxis resolve_axis(const SweepConfig& cfg, const std::vector<Candidate>& candidates) {
  if (cfg.axis.kind != SweepAxis::Kind::kAuto) return cfg.axis;
  std::set<int64_t> loops, grids;
  for (const auto& c : candidates) loops.insert(c.loop_count), grids.insert(c.grid);
  SweepAxis a;
  if (grids.size() > 1) {
    a.kind = SweepAxis::Kind::kGrid;
    return a;
  }
  a.kind = SweepAxis::Kind::kLoopCount;
  if (loops.size() > 1 || candidates.empty()) return a;
  const size_t rank = cfg.base.shape.size();
  size_t best_len = 1;  // a dim must have a series of at least two points
  bool best_reduction = false;
  for (size_t d = 0; d < rank; ++d) {
    std::map<Dims, size_t> series;
    for (const auto& c : candidates) {
      if (c.tile.size() != rank) continue;
      Dims key = c.tile;
      key[d] = 0;
      ++series[key];
    }
    size_t len = 0;
    for (const auto& [key, n] : series) len = std::max(len, n);
    const bool reduction = std::find(cfg.base.dims.begin(), cfg.base.dims.end(),
                                     static_cast<int>(d)) != cfg.base.dims.end();
    if (len > best_len || (len == best_len && len > 1 && reduction && !best_reduction)) {
      best_len = len;
      best_reduction = reduction;
      a.kind = SweepAxis::Kind::kTileDim;
      a.dim = static_cast<int>(d);
    }
  }
  if (a.kind == SweepAxis::Kind::kLoopCount && !cfg.base.dims.empty()) {
    // Nothing varies: report along the reduction axis tile.
    a.kind = SweepAxis::Kind::kTileDim;
    a.dim = cfg.base.dims.front();
  }
  // An spmd launch has no loop count: with nothing varying, its axis is the grid.
  if (a.kind == SweepAxis::Kind::kLoopCount && cfg.base.partition == PartitionStyle::kSpmd)
    a.kind = SweepAxis::Kind::kGrid;
  return a;
}

namespace {

// The per-core figures a slower point's zone evidence picks from, named by their mechanism.
std::vector<std::pair<std::string, double>> per_core_figures(const CandidateResult& c) {
  return {{"MTE2 busy/core (copies in)", pipe_mean_us(c, "MTE2")},
          {"V busy/core (vector work)", pipe_mean_us(c, "V")},
          {"CUBE busy/core (cube work)", pipe_mean_us(c, "CUBE")},
          {"MTE1 busy/core (L1 to L0 loads)", pipe_mean_us(c, "MTE1")},
          {"MTE3 busy/core (copies out)", pipe_mean_us(c, "MTE3")},
          {"wait_predecessor/core", mean_per_core(c, &CoreMetrics::wait_predecessor_time_us)}};
}

void assign_zones(const SweepConfig& cfg, SweepResult& res) {
  const bool loop_axis = res.axis.kind == SweepAxis::Kind::kLoopCount;
  const bool grid_axis = res.axis.kind == SweepAxis::Kind::kGrid;
  const bool spmd = cfg.base.partition == PartitionStyle::kSpmd;
  // More loops or more blocks: finer; a larger tile: coarser.
  res.axis_finer_with_larger = loop_axis || grid_axis;
  if (loop_axis || grid_axis) {
    res.axis_label = loop_axis ? "loop_count" : "grid";
  } else {
    const bool reduction =
        std::find(cfg.base.dims.begin(), cfg.base.dims.end(), res.axis.dim) != cfg.base.dims.end();
    res.axis_label = fmt::format("{}[{}]{}", spmd ? "sub-tile" : "tile", res.axis.dim,
                                 reduction ? " (reduction axis)" : "");
  }
  // A series: candidates equal in everything but the swept axis (zeroed in the key).
  // loop count, grid, block, tile, the program's other named tiles, the params
  using Key = std::tuple<int64_t, int64_t, Dims, Dims, NamedTiles, nlohmann::json>;
  // A grid derived from the block (a Triton block sweep: grid = cdiv(shape, block), and the
  // block is the tile when no tile is given) moves with it: the grid axis zeroes both, unless
  // two blocks of one series give the same grid (then each block is its own series, as when
  // the grid is swept for each block).
  auto key_of = [&](const CandidateResult& c, bool with_block) {
    Key key{c.loop_count, c.grid, c.block, c.tile, c.named_tiles, c.params};
    if (loop_axis) {
      std::get<0>(key) = 0;
    } else if (grid_axis) {
      std::get<1>(key) = 0;
      if (!with_block) std::get<2>(key).clear();
      if (!with_block && cfg.tile_from_block) std::get<3>(key).clear();
    } else {
      std::get<3>(key)[static_cast<size_t>(res.axis.dim)] = 0;
    }
    return key;
  };
  std::map<Key, std::set<int64_t>> grids_without_block;
  bool& follows = res.block_follows_grid;
  follows = grid_axis && cfg.grid_from_block;
  for (const auto& c : res.candidates)
    if (c.ok && follows) follows = grids_without_block[key_of(c, false)].insert(c.grid).second;
  std::map<Key, int> ids;
  std::vector<std::vector<size_t>> series;
  for (auto& c : res.candidates) {
    if (!c.ok) continue;
    c.axis_value = static_cast<double>(
        loop_axis ? c.loop_count
                  : (grid_axis ? c.grid : c.tile[static_cast<size_t>(res.axis.dim)]));
    auto [it, added] = ids.emplace(key_of(c, !follows), static_cast<int>(series.size()));
    if (added) series.emplace_back();
    c.series = it->second;
    series[static_cast<size_t>(it->second)].push_back(c.index);
  }
  const Granularity dir = res.axis_finer_with_larger ? Granularity::kFinerWithLargerX
                                                     : Granularity::kCoarserWithLargerX;
  for (const auto& members : series) {
    if (spmd) {
      std::vector<SpmdZonePoint> pts;
      for (size_t i : members) {
        const auto& c = res.candidates[i];
        const int64_t flag = cfg.constraints.flag_contiguous_bytes;
        pts.push_back({c.axis_value, objective_of(cfg, c), c.spmd, c.spmd.burst_bytes < flag, flag,
                       per_core_figures(c)});
      }
      const auto verdicts = classify_spmd_zones(pts, dir, cfg.zones);
      for (size_t j = 0; j < members.size(); ++j) {
        auto& c = res.candidates[members[j]];
        c.zone = verdicts[j].zone;
        c.zone_evidence = verdicts[j].evidence;
      }
      continue;
    }
    std::vector<ZonePoint> pts;
    for (size_t i : members) {
      const auto& c = res.candidates[i];
      // kernel_time_us counts the root builds before the first task; gen_time_us does not.
      const bool head = cfg.objective == Objective::kKernelTime;
      pts.push_back({c.axis_value, objective_of(cfg, c),
                     mean_per_core(c, &CoreMetrics::wait_schedule_time_us), mean_tasks_per_core(c),
                     c.psg, head ? c.root_build_us : 0.0,
                     std::max(0.0, c.aicpu_build_us - c.root_build_us), c.aicpu_schedule_us,
                     c.gen_time_us, c.root_functions, per_core_figures(c)});
    }
    const auto verdicts = classify_zones(pts, dir, cfg.zones);
    for (size_t j = 0; j < members.size(); ++j) {
      auto& c = res.candidates[members[j]];
      c.zone = verdicts[j].zone;
      c.zone_evidence = verdicts[j].evidence;
    }
  }
  // The fastest candidate is the sweet spot of its own axis, even when nothing shares its series.
  if (res.recommended) {
    auto& b = res.candidates[*res.recommended];
    if (b.zone == Zone::kNone) {
      b.zone = Zone::kSweetSpot;
      b.zone_evidence = fmt::format("fastest of all ({:.3f} us); no other point on its axis",
                                    objective_of(cfg, b));
    }
  }
}

std::string explain(const SweepConfig& cfg, const SweepResult& res) {
  if (!res.recommended) return "no candidate passed the pre-check";
  const auto& b = res.candidates[*res.recommended];
  // The default objective's times read "12.3 us"; another names itself ("12.3 us kernel_time_us").
  const std::string unit = cfg.objective == Objective::kGenTime
                               ? "us"
                               : fmt::format("us {}", objective_info(cfg.objective).name);
  const double tb = objective_of(cfg, b);
  std::string s = fmt::format("{}: {:.3f} {}", candidate_label(b), tb, unit);
  // An spmd winner is explained in launch terms: blocks per core, waves, the tail wave,
  // sub-tiles and copies per block.
  const std::string launch = b.spmd.valid ? "; " + spmd_summary(b.spmd) : "";
  if (!res.runner_up) return s + ", the only candidate that passed the pre-check" + launch;
  const auto& r = res.candidates[*res.runner_up];
  const double tr = objective_of(cfg, r);
  if (res.tie)
    s += fmt::format(", a tie with {} ({:.3f} {}, within the {:.1f}% zones tolerance)",
                     candidate_label(r), tr, unit, cfg.zones.tolerance * 100.0);
  else
    s += fmt::format(", {:.1f}% less time than {} ({:.3f} {})", (1.0 - tb / tr) * 100.0,
                     candidate_label(r), tr, unit);
  struct Term {
    const char* what;
    double best, other;
  };
  auto wait = [](const CandidateResult& c, double CoreMetrics::*f) { return mean_per_core(c, f); };
  const Term terms[] = {
      {"MTE2 busy per core", pipe_mean_us(b, "MTE2"), pipe_mean_us(r, "MTE2")},
      {"V busy per core", pipe_mean_us(b, "V"), pipe_mean_us(r, "V")},
      {"CUBE busy per core", pipe_mean_us(b, "CUBE"), pipe_mean_us(r, "CUBE")},
      {"MTE3 busy per core", pipe_mean_us(b, "MTE3"), pipe_mean_us(r, "MTE3")},
      {"Wait Schedule per core", wait(b, &CoreMetrics::wait_schedule_time_us),
       wait(r, &CoreMetrics::wait_schedule_time_us)},
      {"Wait Predecessor per core", wait(b, &CoreMetrics::wait_predecessor_time_us),
       wait(r, &CoreMetrics::wait_predecessor_time_us)},
      {"head (builds and the first dispatch)", b.handshake_us + b.head_us,
       r.handshake_us + r.head_us},
      {"release after the last task (the runtime stopping its cores)", b.completion_us,
       r.completion_us}};
  // Only a term that differs by more than noise (the zones' evidence thresholds) explains a win.
  auto above_noise = [&](const Term& t) {
    return t.other > t.best * (1.0 + cfg.zones.evidence_rise) &&
           t.other - t.best > cfg.zones.min_abs_rise_us;
  };
  const Term* lead = nullptr;
  for (const auto& t : terms)
    if (above_noise(t) && (!lead || t.other - t.best > lead->other - lead->best)) lead = &t;
  if (lead)
    s += fmt::format("{} less {} ({:.3f} vs {:.3f} us)", res.tie ? "; it has" : ":", lead->what,
                     lead->best, lead->other);
  s += launch;
  if (b.zone == Zone::kSweetSpot) s += "; sweet spot of its axis";
  const auto f = b.flags();
  if (!f.empty()) s += fmt::format("; flags: {}", fmt::join(f, ", "));
  return s;
}

}  // namespace

SweepResult run_sweep(const SweepConfig& cfg, const Hardware& hw, const SweepOptions& options,
                      std::vector<Candidate> candidates) {
  if (candidates.empty()) candidates = expand_candidates(cfg, hw);
  std::vector<size_t> all(candidates.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  return rank_sweep(cfg, candidates, evaluate_candidates(cfg, hw, candidates, all, options));
}

std::vector<CandidateResult> evaluate_candidates(const SweepConfig& cfg, const Hardware& hw,
                                                 const std::vector<Candidate>& candidates,
                                                 const std::vector<size_t>& indices,
                                                 const SweepOptions& options) {
  std::vector<CandidateResult> results(indices.size());
  evaluate_candidates(cfg, hw, candidates, indices, results, options);
  return results;
}

void evaluate_candidates(const SweepConfig& cfg, const Hardware& hw,
                         const std::vector<Candidate>& candidates,
                         const std::vector<size_t>& indices, std::span<CandidateResult> results,
                         const SweepOptions& options) {
  if (results.size() != indices.size())
    throw InternalError("evaluate_candidates: " + std::to_string(results.size()) +
                        " result slots for " + std::to_string(indices.size()) + " candidates");
  parallel_indices(indices.size(), options.threads, [&](size_t j) {
    // An exception leaving a worker cancels the TBB loop's remaining candidates.
    if (options.cancel && options.cancel->load(std::memory_order_relaxed)) throw SweepCancelled();
    const StopWhen stop(options.cancel);  // and a running candidate's lowering and simulation
    try {
      results[j] = evaluate_candidate(cfg, hw, candidates.at(indices[j]), indices[j]);
    } catch (const Stopped&) {
      throw SweepCancelled();
    }
    if (options.progress) options.progress->fetch_add(1, std::memory_order_relaxed);
  });
}

namespace {

// An objective that is 0 for every evaluated candidate (cube_us of a vector-only kernel) ranks
// nothing: the first listed would win a tie of zeros.
void refuse_an_objective_zero_everywhere(const SweepConfig& cfg, const SweepResult& res) {
  if (res.ranking.empty() ||
      objective_of(cfg, res.candidates[res.ranking.back()]) != 0.0)  // the largest
    return;
  const std::string name(objective_info(cfg.objective).name);
  throw Error(
      fmt::format("{}: objective {} is 0 for every candidate ({} evaluated): the kernel has "
                  "no {} work to rank by; pick another objective (--objective)",
                  cfg.path.empty() ? "the sweep" : cfg.path.string(), name, res.ranking.size(),
                  name.substr(0, name.rfind("_us"))));
}

}  // namespace

SweepResult rank_sweep(const SweepConfig& cfg, const std::vector<Candidate>& candidates,
                       std::vector<CandidateResult> results) {
  if (results.size() != candidates.size())
    throw InternalError(
        fmt::format("rank_sweep: {} results for {} candidates", results.size(), candidates.size()));
  for (size_t i = 0; i < results.size(); ++i)
    if (results[i].index != i)
      throw InternalError(
          fmt::format("rank_sweep: result {} is candidate {}", i, results[i].index));
  SweepResult res;
  res.candidates = std::move(results);
  for (const auto& c : res.candidates) {
    if (c.ok)
      res.ranking.push_back(c.index);
    else
      ++res.rejected_by_class[c.reject_class];
  }
  std::stable_sort(res.ranking.begin(), res.ranking.end(), [&](size_t a, size_t b) {
    return objective_of(cfg, res.candidates[a]) < objective_of(cfg, res.candidates[b]);
  });
  if (!res.ranking.empty()) res.recommended = res.ranking.front();
  refuse_an_objective_zero_everywhere(cfg, res);
  if (res.ranking.size() > 1) {
    res.runner_up = res.ranking[1];
    res.tie = ties(cfg, res.candidates[*res.recommended], res.candidates[*res.runner_up]);
  }
  res.axis = resolve_axis(cfg, candidates);
  assign_zones(cfg, res);
  res.why = explain(cfg, res);
  return res;
}

}  // namespace tilesim
