#include "tools/analyses/candidate_json.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <tuple>
#include <type_traits>
#include <utility>

#include "model/error.hpp"

namespace tilesim {

// nlohmann's ADL hooks for the records a candidate is made of (named fields: small records).
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PsgMetrics, name, count, sum_dur_us, avg_dur_us)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PipeMetrics, pipe, mean_us, max_us, total_us)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Diagnostics, contiguous_bytes, prod_tile, auto_tiles,
                                   reduction_segments, tile_exceeds_shape, ub_bytes, buffer_depth,
                                   limit_violations, tasks, launches)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SpmdFigures, valid, grid, cores, cores_used, waves, tail_blocks,
                                   tail_occupancy, blocks_per_core, utilisation, core_time_us,
                                   block_busy_us, tail_exposed_us, block_overhead_share,
                                   subtiles_min, subtiles_max, copy_bytes, burst_bytes,
                                   block_gm_bytes)

namespace {

// What a fresh run's figures are, checked on a candidate read back from a shard: each time finite,
// >= 0 and at most kMaxRunUs; an ok candidate carries no refusal, a refused one its reason; the
// kernel time is the sum of its parts, and no pipe is busier than the span of all tasks. (An edited
// shard would otherwise rank a refused tile, or a time no run has, first.)
constexpr double kMaxRunUs = 1e12;  // no model run lasts 11 days (a swimlane's bound too)

// A candidate's times, by their names in a shard's metrics.
std::array<std::pair<const char*, double>, 11> times_of(const CandidateResult& c) {
  return {{{"gen_time_us", c.gen_time_us},
           {"kernel_time_us", c.kernel_time_us},
           {"launch_us", c.launch_us},
           {"handshake_us", c.handshake_us},
           {"head_us", c.head_us},
           {"root_build_us", c.root_build_us},
           {"dispatch_us", c.dispatch_us},
           {"completion_us", c.completion_us},
           {"end_us", c.end_us},
           {"aicpu_build_us", c.aicpu_build_us},
           {"aicpu_schedule_us", c.aicpu_schedule_us}}};
}

bool equal_sum(double total, double sum) {
  constexpr double kRel = 1e-9;  // the figures' own rounding, summed in another order
  return std::abs(total - sum) <= kRel * std::max(1.0, std::abs(total));
}

void check_candidate_figures(const CandidateResult& c, const std::string& origin) {
  const auto fail = [&](const std::string& what) {
    throw Error(
        fmt::format("{}: results: candidate {}: {} (write shard files with tilesim sweep "
                    "--shard; an edited shard is refused)",
                    origin, c.index, what));
  };
  for (const auto& [name, v] : times_of(c))
    if (!std::isfinite(v) || v < 0 || v > kMaxRunUs)
      fail(fmt::format("metrics.{} is {} (a time is finite, >= 0 and at most {:g} us)", name, v,
                       kMaxRunUs));
  if (!c.ok) {
    if (c.reason.empty() || c.reject_class.empty())
      fail("refused (ok false) without a reject_class and a reason");
    return;
  }
  if (!c.reason.empty() || !c.reject_class.empty())
    fail(fmt::format("ok, yet it carries a refusal ({}: {})", c.reject_class, c.reason));
  if (!(c.gen_time_us > 0)) fail("ok with metrics.gen_time_us 0 (an evaluated run has tasks)");
  if (!equal_sum(c.head_us, c.root_build_us + c.dispatch_us))
    fail(fmt::format("metrics.head_us {} is not root build + dispatch ({})", c.head_us,
                     c.root_build_us + c.dispatch_us));
  const double parts =
      c.launch_us + c.handshake_us + c.head_us + c.gen_time_us + c.completion_us + c.end_us;
  if (!equal_sum(c.kernel_time_us, parts))
    fail(
        fmt::format("metrics.kernel_time_us {} is not the sum of its parts ({}: launch + "
                    "hand-shake + head + gen_time + completion + end)",
                    c.kernel_time_us, parts));
  for (const auto& p : c.pipes)
    if (!std::isfinite(p.max_us) || p.max_us < 0 || p.max_us > c.gen_time_us * (1 + 1e-9))
      fail(
          fmt::format("pipe {} busy {} us on one core, more than gen_time_us {} (the span of "
                      "all tasks)",
                      p.pipe, p.max_us, c.gen_time_us));
}

// A per-core record's fields, in the order of its array.
constexpr auto kCoreFields =
    std::make_tuple(&CoreMetrics::core, &CoreMetrics::type, &CoreMetrics::execute_task_num,
                    &CoreMetrics::core_total_work_time_us, &CoreMetrics::total_wait_time_us,
                    &CoreMetrics::wait_schedule_time_us, &CoreMetrics::wait_predecessor_time_us,
                    &CoreMetrics::busy_us, &CoreMetrics::mte2_us, &CoreMetrics::vec_us,
                    &CoreMetrics::cube_us, &CoreMetrics::mte3_us, &CoreMetrics::mte1_us);

nlohmann::json core_to_json(const CoreMetrics& c) {
  return std::apply([&](auto... f) { return nlohmann::json::array({nlohmann::json(c.*f)...}); },
                    kCoreFields);
}

CoreMetrics core_from_json(const nlohmann::json& j) {
  CoreMetrics c;
  if (!j.is_array() || j.size() != std::tuple_size_v<decltype(kCoreFields)>)
    throw nlohmann::json::other_error::create(501, "a per-core record has the wrong size", &j);
  size_t i = 0;
  std::apply([&](auto... f) { ((j.at(i++).get_to(c.*f)), ...); }, kCoreFields);
  return c;
}

}  // namespace

