#include "tools/formats/sweep_config.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <set>

#include "model/error.hpp"
#include "model/tile_geometry.hpp"
#include "tools/formats/run_config.hpp"

namespace tilesim {

namespace {

// A tile dim named by text ("1", "-1") in a rank-`rank` shape, normalised to 0..rank-1.
std::optional<int> dim_of(const std::string& key, size_t rank) {
  const auto n = static_cast<int64_t>(rank);
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(key, &used);
  } catch (...) {
    used = 0;
  }
  if (used == 0 || used != key.size() || v < -n || v >= n) return std::nullopt;
  return static_cast<int>(v < 0 ? v + n : v);
}

std::string dims_allowed(size_t rank) {
  const auto n = static_cast<int64_t>(rank);
  return fmt::format("a rank-{} shape (allowed {}..{})", n, -n, n - 1);
}

SweepAxis parse_axis(const JsonReader& r, size_t rank) {
  const char* allowed = "allowed: \"auto\", \"loop_count\" or \"tile:N\"";
  if (!r.json().is_string()) r.fail(fmt::format("expected a string ({})", allowed));
  const std::string s = r.string();
  SweepAxis a;
  if (s == "auto") return a;
  if (s == "loop_count") {
    a.kind = SweepAxis::Kind::kLoopCount;
    return a;
  }
  if (s.rfind("tile:", 0) == 0) {
    const auto d = dim_of(s.substr(5), rank);
    if (!d) r.fail(fmt::format("'{}' names no tile dim of {}", s, dims_allowed(rank)));
    a.kind = SweepAxis::Kind::kTileDim;
    a.dim = *d;
    return a;
  }
  r.fail(fmt::format("'{}' is not \"auto\", \"loop_count\" or \"tile:N\"", s));
}

void parse_zones(const JsonReader& z, ZoneOptions& zones) {
  z.check_keys({"tolerance", "evidence_rise", "min_abs_rise_us", "min_wait_share"});
  zones.tolerance = z.number_or("tolerance", zones.tolerance, 0, 1);
  zones.evidence_rise = z.number_or("evidence_rise", zones.evidence_rise, 0, 1);
  zones.min_wait_share = z.number_or("min_wait_share", zones.min_wait_share, 0, 1);
  zones.min_abs_rise_us = z.number_or("min_abs_rise_us", zones.min_abs_rise_us, 0);
}

// A non-empty array; `what` says what it should hold.
std::vector<JsonReader> non_empty_items(const JsonReader& r, const std::string& what) {
  if (!r.json().is_array() || r.json().empty()) r.fail("expected a non-empty array of " + what);
  return r.items();
}

// With constraints.allow_tile_over_shape false, a fixed value or bound above the shape leaves
// nothing to generate in that dim.
void parse_generate_tiles(const JsonReader& g, const Dims& shape, bool allow_over_shape,
                          TileSpaceSpec& t) {
  const char* over = "while constraints.allow_tile_over_shape is false";
  g.check_keys({"fixed", "max", "last_dim"});
  t.enabled = true;
  if (const auto fixed = g.find("fixed")) {
    if (!fixed->json().is_object())
      fixed->fail("expected an object of dim -> value, e.g. {\"0\": 1}");
    fixed->for_each_member([&](const std::string& key, const JsonReader& v) {
      const auto d = dim_of(key, shape.size());
      if (!d) v.fail("not a tile dim of " + dims_allowed(shape.size()));
      const int64_t value = v.integer(1);
      if (!allow_over_shape && value > shape[static_cast<size_t>(*d)])
        v.fail(fmt::format("impossible space: {} exceeds the shape ({}) {}", value,
                           shape[static_cast<size_t>(*d)], over));
      t.fixed[*d] = value;
    });
  }
  if (const auto max = g.find("max")) {
    t.max = max->positive_ints(shape.size());
    for (size_t d = 0; d < t.max.size() && !allow_over_shape; ++d)
      if (t.max[d] > shape[d])
        max->fail(
            fmt::format("dim {} bound {} exceeds the shape ({}) {}", d, t.max[d], shape[d], over));
  }
  if (const auto last = g.find("last_dim"))
    t.last_dim_pow2 = last->one_of({"aligned", "pow2"}) == "pow2";
}

void parse_generate_loops(const JsonReader& g, LoopSpaceSpec& l) {
  g.check_keys({"from", "to", "factor"});
  if (!g.has("to")) g.fail_at("to", "missing: the largest loop count");
  l.enabled = true;
  l.from = g.integer_or("from", l.from, 1);
  l.to = g.at("to").integer(1);
  l.factor = g.integer_or("factor", l.factor, 2);  // a log-scale step
  if (l.to < l.from)
    g.fail(fmt::format("impossible space: to = {} is below from = {}", l.to, l.from));
}

void parse_constraints(const JsonReader& k, SweepConstraints& s) {
  k.check_keys({"prune_over_limits", "allow_tile_over_shape", "min_contiguous_bytes",
                "flag_contiguous_bytes"});
  s.prune_over_limits = k.boolean_or("prune_over_limits", s.prune_over_limits);
  s.allow_tile_over_shape = k.boolean_or("allow_tile_over_shape", s.allow_tile_over_shape);
  s.min_contiguous_bytes = k.integer_or("min_contiguous_bytes", s.min_contiguous_bytes, 0);
  s.flag_contiguous_bytes = k.integer_or("flag_contiguous_bytes", s.flag_contiguous_bytes, 0);
}

void parse_candidates(const JsonReader& c, SweepConfig& cfg) {
  c.check_keys(
      {"tiles", "loop_counts", "generate_tiles", "generate_loop_counts", "constraints", "axis"});
  const size_t rank = cfg.base.shape.size();
  if (const auto t = c.find("tiles"))
    for (const auto& tile : non_empty_items(*t, "tiles, e.g. [[1, 8192]]"))
      cfg.tiles.push_back(tile.positive_ints(rank));
  if (const auto l = c.find("loop_counts"))
    for (const auto& loop : non_empty_items(*l, "integers >= 1"))
      cfg.loop_counts.push_back(loop.integer(1));
  if (const auto k = c.find("constraints")) parse_constraints(*k, cfg.constraints);
  if (const auto g = c.find("generate_tiles"))
    parse_generate_tiles(*g, cfg.base.shape, cfg.constraints.allow_tile_over_shape,
                         cfg.generate_tiles);
  if (const auto g = c.find("generate_loop_counts")) parse_generate_loops(*g, cfg.generate_loops);
  if (const auto a = c.find("axis")) cfg.axis = parse_axis(*a, rank);
}

}  // namespace

