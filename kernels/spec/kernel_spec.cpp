#include "kernels/spec/kernel_spec.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <atomic>

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
    p.check_keys({"style", "cores", "max_tasks_per_psg", "grid", "block", "source", "preload"});
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
      s.preload = static_cast<int>(p.integer_or("preload", s.preload, 0, 16));
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
      for (const char* key : {"grid", "block", "source", "preload"})
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

int64_t capped_mul(int64_t a, int64_t b, int64_t cap) {
  const __int128 p = static_cast<__int128>(a) * b;
  return p > cap ? cap + 1 : static_cast<int64_t>(p);
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

}  // namespace tilesim