// A record's fields for the byte form (tools/formats/byte_record.hpp), one list for writing
// (const) and reading. Static: found by argument-dependent lookup, seen by no other file.
template <class C, class R>
concept RecordOf = std::is_same_v<std::remove_const_t<C>, R>;

template <class IO, RecordOf<CoreMetrics> C>
static void fields(IO& io, C& c) {
  std::apply([&](auto... f) { (io(c.*f), ...); }, kCoreFields);
}

template <class IO, RecordOf<PsgMetrics> C>
static void fields(IO& io, C& c) {
  io(c.name), io(c.count), io(c.sum_dur_us), io(c.avg_dur_us);
}

template <class IO, RecordOf<PipeMetrics> C>
static void fields(IO& io, C& c) {
  io(c.pipe), io(c.mean_us), io(c.max_us), io(c.total_us);
}

template <class IO, RecordOf<Diagnostics> C>
static void fields(IO& io, C& c) {
  io(c.contiguous_bytes), io(c.prod_tile), io(c.auto_tiles), io(c.reduction_segments);
  io(c.tile_exceeds_shape), io(c.ub_bytes), io(c.buffer_depth), io(c.limit_violations);
  io(c.tasks), io(c.launches);
}

template <class IO, RecordOf<SpmdFigures> C>
static void fields(IO& io, C& c) {
  io(c.valid), io(c.grid), io(c.cores), io(c.cores_used), io(c.waves), io(c.tail_blocks);
  io(c.tail_occupancy), io(c.blocks_per_core), io(c.utilisation), io(c.core_time_us);
  io(c.block_busy_us), io(c.tail_exposed_us), io(c.block_overhead_share), io(c.subtiles_min);
  io(c.subtiles_max), io(c.copy_bytes), io(c.burst_bytes), io(c.block_gm_bytes);
}

// What candidate_to_json holds, in its order (zones, series and the axis value are derived).
template <class IO, RecordOf<CandidateResult> C>
static void fields(IO& io, C& c) {
  io(c.index), io(c.tile), io(c.loop_count), io(c.grid), io(c.block), io(c.named_tiles);
  io(c.params), io(c.ok), io(c.reject_class), io(c.reason), io(c.contiguous_bytes);
  io(c.prod_tile), io(c.auto_tiles), io(c.tile_over_shape_dims), io(c.limit_violations);
  io(c.under_contiguous), io(c.diag), io(c.spmd), io(c.tasks), io(c.edges), io(c.root_functions);
  io(c.gm_read_bytes), io(c.gm_write_bytes), io(c.achieved_gm_gbps), io(c.per_core), io(c.psg);
  io(c.pipes), io(c.gen_time_us), io(c.kernel_time_us), io(c.launch_us), io(c.handshake_us);
  io(c.head_us), io(c.root_build_us), io(c.dispatch_us), io(c.completion_us), io(c.end_us);
  io(c.aicpu_build_us), io(c.aicpu_schedule_us);
}

void write_candidate_bytes(ByteWriter& out, const CandidateResult& c) {
  out(c);
}

CandidateResult candidate_from_bytes(ByteReader& in, const std::string& origin) {
  CandidateResult c;
  in(c);
  check_candidate_figures(c, origin);
  return c;
}

