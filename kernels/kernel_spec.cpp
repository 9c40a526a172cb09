#include "kernels/kernel_spec.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>

#include "kernels/lowering.hpp"
#include "kernels/registry.hpp"
#include "model/error.hpp"
#include "model/integer_text.hpp"
#include "model/json_reader.hpp"

namespace tilesim {

Dims parse_dims(const std::string& text, const std::string& what) {
  Dims d;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = text.find(',', pos);
    const std::string part =
        text.substr(pos, comma == std::string::npos ? std::string::npos : comma - pos);
    const std::optional<int64_t> v = parse_int64(part);
    if (!v || *v <= 0)
      throw Error(what + ": '" + text + "' is not a comma-separated list of positive integers");
    d.push_back(*v);
    if (comma == std::string::npos) break;
    pos = comma + 1;
  }
  return d;
}

const char* partition_name(PartitionStyle p) {
  return enum_name(kPartitionNames, p);
}

BlockRange block_range(int64_t units, int64_t grid, int64_t b) {
  // More blocks than units: program b owns unit b, and the rest own nothing (a Triton program
  // whose offsets fall past the work masks everything out and returns).
  if (grid > units) return b < units ? BlockRange{b, b + 1} : BlockRange{units, units};
  // 128-bit products: units * b overflows int64 long before a block range does.
  const auto at = [&](int64_t i) {
    return static_cast<int64_t>(static_cast<__int128>(units) * i / grid);
  };
  return {at(b), at(b + 1)};
}

int64_t region_count(const Dims& shape, const Dims& block) {
  return auto_tiles(shape, block);
}

std::string format_dims(const Dims& d) {
  return fmt::format("({})", fmt::join(d, ", "));
}

namespace {

// The reduction dim(s): one integer or an array, each normalised into 0..rank-1.
std::vector<int> read_dims(const JsonReader& d, int64_t rank) {
  std::vector<JsonReader> raw;
  if (d.json().is_array())
    raw = d.items();
  else
    raw.push_back(d);
  std::vector<int> dims;
  for (const auto& x : raw) {
    if (!x.json().is_number_integer()) d.fail("expected an integer or an array of integers");
    const auto v = x.json().get<int64_t>();
    if (v < -rank || v >= rank)
      d.fail(fmt::format("{} is out of range for a rank-{} shape (allowed {}..{})", v, rank, -rank,
                         rank - 1));
    dims.push_back(static_cast<int>(v < 0 ? v + rank : v));
  }
  return dims;
}

// The spec's dtype, one of those its op's record takes (the float types for a family's own op).
DType read_dtype(const JsonReader& r, const std::string& op, DTypeSet allowed) {
  const std::string list = allowed.text();
  if (!r.json().is_string()) r.fail(fmt::format("expected a string ({})", list));
  DType t{};
  try {
    t = parse_program_dtype(r.string());
  } catch (const Error&) {
    r.fail(fmt::format("unknown dtype '{}' (allowed: {})", r.string(), list));
  }
  if (!allowed.contains(t))
    r.fail(fmt::format("{} does not take {} (allowed: {})", op, r.string(), list));
  return t;
}

}  // namespace

// "pypto", "ascendc" or {"style": ..., "cores": N, "max_tasks_per_psg": N, "grid": G,
// "block": [...]}; each key belongs to one style. An spmd block region without a grid launches
// one block per region.
void read_partition(const JsonReader& p, KernelSpec& s) {
  static const std::string kStyles =
      fmt::format("{}", fmt::join(enum_names(kPartitionNames), ", "));
  std::string style;
  if (p.json().is_string()) {
    style = p.string();
    if (style == "spmd")
      p.fail("the spmd style needs its grid: {\"style\": \"spmd\", \"grid\": G}");
  } else if (p.json().is_object()) {
    p.check_keys({"style", "cores", "max_tasks_per_psg", "grid", "block", "source"});
    if (!p.has("style")) p.fail_at("style", std::string("missing (allowed: ") + kStyles + ")");
    style = p.at("style").string();
    s.cores = p.integer_or("cores", s.cores, 1);
    if (const auto m = p.find("max_tasks_per_psg")) {
      if (!m->json().is_number_integer() || m->json().get<int64_t>() < 0)
        m->fail("expected an integer >= 0 (0: one task per tile chain), got " + m->json().dump());
      s.max_tasks_per_psg = m->json().get<int64_t>();
    }
    if (style == "spmd") {
      if (!p.has("grid") && !p.has("block"))
        p.fail_at("grid",
                  "missing (the number of blocks the spmd launch starts, >= 1; it may be omitted "
                  "when partition.block gives each block's region)");
      for (const char* other : {"cores", "max_tasks_per_psg"})
        if (p.has(other))
          p.at(other).fail(std::string("applies to the ") +
                           (other == std::string("cores") ? "ascendc" : "pypto") +
                           " style; an spmd launch states its grid");
      s.grid = p.integer_or("grid", s.grid, 1);
      if (const auto src = p.find("source"))
        s.triton = src->one_of({"ascendc", "triton"}) == "triton";
      if (const auto b = p.find("block")) {
        s.block = b->positive_ints();
        if (s.block.size() != s.shape.size())
          b->fail(fmt::format(
              "block {} has rank {} but shape {} has rank {} (one region extent "
              "per dim)",
              format_dims(s.block), s.block.size(), format_dims(s.shape), s.shape.size()));
        const int64_t regions = region_count(s.shape, s.block);
        if (!p.has("grid")) s.grid = regions;
      }
    } else {
      for (const char* key : {"grid", "block", "source"})
        if (p.has(key)) p.at(key).fail("applies to the spmd style only (style is '" + style + "')");
    }
  } else {
    p.fail(
        "expected \"pypto\", \"ascendc\", {\"style\": ..., \"cores\": N} or "
        "{\"style\": \"spmd\", \"grid\": G}");
  }
  if (const auto named = enum_named(kPartitionNames, style))
    s.partition = *named;
  else
    p.fail("unknown style '" + style + "' (allowed: " + kStyles + ")");
}