std::string axis_name(const SweepAxis& axis) {
  switch (axis.kind) {
    case SweepAxis::Kind::kLoopCount:
      return "loop_count";
    case SweepAxis::Kind::kTileDim:
      return fmt::format("tile[{}]", axis.dim);
    case SweepAxis::Kind::kAuto:
      break;
  }
  return "auto";
}

SweepConfig sweep_config_from_json(const nlohmann::json& json,
                                   const std::filesystem::path& origin) {
  const JsonReader doc(json, origin.string());
  SweepConfig cfg;
  cfg.path = origin;
  // The kernel keys are a run config's; "tile" may be left out (the candidates supply it).
  cfg.base =
      kernel_spec_tile_optional(doc, {"hardware", "description", "candidates", "zones", "runtime"});
  cfg.options = runtime_options_from_json(doc.json(), doc.origin());
  cfg.hardware = config_hardware(doc);
  cfg.description = config_description(doc);
  if (const auto z = doc.find("zones")) parse_zones(*z, cfg.zones);
  const bool explicit_tile = !cfg.base.tile.empty();
  if (const auto c = doc.find("candidates")) {
    parse_candidates(*c, cfg);
  } else if (!explicit_tile) {
    doc.fail_at("candidates",
                "missing: give candidates.tiles, candidates.generate_tiles or a tile");
  }
  if (cfg.tiles.empty() && !cfg.generate_tiles.enabled) {
    if (!explicit_tile)
      doc.at("candidates").fail("no tile space: give tiles, generate_tiles or a top-level tile");
    cfg.tiles.push_back(cfg.base.tile);
  }
  if (cfg.loop_counts.empty() && !cfg.generate_loops.enabled)
    cfg.loop_counts.push_back(cfg.base.loop_count);
  return cfg;
}