nlohmann::json candidate_to_json(const CandidateResult& c) {
  nlohmann::json per_core = nlohmann::json::array();
  for (const auto& core : c.per_core) per_core.push_back(core_to_json(core));
  nlohmann::json j = {{"index", c.index},
                      {"tile", c.tile},
                      {"loop_count", c.loop_count},
                      {"grid", c.grid},
                      {"block", c.block},
                      {"named_tiles", c.named_tiles},
                      {"params", c.params},
                      {"ok", c.ok},
                      {"reject_class", c.reject_class},
                      {"reason", c.reason},
                      {"contiguous_bytes", c.contiguous_bytes},
                      {"prod_tile", c.prod_tile},
                      {"auto_tiles", c.auto_tiles},
                      {"tile_over_shape_dims", c.tile_over_shape_dims},
                      {"limit_violations", c.limit_violations},
                      {"under_contiguous", c.under_contiguous},
                      {"diag", c.diag},
                      {"spmd", c.spmd},
                      {"metrics",
                       {{"tasks", c.tasks},
                        {"edges", c.edges},
                        {"root_functions", c.root_functions},
                        {"gm_read_bytes", c.gm_read_bytes},
                        {"gm_write_bytes", c.gm_write_bytes},
                        {"achieved_gm_gbps", c.achieved_gm_gbps},
                        {"per_core", per_core},
                        {"psg", c.psg},
                        {"pipes", c.pipes}}}};
  for (const auto& [name, v] : times_of(c)) j["metrics"][name] = v;
  return j;
}

CandidateResult candidate_from_json(const nlohmann::json& j, const std::string& origin) {
  CandidateResult c;
  try {
    j.at("index").get_to(c.index);
    j.at("tile").get_to(c.tile);
    j.at("loop_count").get_to(c.loop_count);
    j.at("grid").get_to(c.grid);
    j.at("block").get_to(c.block);
    if (j.contains("named_tiles")) j.at("named_tiles").get_to(c.named_tiles);  // older shards
    if (j.contains("params")) c.params = j.at("params");
    j.at("ok").get_to(c.ok);
    j.at("reject_class").get_to(c.reject_class);
    j.at("reason").get_to(c.reason);
    j.at("contiguous_bytes").get_to(c.contiguous_bytes);
    j.at("prod_tile").get_to(c.prod_tile);
    j.at("auto_tiles").get_to(c.auto_tiles);
    j.at("tile_over_shape_dims").get_to(c.tile_over_shape_dims);
    j.at("limit_violations").get_to(c.limit_violations);
    j.at("under_contiguous").get_to(c.under_contiguous);
    j.at("diag").get_to(c.diag);
    j.at("spmd").get_to(c.spmd);
    const auto& m = j.at("metrics");
    m.at("gen_time_us").get_to(c.gen_time_us);
    m.at("kernel_time_us").get_to(c.kernel_time_us);
    m.at("launch_us").get_to(c.launch_us);
    m.at("handshake_us").get_to(c.handshake_us);
    m.at("head_us").get_to(c.head_us);
    m.at("root_build_us").get_to(c.root_build_us);
    m.at("dispatch_us").get_to(c.dispatch_us);
    m.at("completion_us").get_to(c.completion_us);
    m.at("end_us").get_to(c.end_us);
    if (m.contains("aicpu_build_us")) m.at("aicpu_build_us").get_to(c.aicpu_build_us);  // older
    if (m.contains("aicpu_schedule_us")) m.at("aicpu_schedule_us").get_to(c.aicpu_schedule_us);
    m.at("tasks").get_to(c.tasks);
    m.at("edges").get_to(c.edges);
    m.at("root_functions").get_to(c.root_functions);
    m.at("gm_read_bytes").get_to(c.gm_read_bytes);
    m.at("gm_write_bytes").get_to(c.gm_write_bytes);
    m.at("achieved_gm_gbps").get_to(c.achieved_gm_gbps);
    for (const auto& core : m.at("per_core")) c.per_core.push_back(core_from_json(core));
    m.at("psg").get_to(c.psg);
    m.at("pipes").get_to(c.pipes);
  } catch (const nlohmann::json::exception& e) {
    throw Error(origin + ": results: a candidate record is malformed (" + e.what() +
                "; write shard files with tilesim sweep --shard)");
  }
  check_candidate_figures(c, origin);
  return c;
}

}  // namespace tilesim
