#include "tools/formats/sweep_config.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <set>

#include "model/error.hpp"
#include "model/tile_geometry.hpp"
#include "tools/formats/run_config.hpp"

namespace tilesim {

namespace {

class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw Error(origin_ + ": " + key + ": " + what);
  }
  void check_keys(const nlohmann::json& obj, const std::string& where,
                  const std::vector<std::string>& allowed) const {
    if (!obj.is_object()) fail(where, "expected an object, got " + obj.dump());
    for (auto it = obj.begin(); it != obj.end(); ++it)
      if (std::find(allowed.begin(), allowed.end(), it.key()) == allowed.end())
        fail(where + "." + it.key(),
             fmt::format("unknown key (allowed: {})", fmt::join(allowed, ", ")));
  }
  int64_t positive(const nlohmann::json& v, const std::string& key) const {
    if (!v.is_number_integer() || v.get<int64_t>() < 1)
      fail(key, "expected an integer >= 1, got " + v.dump());
    return v.get<int64_t>();
  }
  int64_t non_negative(const nlohmann::json& v, const std::string& key) const {
    if (!v.is_number_integer() || v.get<int64_t>() < 0)
      fail(key, "expected an integer >= 0, got " + v.dump());
    return v.get<int64_t>();
  }
  bool boolean(const nlohmann::json& v, const std::string& key) const {
    if (!v.is_boolean()) fail(key, "expected true or false, got " + v.dump());
    return v.get<bool>();
  }
  double fraction(const nlohmann::json& v, const std::string& key) const {
    if (!v.is_number() || v.get<double>() < 0 || v.get<double>() > 1)
      fail(key, "expected a number in 0..1, got " + v.dump());
    return v.get<double>();
  }
  Dims dims(const nlohmann::json& v, const std::string& key, size_t rank) const {
    if (!v.is_array() || v.size() != rank)
      fail(key, fmt::format("expected an array of {} positive integers (the shape's rank), got {}",
                            rank, v.dump()));
    Dims d;
    for (const auto& x : v) d.push_back(positive(x, key));
    return d;
  }
  const std::string& origin() const { return origin_; }

 private:
  std::string origin_;
};

int parse_dim_key(const Reader& r, const std::string& key, const std::string& where, size_t rank) {
  const auto n = static_cast<int64_t>(rank);
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(key, &used);
  } catch (...) {
    used = 0;
  }
  if (used == 0 || used != key.size() || v < -n || v >= n)
    r.fail(where + "." + key,
           fmt::format("not a tile dim of a rank-{} shape (allowed {}..{})", n, -n, n - 1));
  return static_cast<int>(v < 0 ? v + n : v);
}