SweepConfig load_sweep_config(const std::filesystem::path& file) {
  return sweep_config_from_json(read_json_file(file, "sweep config"), file);
}

std::vector<Dims> generate_tile_values(const SweepConfig& cfg, const Hardware& hw) {
  const auto& g = cfg.generate_tiles;
  const Dims& shape = cfg.base.shape;
  const Dims bound = g.max.empty() ? shape : g.max;
  const std::string w = cfg.path.string() + ": candidates.generate_tiles";
  std::vector<Dims> values(shape.size());
  const size_t last = shape.size() - 1;
  const int64_t bytes = dtype_bytes(cfg.base.dtype);
  const int64_t align = std::max<int64_t>(1, hw.ub.align_bytes / bytes);
  for (size_t d = 0; d < shape.size(); ++d) {
    Dims& v = values[d];
    if (auto it = g.fixed.find(static_cast<int>(d)); it != g.fixed.end()) {
      if (d == last && (it->second * bytes) % hw.ub.align_bytes != 0)
        throw Error(
            fmt::format(
                "{}.fixed.{}: impossible space: {} x {} B is not a multiple of the {} B alignment",
                w, d, it->second, bytes, hw.ub.align_bytes),
            ErrorKind::kAlignment);
      v.push_back(it->second);
      continue;
    }
    if (d == last && !g.last_dim_pow2) {
      for (int64_t x = align; x <= bound[d]; x += align) v.push_back(x);
    } else {
      for (int64_t x = 1; x <= bound[d]; x *= 2)
        if (d != last || (x * bytes) % hw.ub.align_bytes == 0) v.push_back(x);
      if (v.empty() || v.back() != bound[d]) {
        if (d != last || (bound[d] * bytes) % hw.ub.align_bytes == 0) v.push_back(bound[d]);
      }
    }
    if (v.empty())
      throw Error(
          fmt::format(
              "{}: impossible space: no {}tile value up to {} in dim {} (the last dim needs a "
              "multiple of {} elements for {} B alignment)",
              w, d == last ? "aligned " : "", bound[d], d, align, hw.ub.align_bytes),
          ErrorKind::kAlignment);
  }
  return values;
}

std::vector<Candidate> expand_candidates(const SweepConfig& cfg, const Hardware& hw) {
  std::vector<Dims> tiles = cfg.tiles;
  if (cfg.generate_tiles.enabled) {
    const auto values = generate_tile_values(cfg, hw);
    size_t total = 1;
    for (const auto& v : values) total *= v.size();
    for (size_t k = 0; k < total; ++k) {  // row-major: the last dim varies fastest
      Dims t(values.size());
      size_t rem = k;
      for (size_t d = values.size(); d-- > 0;) {
        t[d] = values[d][rem % values[d].size()];
        rem /= values[d].size();
      }
      tiles.push_back(std::move(t));
    }
  }
  std::vector<int64_t> loops = cfg.loop_counts;
  if (cfg.generate_loops.enabled)
    for (int64_t l = cfg.generate_loops.from; l <= cfg.generate_loops.to;
         l *= cfg.generate_loops.factor)
      loops.push_back(l);
  std::vector<Candidate> out;
  std::set<std::pair<Dims, int64_t>> seen;
  for (const auto& t : tiles)
    for (int64_t l : loops)
      if (seen.emplace(t, l).second) out.push_back({t, l});
  if (out.empty())
    throw Error(cfg.path.string() + ": candidates: impossible space: no candidate to evaluate");
  return out;
}

KernelSpec candidate_spec(const SweepConfig& cfg, const Candidate& c) {
  KernelSpec s = cfg.base;
  s.tile = c.tile;
  s.loop_count = c.loop_count;
  return s;
}

}  // namespace tilesim
