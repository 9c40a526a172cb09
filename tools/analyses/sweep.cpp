#include "tools/analyses/sweep.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "kernels/lowering_support.hpp"
#include "model/error.hpp"
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

void reject(CandidateResult& r, const char* cls, std::string reason) {
  r.ok = false;
  r.reject_class = cls;
  r.reason = std::move(reason);
}

void summarize(CandidateResult& r, const Metrics& m) {
  r.gen_time_us = m.gen_time_us;
  r.kernel_time_us = m.kernel_time_us;
  r.tasks = m.tasks;
  r.edges = m.edges;
  r.root_functions = m.root_functions;
  r.achieved_gm_gbps = m.achieved_gm_gbps;
  r.psg = m.psg;
  r.pipes = m.pipes;
  r.mte2_us = pipe_mean_us(m, "MTE2");
  r.vec_us = pipe_mean_us(m, "V");
  r.cube_us = pipe_mean_us(m, "CUBE");
  r.mte3_us = pipe_mean_us(m, "MTE3");
  if (!m.per_core.empty()) {
    double ws = 0, wp = 0, tasks = 0, work = 0;
    for (const auto& c : m.per_core) {
      ws += c.wait_schedule_time_us;
      wp += c.wait_predecessor_time_us;
      tasks += static_cast<double>(c.execute_task_num);
      work += c.core_total_work_time_us;
    }
    const auto n = static_cast<double>(m.per_core.size());
    r.wait_schedule_us = ws / n;
    r.wait_predecessor_us = wp / n;
    r.tasks_per_core = tasks / n;
    r.work_us = work / n;
  }
}

std::string dims_text(const Dims& d) {
  return format_dims(d);
}

}  // namespace

CandidateResult evaluate_candidate(const SweepConfig& cfg, const Hardware& hw, const Candidate& c,
                                   size_t index) {
  CandidateResult r;
  r.index = index;
  r.tile = c.tile;
  r.loop_count = c.loop_count;
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
                       dims_text(spec.tile), dims_text(spec.shape),
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
    const std::string msg = e.what();
    reject(r, msg.find("UB overflow") != std::string::npos ? "ub_overflow" : "lowering", msg);
    return r;
  }
  r.diag = lowered.diag;
  // 4. Simulation.
  try {
    const SimResult sim = simulate(lowered.graph, hw, cfg.options);
    summarize(r, compute_metrics(lowered.graph, sim, hw));
  } catch (const Error& e) {
    reject(r, "simulation", e.what());
    return r;
  }
  r.ok = true;
  return r;
}

SweepAxis resolve_axis(const SweepConfig& cfg, const std::vector<Candidate>& candidates) {
  if (cfg.axis.kind != SweepAxis::Kind::kAuto) return cfg.axis;
  std::set<int64_t> loops;
  for (const auto& c : candidates) loops.insert(c.loop_count);
  SweepAxis a;
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
  return a;
}