SweepAxis parse_axis(const Reader& r, const nlohmann::json& v, size_t rank) {
  const std::string key = "candidates.axis";
  if (!v.is_string()) r.fail(key, "expected \"auto\", \"loop_count\" or \"tile:N\"");
  const std::string s = v.get<std::string>();
  SweepAxis a;
  if (s == "auto") return a;
  if (s == "loop_count") {
    a.kind = SweepAxis::Kind::kLoopCount;
    return a;
  }
  if (s.rfind("tile:", 0) == 0) {
    a.kind = SweepAxis::Kind::kTileDim;
    a.dim = parse_dim_key(r, s.substr(5), key, rank);
    return a;
  }
  r.fail(key, "'" + s + "' is not \"auto\", \"loop_count\" or \"tile:N\"");
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

SweepConfig sweep_config_from_json(const nlohmann::json& doc, const std::filesystem::path& origin) {
  const Reader r(origin.string());
  if (!doc.is_object()) r.fail("top level", "expected a JSON object");
  SweepConfig cfg;
  cfg.path = origin;
  // The kernel keys are a run config's; "tile" may be left out (the candidates supply it).
  nlohmann::json kernel = doc;
  if (!kernel.contains("tile") && kernel.contains("shape") && kernel["shape"].is_array())
    kernel["tile"] = kernel["shape"];
  cfg.base = kernel_spec_from_json(kernel, origin.string(),
                                   {"hardware", "description", "candidates", "zones", "runtime"});
  cfg.options = runtime_options_from_json(doc, origin.string());
  const size_t rank = cfg.base.shape.size();
  cfg.hardware = default_hardware_path();
  if (doc.contains("hardware")) {
    if (!doc["hardware"].is_string())
      r.fail("hardware", "expected a file path or a shipped name (ascend910b1)");
    cfg.hardware = resolve_config_path(origin, doc["hardware"].get<std::string>());
  }
  if (doc.contains("description")) {
    if (!doc["description"].is_string()) r.fail("description", "expected a string");
    cfg.description = doc["description"].get<std::string>();
  }
  if (doc.contains("zones")) {
    const auto& z = doc["zones"];
    r.check_keys(z, "zones", {"tolerance", "evidence_rise", "min_abs_rise_us", "min_wait_share"});
    if (z.contains("tolerance"))
      cfg.zones.tolerance = r.fraction(z["tolerance"], "zones.tolerance");
    if (z.contains("evidence_rise"))
      cfg.zones.evidence_rise = r.fraction(z["evidence_rise"], "zones.evidence_rise");
    if (z.contains("min_wait_share"))
      cfg.zones.min_wait_share = r.fraction(z["min_wait_share"], "zones.min_wait_share");
    if (z.contains("min_abs_rise_us")) {
      if (!z["min_abs_rise_us"].is_number() || z["min_abs_rise_us"].get<double>() < 0)
        r.fail("zones.min_abs_rise_us", "expected a number >= 0");
      cfg.zones.min_abs_rise_us = z["min_abs_rise_us"].get<double>();
    }
  }
  const bool explicit_tile = doc.contains("tile");
  if (!doc.contains("candidates")) {
    if (!explicit_tile)
      r.fail("candidates", "missing: give candidates.tiles, candidates.generate_tiles or a tile");
    cfg.tiles.push_back(cfg.base.tile);
    cfg.loop_counts.push_back(cfg.base.loop_count);
    return cfg;
  }
  const auto& c = doc["candidates"];
  r.check_keys(
      c, "candidates",
      {"tiles", "loop_counts", "generate_tiles", "generate_loop_counts", "constraints", "axis"});
  if (c.contains("tiles")) {
    const auto& t = c["tiles"];
    if (!t.is_array() || t.empty())
      r.fail("candidates.tiles", "expected a non-empty array of tiles, e.g. [[1, 8192]]");
    for (size_t i = 0; i < t.size(); ++i)
      cfg.tiles.push_back(r.dims(t[i], fmt::format("candidates.tiles[{}]", i), rank));
  }
  if (c.contains("loop_counts")) {
    const auto& l = c["loop_counts"];
    if (!l.is_array() || l.empty())
      r.fail("candidates.loop_counts", "expected a non-empty array of integers >= 1");
    for (size_t i = 0; i < l.size(); ++i)
      cfg.loop_counts.push_back(r.positive(l[i], fmt::format("candidates.loop_counts[{}]", i)));
  }
  if (c.contains("generate_tiles")) {
    const auto& g = c["generate_tiles"];
    const std::string w = "candidates.generate_tiles";
    r.check_keys(g, w, {"fixed", "max", "last_dim"});
    cfg.generate_tiles.enabled = true;
    if (g.contains("fixed") && !g["fixed"].is_object())
      r.fail(w + ".fixed", "expected an object of dim -> value, e.g. {\"0\": 1}");
    if (g.contains("fixed"))
      for (auto it = g["fixed"].begin(); it != g["fixed"].end(); ++it) {
        const int d = parse_dim_key(r, it.key(), w + ".fixed", rank);
        cfg.generate_tiles.fixed[d] = r.positive(it.value(), w + ".fixed." + it.key());
      }
    if (g.contains("max")) cfg.generate_tiles.max = r.dims(g["max"], w + ".max", rank);
    if (g.contains("last_dim")) {
      const auto& l = g["last_dim"];
      if (!l.is_string() || (l != "aligned" && l != "pow2"))
        r.fail(w + ".last_dim", "expected \"aligned\" (multiples of the UB alignment) or \"pow2\"");
      cfg.generate_tiles.last_dim_pow2 = l == "pow2";
    }
  }
  if (c.contains("generate_loop_counts")) {
    const auto& g = c["generate_loop_counts"];
    const std::string w = "candidates.generate_loop_counts";
    r.check_keys(g, w, {"from", "to", "factor"});
    if (!g.contains("to")) r.fail(w + ".to", "missing (the largest loop count)");
    auto& l = cfg.generate_loops;
    l.enabled = true;
    if (g.contains("from")) l.from = r.positive(g["from"], w + ".from");
    l.to = r.positive(g["to"], w + ".to");
    if (g.contains("factor")) l.factor = r.positive(g["factor"], w + ".factor");
    if (l.factor < 2) r.fail(w + ".factor", "expected an integer >= 2 (a log-scale step)");
    if (l.to < l.from)
      r.fail(w, fmt::format("impossible space: to = {} is below from = {}", l.to, l.from));
  }
  if (c.contains("constraints")) {
    const auto& k = c["constraints"];
    const std::string w = "candidates.constraints";
    r.check_keys(k, w,
                 {"prune_over_limits", "allow_tile_over_shape", "min_contiguous_bytes",
                  "flag_contiguous_bytes"});
    auto& s = cfg.constraints;
    if (k.contains("prune_over_limits"))
      s.prune_over_limits = r.boolean(k["prune_over_limits"], w + ".prune_over_limits");
    if (k.contains("allow_tile_over_shape"))
      s.allow_tile_over_shape = r.boolean(k["allow_tile_over_shape"], w + ".allow_tile_over_shape");
    if (k.contains("min_contiguous_bytes"))
      s.min_contiguous_bytes =
          r.non_negative(k["min_contiguous_bytes"], w + ".min_contiguous_bytes");
    if (k.contains("flag_contiguous_bytes"))
      s.flag_contiguous_bytes =
          r.non_negative(k["flag_contiguous_bytes"], w + ".flag_contiguous_bytes");
  }
  if (c.contains("axis")) cfg.axis = parse_axis(r, c["axis"], rank);
  if (cfg.tiles.empty() && !cfg.generate_tiles.enabled) {
    if (!explicit_tile)
      r.fail("candidates", "no tile space: give tiles, generate_tiles or a top-level tile");
    cfg.tiles.push_back(cfg.base.tile);
  }
  if (cfg.loop_counts.empty() && !cfg.generate_loops.enabled)
    cfg.loop_counts.push_back(cfg.base.loop_count);
  if (!cfg.constraints.allow_tile_over_shape)
    for (const auto& [d, value] : cfg.generate_tiles.fixed)
      if (value > cfg.base.shape[static_cast<size_t>(d)])
        r.fail(fmt::format("candidates.generate_tiles.fixed.{}", d),
               fmt::format("impossible space: {} exceeds the shape ({}) while "
                           "constraints.allow_tile_over_shape is false",
                           value, cfg.base.shape[static_cast<size_t>(d)]));
  if (!cfg.constraints.allow_tile_over_shape && cfg.generate_tiles.enabled)
    for (size_t d = 0; d < cfg.generate_tiles.max.size(); ++d)
      if (cfg.generate_tiles.max[d] > cfg.base.shape[d])
        r.fail("candidates.generate_tiles.max",
               fmt::format("dim {} bound {} exceeds the shape ({}) while "
                           "constraints.allow_tile_over_shape is false",
                           d, cfg.generate_tiles.max[d], cfg.base.shape[d]));
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
        throw Error(fmt::format(
            "{}.fixed.{}: impossible space: {} x {} B is not a multiple of the {} B alignment", w,
            d, it->second, bytes, hw.ub.align_bytes));
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
      throw Error(fmt::format(
          "{}: impossible space: no {}tile value up to {} in dim {} (the last dim needs a "
          "multiple of {} elements for {} B alignment)",
          w, d == last ? "aligned " : "", bound[d], d, align, hw.ub.align_bytes));
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