KernelSpec kernel_spec_from_json(const nlohmann::json& doc, const std::string& origin,
                                 const std::set<std::string>& caller_keys) {
  const JsonReader r(doc, origin);
  std::vector<std::string> allowed = {"buffer_count", "dim", "dtype",  "loop_axis",
                                      "loop_count",   "op",  "params", "partition",
                                      "shape",        "tile"};
  allowed.insert(allowed.end(), caller_keys.begin(), caller_keys.end());
  r.check_keys(allowed);
  KernelSpec s;
  s.op = r.at("op").string();
  if (!find_family(s.op)) r.at("op").fail(unknown_op_message(s.op));
  s.shape = r.at("shape").positive_ints();
  const auto rank = static_cast<int64_t>(s.shape.size());
  if (rank > 5) r.at("shape").fail("at most 5 dims are supported", ErrorKind::kLimits);
  if (const auto d = r.find("dtype"))
    s.dtype = read_dtype(*d, s.op, op_dtypes(find_op(s.op)->record));
  s.tile = r.at("tile").positive_ints();
  if (const auto d = r.find("dim")) s.dims = read_dims(*d, rank);
  s.loop_count = r.integer_or("loop_count", s.loop_count, 1);
  s.loop_axis = static_cast<int>(r.integer_or("loop_axis", s.loop_axis, 0, rank - 1));
  s.buffer_count = static_cast<int>(r.integer_or("buffer_count", s.buffer_count, 1, 8));
  if (const auto p = r.find("partition")) read_partition(*p, s);  // after shape: block's rank
  // Params are checked here, so a typo is one load error naming the file and key.
  static const nlohmann::json kNoParams = nlohmann::json::object();
  const auto params = r.find("params");
  const JsonReader param_reader = params ? *params : JsonReader(kNoParams, origin, "params");
  validate_params(s.op, param_reader);
  if (params) s.params = params->json();
  check_spec_params(s, param_reader);
  check_work_size(s, origin);
  return s;
}

namespace {

// a * b, saturated at `cap` + 1 (no overflow for any int64 inputs >= 0).
int64_t capped_mul(int64_t a, int64_t b, int64_t cap) {
  const __int128 p = static_cast<__int128>(a) * b;
  return p > cap ? cap + 1 : static_cast<int64_t>(p);
}

}  // namespace

namespace {
std::atomic<int64_t> g_max_tasks{kDefaultMaxTasks};
}  // namespace

int64_t max_tasks() {
  return g_max_tasks.load(std::memory_order_relaxed);
}

void set_max_tasks(int64_t limit) {
  if (limit < 1) throw InternalError("set_max_tasks: the limit must be at least 1");
  g_max_tasks.store(limit, std::memory_order_relaxed);
}

int64_t implied_subtiles(const KernelSpec& spec) {
  // Per dim, the block regions times the sub-tiles of one region (or the tiles).
  constexpr int64_t kCap = int64_t{1} << 62;
  int64_t subtiles = 1;
  for (size_t d = 0; d < spec.shape.size() && d < spec.tile.size(); ++d) {
    const int64_t region = d < spec.block.size() ? spec.block[d] : spec.shape[d];
    const int64_t per_dim =
        capped_mul(ceil_div(spec.shape[d], region), ceil_div(region, spec.tile[d]), kCap);
    subtiles = std::min(capped_mul(subtiles, per_dim, kCap), kCap);
  }
  return subtiles;
}

void check_work_size(const KernelSpec& spec, const std::string& origin) {
  const std::string where = origin.empty() ? spec.op : origin;
  const int64_t bytes = dtype_bytes(spec.dtype);
  auto tensor_bytes = [&](const Dims& d) {
    int64_t n = bytes;
    for (int64_t x : d) n = capped_mul(n, x, kMaxTensorBytes);
    return n;
  };
  const KernelFamily* family = find_family(spec.op);
  auto largest = [&](const Dims& d) {
    if (!family || !family->tensors_of) return tensor_bytes(d);
    int64_t most = 0;
    for (const Dims& t : family->tensors_of(d)) most = std::max(most, tensor_bytes(t));
    return most;
  };
  for (const auto& [key, dims] : {std::pair<const char*, const Dims*>{"shape", &spec.shape},
                                  {"tile", &spec.tile},
                                  {"partition.block", &spec.block}})
    if (!dims->empty() && largest(*dims) > kMaxTensorBytes)
      throw Error(
          fmt::format("{}: {}: {} {} is over {} B (1 TiB), more than any device holds", where, key,
                      format_dims(*dims), dtype_name(spec.dtype), kMaxTensorBytes),
          ErrorKind::kLimits);
  const int64_t subtiles = implied_subtiles(spec);
  if (subtiles > max_tasks())
    throw Error(fmt::format("{}: tile: {} over shape {} implies {:.3g} tasks (sub-tiles); the "
                            "limit is {:.3g}; raise it with --max-tasks or use a larger tile",
                            where, format_dims(spec.tile), format_dims(spec.shape),
                            static_cast<double>(subtiles), static_cast<double>(max_tasks())),
                ErrorKind::kLimits);
}

}  // namespace tilesim