namespace {

void assign_zones(const SweepConfig& cfg, SweepResult& res) {
  const bool loop_axis = res.axis.kind == SweepAxis::Kind::kLoopCount;
  res.axis_finer_with_larger = loop_axis;
  if (loop_axis) {
    res.axis_label = "loop_count";
  } else {
    const bool reduction =
        std::find(cfg.base.dims.begin(), cfg.base.dims.end(), res.axis.dim) != cfg.base.dims.end();
    res.axis_label = fmt::format("tile[{}]{}", res.axis.dim, reduction ? " (reduction axis)" : "");
  }
  std::map<std::pair<int64_t, Dims>, int> ids;
  std::vector<std::vector<size_t>> series;
  for (auto& c : res.candidates) {
    if (!c.ok) continue;
    std::pair<int64_t, Dims> key;
    if (loop_axis) {
      key = {0, c.tile};
      c.axis_value = static_cast<double>(c.loop_count);
    } else {
      key = {c.loop_count, c.tile};
      key.second[static_cast<size_t>(res.axis.dim)] = 0;
      c.axis_value = static_cast<double>(c.tile[static_cast<size_t>(res.axis.dim)]);
    }
    auto [it, added] = ids.emplace(key, static_cast<int>(series.size()));
    if (added) series.emplace_back();
    c.series = it->second;
    series[static_cast<size_t>(it->second)].push_back(c.index);
  }
  const Granularity dir =
      loop_axis ? Granularity::kFinerWithLargerX : Granularity::kCoarserWithLargerX;
  for (const auto& members : series) {
    std::vector<ZonePoint> pts;
    for (size_t i : members) {
      const auto& c = res.candidates[i];
      pts.push_back({c.axis_value, c.gen_time_us, c.wait_schedule_us, c.tasks_per_core, c.psg});
    }
    const auto verdicts = classify_zones(pts, dir, cfg.zones);
    for (size_t j = 0; j < members.size(); ++j) {
      auto& c = res.candidates[members[j]];
      c.zone = verdicts[j].zone;
      c.zone_evidence = verdicts[j].evidence;
    }
  }
}

std::string explain(const SweepResult& res) {
  if (!res.recommended) return "no candidate passed the pre-check";
  const auto& b = res.candidates[*res.recommended];
  std::string s =
      fmt::format("tile {} loop {}: {:.3f} us", dims_text(b.tile), b.loop_count, b.gen_time_us);
  if (res.ranking.size() < 2) return s + ", the only candidate that passed the pre-check";
  const auto& r = res.candidates[res.ranking[1]];
  s += fmt::format(", {:.1f}% faster than tile {} loop {} ({:.3f} us)",
                   (r.gen_time_us / b.gen_time_us - 1.0) * 100.0, dims_text(r.tile), r.loop_count,
                   r.gen_time_us);
  struct Term {
    const char* what;
    double best, other;
  };
  const Term terms[] = {
      {"MTE2 busy per core", b.mte2_us, r.mte2_us},
      {"V busy per core", b.vec_us, r.vec_us},
      {"CUBE busy per core", b.cube_us, r.cube_us},
      {"MTE3 busy per core", b.mte3_us, r.mte3_us},
      {"Wait Schedule per core", b.wait_schedule_us, r.wait_schedule_us},
      {"Wait Predecessor per core", b.wait_predecessor_us, r.wait_predecessor_us}};
  const Term* lead = nullptr;
  for (const auto& t : terms)
    if (t.other - t.best > 0 && (!lead || t.other - t.best > lead->other - lead->best)) lead = &t;
  if (lead)
    s += fmt::format(": less {} ({:.3f} vs {:.3f} us)", lead->what, lead->best, lead->other);
  if (b.zone == Zone::kSweetSpot) s += "; sweet spot of its axis";
  const auto f = b.flags();
  if (!f.empty()) s += fmt::format("; flags: {}", fmt::join(f, ", "));
  return s;
}

}  // namespace

SweepResult run_sweep(const SweepConfig& cfg, const Hardware& hw, const SweepOptions& options,
                      std::vector<Candidate> candidates) {
  if (candidates.empty()) candidates = expand_candidates(cfg, hw);
  SweepResult res;
  res.candidates.resize(candidates.size());
  parallel_indices(candidates.size(), options.threads, [&](size_t i) {
    res.candidates[i] = evaluate_candidate(cfg, hw, candidates[i], i);
    if (options.progress) options.progress->fetch_add(1, std::memory_order_relaxed);
  });
  for (const auto& c : res.candidates) {
    if (c.ok)
      res.ranking.push_back(c.index);
    else
      ++res.rejected_by_class[c.reject_class];
  }
  std::stable_sort(res.ranking.begin(), res.ranking.end(), [&](size_t a, size_t b) {
    return res.candidates[a].gen_time_us < res.candidates[b].gen_time_us;
  });
  if (!res.ranking.empty()) res.recommended = res.ranking.front();
  res.axis = resolve_axis(cfg, candidates);
  assign_zones(cfg, res);
  res.why = explain(res);
  return res;
}

}  // namespace tilesim
