#include "tools/formats/sweep_config.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <optional>
#include <set>
#include <tuple>

#include "kernels/lowering.hpp"
#include "kernels/program/program.hpp"
#include "kernels/spec/registry.hpp"
#include "model/error.hpp"
#include "model/integer_text.hpp"
#include "model/tile_geometry.hpp"
#include "tools/formats/program_file.hpp"
#include "tools/formats/run_config.hpp"

namespace tilesim {

namespace {

// A tile dim named by text ("1", "-1") in a rank-`rank` shape, normalised to 0..rank-1.
std::optional<int> dim_of(const std::string& key, size_t rank) {
  const auto n = static_cast<int64_t>(rank);
  const std::optional<int64_t> v = parse_int64(key);
  if (!v || *v < -n || *v >= n) return std::nullopt;
  return static_cast<int>(*v < 0 ? *v + n : *v);
}

std::string dims_allowed(size_t rank) {
  const auto n = static_cast<int64_t>(rank);
  return fmt::format("a rank-{} shape (allowed {}..{})", n, -n, n - 1);
}

SweepAxis parse_axis(const JsonReader& r, size_t rank) {
  const char* allowed = "allowed: \"auto\", \"loop_count\", \"grid\" or \"tile:N\"";
  if (!r.json().is_string()) r.fail(fmt::format("expected a string ({})", allowed));
  const std::string s = r.string();
  SweepAxis a;
  if (s == "auto") return a;
  if (s == "loop_count") {
    a.kind = SweepAxis::Kind::kLoopCount;
    return a;
  }
  if (s == "grid") {
    a.kind = SweepAxis::Kind::kGrid;
    return a;
  }
  if (s.rfind("tile:", 0) == 0) {
    const auto d = dim_of(s.substr(5), rank);
    if (!d) r.fail(fmt::format("'{}' names no tile dim of {}", s, dims_allowed(rank)));
    a.kind = SweepAxis::Kind::kTileDim;
    a.dim = *d;
    return a;
  }
  r.fail(fmt::format("'{}' is not \"auto\", \"loop_count\", \"grid\" or \"tile:N\"", s));
}

void parse_zones(const JsonReader& z, ZoneOptions& zones) {
  z.check_keys({"tolerance", "evidence_rise", "min_abs_rise_us", "min_wait_share",
                "min_tail_occupancy", "max_block_overhead_share"});
  zones.tolerance = z.number_or("tolerance", zones.tolerance, 0, 1);
  zones.evidence_rise = z.number_or("evidence_rise", zones.evidence_rise, 0, 1);
  zones.min_wait_share = z.number_or("min_wait_share", zones.min_wait_share, 0, 1);
  zones.min_abs_rise_us = z.number_or("min_abs_rise_us", zones.min_abs_rise_us, 0);
  zones.min_tail_occupancy = z.number_or("min_tail_occupancy", zones.min_tail_occupancy, 0, 1);
  zones.max_block_overhead_share =
      z.number_or("max_block_overhead_share", zones.max_block_overhead_share, 0, 1);
}

// A non-empty array; `what` says what it should hold.
std::vector<JsonReader> non_empty_items(const JsonReader& r, const std::string& what) {
  if (!r.json().is_array() || r.json().empty()) r.fail("expected a non-empty array of " + what);
  return r.items();
}

// A per-dim space (generate_tiles, or generate_blocks: no "last_dim", every dim in powers of
// two). With constraints.allow_tile_over_shape false, a fixed value or bound above the shape
// leaves nothing to generate in that dim.
void parse_dim_space(const JsonReader& g, const Dims& shape, bool allow_over_shape, bool tiles,
                     TileSpaceSpec& t) {
  const char* over = "while constraints.allow_tile_over_shape is false";
  if (tiles)
    g.check_keys({"fixed", "max", "last_dim"});
  else
    g.check_keys({"fixed", "max"});
  t.last_dim_pow2 = !tiles;
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

// A log scale; `what` names its values ("loop count", "grid").
void parse_log_scale(const JsonReader& g, const std::string& what, LoopSpaceSpec& l) {
  if (!g.has("to")) g.fail_at("to", "missing: the largest " + what);
  l.enabled = true;
  l.from = g.integer_or("from", l.from, 1);
  l.to = g.at("to").integer(1);
  l.factor = g.integer_or("factor", l.factor, 2);  // a log-scale step
  if (l.to < l.from)
    g.fail(fmt::format("impossible space: to = {} is below from = {}", l.to, l.from));
}

void parse_constraints(const JsonReader& k, SweepConstraints& s) {
  k.check_keys({"prune_over_limits", "allow_tile_over_shape", "min_contiguous_bytes",
                "flag_contiguous_bytes", "max_candidates"});
  s.prune_over_limits = k.boolean_or("prune_over_limits", s.prune_over_limits);
  s.allow_tile_over_shape = k.boolean_or("allow_tile_over_shape", s.allow_tile_over_shape);
  s.min_contiguous_bytes = k.integer_or("min_contiguous_bytes", s.min_contiguous_bytes, 0);
  s.flag_contiguous_bytes = k.integer_or("flag_contiguous_bytes", s.flag_contiguous_bytes, 0);
  s.max_candidates = k.integer_or("max_candidates", s.max_candidates, 1);
}

// {"<tile name>": [[shape], ...], ...}: a program's tiles other than program_tile, by name.
void parse_program_tiles(const JsonReader& t, SweepConfig& cfg) {
  const Program* p = cfg.base.program.get();
  if (!p)
    t.fail(
        "applies to a tile program's sweep only (this config has no \"program\"): name its "
        "tiles' shapes by tile name");
  t.for_each_member([&](const std::string& name, const JsonReader& v) {
    const int id = named_tile(*p, name, v);
    if (name == cfg.base.program_tile)
      v.fail(
          fmt::format("'{}' is the sweep's program_tile: its shapes go in candidates.tiles or "
                      "generate_tiles",
                      name));
    std::vector<Dims> shapes;
    const size_t rank = p->tiles[static_cast<size_t>(id)].dims.size();
    for (const auto& shape : non_empty_items(v, "tile shapes, e.g. [[1, 1024]]"))
      shapes.push_back(shape.positive_ints(rank));
    cfg.program_tiles.emplace_back(name, std::move(shapes));
  });
}

// {"<param>": [value, ...], ...}: each value checked against the op's declaration of the param.
void parse_param_values(const JsonReader& p, SweepConfig& cfg) {
  if (cfg.base.program)
    p.fail(
        "applies to a built-in op's sweep only (a tile program has no params: sweep its named "
        "tiles with candidates.program_tiles)");
  p.expect_object();
  p.for_each_member([&](const std::string& name, const JsonReader& v) {
    std::vector<nlohmann::json> values;
    for (const auto& value : non_empty_items(v, fmt::format("values of the param '{}'", name))) {
      validate_param(cfg.base.op, name, value);
      values.push_back(value.json());
    }
    cfg.param_values.emplace_back(name, std::move(values));
  });
}

void parse_candidates(const JsonReader& c, SweepConfig& cfg) {
  c.check_keys({"tiles", "loop_counts", "generate_tiles", "generate_loop_counts", "grids",
                "generate_grids", "blocks", "generate_blocks", "program_tiles", "params",
                "constraints", "axis"});
  const bool spmd = cfg.base.partition == PartitionStyle::kSpmd;
  // Each axis belongs to one launch style: loop counts to pypto, grids and blocks to spmd.
  for (const char* key : {"loop_counts", "generate_loop_counts"})
    if (spmd && c.has(key))
      c.at(key).fail(
          "applies to the pypto partition only: an spmd launch has no loop count (sweep its "
          "grids, blocks and sub-tiles)");
  for (const char* key : {"grids", "generate_grids", "blocks", "generate_blocks"})
    if (!spmd && c.has(key))
      c.at(key).fail(
          fmt::format("applies to the spmd partition only (partition is '{}'; give \"partition\": "
                      "{{\"style\": \"spmd\"}})",
                      partition_name(cfg.base.partition)));
  if (cfg.base.program && cfg.base.program_loop.empty())
    for (const char* key : {"loop_counts", "generate_loop_counts"})
      if (c.has(key))
        c.at(key).fail(
            fmt::format("program '{}' has no loop, so its loop counts would be one "
                        "candidate many times (add a {{\"loop\": ...}} region)",
                        cfg.base.program->name));
  const size_t rank = cfg.base.shape.size();
  if (const auto t = c.find("tiles"))
    for (const auto& tile : non_empty_items(*t, "tiles, e.g. [[1, 8192]]"))
      cfg.tiles.push_back(tile.positive_ints(rank));
  if (const auto l = c.find("loop_counts"))
    for (const auto& loop : non_empty_items(*l, "integers >= 1"))
      cfg.loop_counts.push_back(loop.integer(1));
  if (const auto g = c.find("grids"))
    for (const auto& grid : non_empty_items(*g, "integers >= 1 (blocks launched)"))
      cfg.grids.push_back(grid.integer(1));
  if (const auto b = c.find("blocks"))
    for (const auto& block : non_empty_items(*b, "block regions, e.g. [[64, 4096]]"))
      cfg.blocks.push_back(block.positive_ints(rank));
  if (const auto t = c.find("program_tiles")) parse_program_tiles(*t, cfg);
  if (const auto p = c.find("params")) parse_param_values(*p, cfg);
  if (const auto k = c.find("constraints")) parse_constraints(*k, cfg.constraints);
  if (const auto g = c.find("generate_tiles"))
    parse_dim_space(*g, cfg.base.shape, cfg.constraints.allow_tile_over_shape, true,
                    cfg.generate_tiles);
  if (const auto g = c.find("generate_blocks"))
    parse_dim_space(*g, cfg.base.shape, false, false, cfg.generate_blocks);
  if (const auto g = c.find("generate_loop_counts")) {
    g->check_keys({"from", "to", "factor"});
    parse_log_scale(*g, "loop count", cfg.generate_loops);
  }
  if (const auto g = c.find("generate_grids")) {
    g->check_keys({"from", "to", "factor", "include_cores"});
    parse_log_scale(*g, "grid", cfg.generate_grids.scale);
    cfg.generate_grids.include_cores = g->boolean_or("include_cores", false);
  }
  if (const auto a = c.find("axis")) {
    cfg.axis = parse_axis(*a, rank);
    if (cfg.axis.kind == SweepAxis::Kind::kGrid && !spmd)
      a->fail(fmt::format("\"grid\" applies to the spmd partition only (partition is '{}')",
                          partition_name(cfg.base.partition)));
    if (cfg.axis.kind == SweepAxis::Kind::kLoopCount && spmd)
      a->fail(
          "\"loop_count\" applies to the pypto partition only (an spmd sweep's axes: \"grid\" "
          "or \"tile:N\")");
  }
}

}  // namespace

std::string axis_name(const SweepAxis& axis) {
  switch (axis.kind) {
    case SweepAxis::Kind::kLoopCount:
      return "loop_count";
    case SweepAxis::Kind::kTileDim:
      return fmt::format("tile[{}]", axis.dim);
    case SweepAxis::Kind::kGrid:
      return "grid";
    case SweepAxis::Kind::kAuto:
      break;
  }
  return "auto";
}

namespace {

const std::set<std::string> kSweepKeys = {"hardware", "description", "candidates",
                                          "zones",    "runtime",     "objective"};

bool candidates_have(const JsonReader& doc, const char* a, const char* b) {
  const auto c = doc.json().find("candidates");
  return c != doc.json().end() && c->is_object() && (c->contains(a) || c->contains(b));
}

bool grid_space_given(const JsonReader& doc) {
  return candidates_have(doc, "grids", "generate_grids");
}

bool block_space_given(const JsonReader& doc) {
  return candidates_have(doc, "blocks", "generate_blocks");
}

// "partition": "spmd" or {"style": "spmd"} with no grid (the sweep's grid space supplies it, or
// the block space derives it).
bool spmd_without_grid(const JsonReader& doc) {
  const auto p = doc.json().find("partition");
  if (p == doc.json().end()) return false;
  if (p->is_string()) return *p == "spmd";
  return p->is_object() && p->value("style", nlohmann::json()) == "spmd" && !p->contains("grid");
}

// partition.block with no grid: the run config's own rule derives its grid.
bool partition_block_given(const JsonReader& doc) {
  const auto p = doc.json().find("partition");
  return p != doc.json().end() && p->is_object() && p->contains("block");
}

}  // namespace

SweepConfig sweep_config_from_json(const nlohmann::json& json,
                                   const std::filesystem::path& origin) {
  const JsonReader doc(json, origin.string());
  SweepConfig cfg;
  cfg.path = origin;
  // The kernel keys are a run config's; "tile" may be left out (the candidates supply it), and an
  // spmd partition's grid when the candidates supply it or derive it from the block.
  const bool grid_space = grid_space_given(doc);
  cfg.grid_from_block = !grid_space && spmd_without_grid(doc) && block_space_given(doc);
  if (!grid_space && !cfg.grid_from_block && spmd_without_grid(doc) && !partition_block_given(doc))
    doc.at("partition")
        .fail_at("grid",
                 "missing: give it, candidates.grids / candidates.generate_grids, or a block "
                 "space (candidates.blocks / generate_blocks: each block's grid is then "
                 "cdiv(shape, block))");
  if ((grid_space || cfg.grid_from_block) && spmd_without_grid(doc)) {
    // The partition's other keys (block, source) stay; a grid of 1 stands in, dropped below.
    nlohmann::json kernel = json;
    nlohmann::json& partition = kernel["partition"];
    if (partition.is_string()) partition = {{"style", "spmd"}};
    partition["grid"] = 1;
    cfg.base = kernel_spec_tile_optional(JsonReader(kernel, origin.string()), kSweepKeys);
    cfg.base.grid = 0;
  } else {
    cfg.base = kernel_spec_tile_optional(doc, kSweepKeys);
    if (grid_space && cfg.base.partition == PartitionStyle::kSpmd)
      doc.at("partition")
          .at("grid")
          .fail(
              "the grid comes from candidates.grids / candidates.generate_grids: give one or "
              "the other");
  }
  cfg.options = runtime_options_from_json(doc.json(), doc.origin());
  cfg.hardware = config_hardware(doc);
  cfg.description = config_description(doc);
  if (const auto z = doc.find("zones")) parse_zones(*z, cfg.zones);
  if (const auto o = doc.find("objective")) {
    const auto obj = find_objective(o->string());
    if (!obj)
      o->fail(fmt::format("unknown objective '{}' (known: {})", o->string(),
                          fmt::join(objective_names(), ", ")));
    cfg.objective = *obj;
  }
  const bool explicit_tile = !cfg.base.tile.empty();
  if (const auto c = doc.find("candidates")) {
    parse_candidates(*c, cfg);
  } else if (!explicit_tile) {
    doc.fail_at("candidates",
                "missing: give candidates.tiles, candidates.generate_tiles or a tile");
  }
  if (cfg.tiles.empty() && !cfg.generate_tiles.enabled) {
    if (explicit_tile)
      cfg.tiles.push_back(cfg.base.tile);
    else if (cfg.grid_from_block)
      cfg.tile_from_block = true;
    else
      doc.at("candidates")
          .fail(
              "no tile space: give tiles, generate_tiles, a top-level tile, or (spmd) a block "
              "space with no grid, each block one tile");
  }
  if (cfg.loop_counts.empty() && !cfg.generate_loops.enabled)
    cfg.loop_counts.push_back(cfg.base.loop_count);
  if (cfg.base.partition == PartitionStyle::kSpmd && !grid_space && !cfg.grid_from_block)
    cfg.grids.push_back(cfg.base.grid);  // partition.grid: the one grid of the space
  return cfg;
}

SweepConfig load_sweep_config(const std::filesystem::path& file) {
  return sweep_config_from_json(read_json_file(file, "sweep config"), file);
}

std::vector<int64_t> log_scale(int64_t from, int64_t to, int64_t factor) {
  if (from < 1 || factor < 2)  // the parsers bound both; anything else would never end
    throw InternalError(
        fmt::format("log_scale: from {} factor {} (need from >= 1, factor >= 2)", from, factor));
  std::vector<int64_t> v;
  for (int64_t x = from; x <= to; x *= factor) {
    v.push_back(x);
    if (x > to / factor) break;  // the next step would pass `to` (or overflow)
  }
  return v;
}

namespace {

// Refuses a space (or one generated axis) of `n` values over the config's limit.
void check_size(const SweepConfig& cfg, const std::string& where, const std::string& what,
                uint64_t n) {
  const auto limit = static_cast<uint64_t>(cfg.constraints.max_candidates);
  if (n > limit)
    throw Error(fmt::format("{}: the space is too large: {} {}; the limit is {}; narrow the space "
                            "or raise it with --max-candidates (or constraints.max_candidates)",
                            where, n, what, limit),
                ErrorKind::kLimits);
}

// n * m, saturating at UINT64_MAX (a space size only compared with a limit).
uint64_t times(uint64_t n, uint64_t m) {
  return m != 0 && n > UINT64_MAX / m ? UINT64_MAX : n * m;
}

// The per-dim values of a generated tile or block space: fixed dims hold one value, the rest are
// powers of two up to the bound and the bound itself, or (the last tile dim unless "pow2") every
// multiple of `align`. `align` > 1 also filters the last dim to aligned values.
std::vector<Dims> dim_space_values(const SweepConfig& cfg, const TileSpaceSpec& g,
                                   const std::string& w, int64_t align, int64_t bytes,
                                   int64_t align_bytes) {
  const Dims& shape = cfg.base.shape;
  const Dims bound = g.max.empty() ? shape : g.max;
  std::vector<Dims> values(shape.size());
  const size_t last = shape.size() - 1;
  auto aligned = [&](size_t d, int64_t x) { return d != last || align == 1 || (x % align) == 0; };
  for (size_t d = 0; d < shape.size(); ++d) {
    Dims& v = values[d];
    if (auto it = g.fixed.find(static_cast<int>(d)); it != g.fixed.end()) {
      if (!aligned(d, it->second))
        throw Error(
            fmt::format(
                "{}.fixed.{}: impossible space: {} x {} B is not a multiple of the {} B alignment",
                w, d, it->second, bytes, align_bytes),
            ErrorKind::kAlignment);
      v.push_back(it->second);
      continue;
    }
    if (d == last && !g.last_dim_pow2) {
      check_size(cfg, w, fmt::format("aligned values in dim {}", d),
                 static_cast<uint64_t>(bound[d] / align));
      for (int64_t x = align; x <= bound[d] - align; x += align) v.push_back(x);
      if (bound[d] >= align) v.push_back(bound[d] / align * align);
    } else {
      for (int64_t x : log_scale(1, bound[d], 2))
        if (aligned(d, x)) v.push_back(x);
      if ((v.empty() || v.back() != bound[d]) && aligned(d, bound[d])) v.push_back(bound[d]);
    }
    if (v.empty())
      throw Error(
          fmt::format(
              "{}: impossible space: no {}tile value up to {} in dim {} (the last dim needs a "
              "multiple of {} elements for {} B alignment)",
              w, d == last ? "aligned " : "", bound[d], d, align, align_bytes),
          ErrorKind::kAlignment);
  }
  return values;
}

// Every combination of per-dim values, row-major (the last dim varies fastest).
std::vector<Dims> combinations(const SweepConfig& cfg, const std::string& w,
                               const std::vector<Dims>& values) {
  uint64_t total = 1;
  for (const auto& v : values) total = times(total, v.size());
  check_size(cfg, w, "combinations", total);
  std::vector<Dims> out;
  for (uint64_t k = 0; k < total; ++k) {
    Dims t(values.size());
    uint64_t rem = k;
    for (size_t d = values.size(); d-- > 0;) {
      t[d] = values[d][rem % values[d].size()];
      rem /= values[d].size();
    }
    out.push_back(std::move(t));
  }
  return out;
}

// The core count of the op's type: the first tile of the space that lowers (at grid 1) says
// which core type its tasks use.
int64_t op_core_count(const SweepConfig& cfg, const Hardware& hw, const std::vector<Dims>& tiles) {
  std::string first_error;
  for (const auto& tile : tiles) {
    KernelSpec spec = cfg.base;
    spec.tile = tile;
    spec.grid = 1;
    try {
      const LoweredKernel k = lower_kernel(spec, hw);
      for (const auto& kind : k.graph.kinds)
        if (kind.core == CoreType::kAiv) return hw.cores.aiv;
      return hw.cores.aic;
    } catch (const Error& e) {
      if (first_error.empty()) first_error = e.what();
    }
  }
  throw Error(fmt::format("{}: candidates.generate_grids.include_cores: no tile of the space "
                          "lowers, so the op's core type is unknown (first: {})",
                          cfg.path.string(), first_error),
              ErrorKind::kInput);
}

std::vector<Dims> tile_space(const SweepConfig& cfg, const Hardware& hw) {
  std::vector<Dims> tiles = cfg.tiles;
  if (cfg.generate_tiles.enabled) {
    const auto g = combinations(cfg, cfg.path.string() + ": candidates.generate_tiles",
                                generate_tile_values(cfg, hw));
    tiles.insert(tiles.end(), g.begin(), g.end());
  }
  return tiles;
}

}  // namespace

std::vector<Dims> generate_tile_values(const SweepConfig& cfg, const Hardware& hw) {
  const int64_t bytes = dtype_bytes(cfg.base.dtype);
  const int64_t align = std::max<int64_t>(1, hw.ub.align_bytes / bytes);
  return dim_space_values(cfg, cfg.generate_tiles,
                          cfg.path.string() + ": candidates.generate_tiles", align, bytes,
                          hw.ub.align_bytes);
}

std::vector<int64_t> generate_grid_values(const SweepConfig& cfg, const Hardware& hw) {
  const auto& g = cfg.generate_grids;
  std::vector<int64_t> v = log_scale(g.scale.from, g.scale.to, g.scale.factor);
  if (g.include_cores) {
    const int64_t cores = op_core_count(cfg, hw, tile_space(cfg, hw));
    check_size(cfg, cfg.path.string() + ": candidates.generate_grids",
               "grids (multiples of the core count, each + 1)",
               times(static_cast<uint64_t>(g.scale.to / cores), 2));
    for (int64_t m = cores; m <= g.scale.to; m += cores) {
      if (m >= g.scale.from) v.push_back(m);
      if (m < g.scale.to && m + 1 >= g.scale.from) v.push_back(m + 1);
      if (m > g.scale.to - cores) break;  // the next multiple would pass `to` (or overflow)
    }
  }
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::vector<Candidate> expand_candidates(const SweepConfig& cfg, const Hardware& hw) {
  const std::vector<Dims> tiles =
      cfg.tile_from_block ? std::vector<Dims>{Dims{}} : tile_space(cfg, hw);
  std::vector<int64_t> loops = cfg.loop_counts;
  if (cfg.generate_loops.enabled) {
    const auto& l = cfg.generate_loops;
    const auto g = log_scale(l.from, l.to, l.factor);
    loops.insert(loops.end(), g.begin(), g.end());
  }
  std::vector<int64_t> grids = cfg.grids;
  if (cfg.generate_grids.scale.enabled) {
    const auto g = generate_grid_values(cfg, hw);
    grids.insert(grids.end(), g.begin(), g.end());
  }
  if (grids.empty()) grids.push_back(0);  // not an spmd sweep
  std::vector<Dims> blocks = cfg.blocks;
  if (cfg.generate_blocks.enabled) {
    const std::string w = cfg.path.string() + ": candidates.generate_blocks";
    const auto g = combinations(cfg, w, dim_space_values(cfg, cfg.generate_blocks, w, 1, 1, 1));
    blocks.insert(blocks.end(), g.begin(), g.end());
  }
  if (blocks.empty()) blocks.emplace_back();  // the block is not set
  // Every combination of the program's other named tiles (one empty combination without them).
  std::vector<NamedTiles> named(1);
  uint64_t named_count = 1;
  for (const auto& [name, shapes] : cfg.program_tiles)
    named_count = times(named_count, shapes.size());
  // ... and of the params' values (one empty object without them).
  std::vector<nlohmann::json> params(1, nlohmann::json::object());
  uint64_t params_count = 1;
  for (const auto& [name, values] : cfg.param_values)
    params_count = times(params_count, values.size());
  std::string space = "candidates (grids x blocks x tiles x loop counts";
  if (!cfg.program_tiles.empty()) space += " x program tiles";
  if (!cfg.param_values.empty()) space += " x params";
  check_size(
      cfg, cfg.path.string() + ": candidates", space + ")",
      times(times(times(times(times(grids.size(), blocks.size()), tiles.size()), loops.size()),
                  named_count),
            params_count));
  for (const auto& [name, shapes] : cfg.program_tiles) {
    std::vector<NamedTiles> next;
    for (const auto& combo : named)
      for (const auto& shape : shapes) {
        next.push_back(combo);
        next.back().emplace_back(name, shape);
      }
    named = std::move(next);
  }
  for (const auto& [name, values] : cfg.param_values) {
    std::vector<nlohmann::json> next;
    for (const auto& combo : params)
      for (const auto& value : values) {
        next.push_back(combo);
        next.back()[name] = value;
      }
    params = std::move(next);
  }
  std::vector<Candidate> out;
  std::set<std::tuple<int64_t, Dims, Dims, int64_t, NamedTiles, nlohmann::json>> seen;
  for (int64_t grid : grids)
    for (const auto& b : blocks) {
      const int64_t g = cfg.grid_from_block ? region_count(cfg.base.shape, b) : grid;
      for (const auto& tile : tiles) {
        const Dims& t = cfg.tile_from_block ? b : tile;
        for (int64_t l : loops)
          for (const auto& n : named)
            for (const auto& p : params)
              if (seen.emplace(g, b, t, l, n, p).second) out.push_back({t, l, g, b, n, p});
      }
    }
  if (out.empty())
    throw Error(cfg.path.string() + ": candidates: impossible space: no candidate to evaluate");
  return out;
}

KernelSpec candidate_spec(const SweepConfig& cfg, const Candidate& c) {
  KernelSpec s = cfg.base;
  s.tile = c.tile;
  s.loop_count = c.loop_count;
  if (c.grid > 0) s.grid = c.grid;
  if (!c.block.empty()) s.block = c.block;
  s.program_tiles = c.named_tiles;
  if (!c.params.empty() && !s.params.is_object()) s.params = nlohmann::json::object();
  for (const auto& [name, value] : c.params.items()) s.params[name] = value;
  return s;
}

}  // namespace tilesim
