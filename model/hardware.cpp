#include "model/hardware.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <deque>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "model/error.hpp"
#include "model/json_reader.hpp"
#include "model/nearest_name.hpp"

namespace tilesim {

namespace {
constexpr double kBig = 1e12;

template <class T>
HardwareParam make_param(const char* key, T& (*field)(Hardware&), double min, double max,
                         const char* unit, const char* doc) {
  return {key, field, min, max, unit, doc, ""};
}

// Tags each parameter of a part with the part's name.
void add_part(std::vector<HardwareParam>& out, const char* part,
              std::initializer_list<HardwareParam> params) {
  for (HardwareParam p : params) {
    p.part = part;
    out.push_back(p);
  }
}

// The table: one entry per parameter, P(member path, min, max, unit, one-line doc). The key is the
// member's path, stringified; the type is the member's. Values and sources live in
// configs/hardware/*.json; docs/hardware.md is rendered from this table (model/hardware_doc.cpp).
// clang-format off
#define P(path, ...) make_param(#path, +[](Hardware& h) -> auto& { return h.path; }, __VA_ARGS__)
// clang-format on

std::vector<HardwareParam> make_table() {
  const std::initializer_list<HardwareParam> chip = {
      P(clock_mhz, 100, 10000, "MHz", "core clock: converts cycles to time"),
      P(cores.aiv, 1, 1024, "cores", "vector cores (AIV)"),
      P(cores.aic, 0, 1024, "cores", "cube cores (AIC)"),
      P(ub.bytes, 1024, 1 << 30, "B", "Unified Buffer per AIV"),
      P(ub.align_bytes, 1, 4096, "B", "UB allocations and a tile's last dim align to it"),
      P(l1.bytes, 1024, 1 << 30, "B", "L1 buffer per AIC"),
      P(l1.align_bytes, 1, 4096, "B", "L1 allocations align to it"),
      P(l0a.bytes, 1024, 1 << 30, "B", "L0A (cube left operand) per AIC"),
      P(l0a.align_bytes, 1, 65536, "B", "L0A allocations align to it (one fractal)"),
      P(l0b.bytes, 1024, 1 << 30, "B", "L0B (cube right operand) per AIC"),
      P(l0b.align_bytes, 1, 65536, "B", "L0B allocations align to it (one fractal)"),
      P(l0c.bytes, 1024, 1 << 30, "B", "L0C (cube accumulator) per AIC"),
      P(l0c.align_bytes, 1, 65536, "B", "L0C allocations align to it"),
      P(dma.read.issue_cycles, 0, 1e6, "cycles", "GM->UB/L1: cost per instruction"),
      P(dma.read.burst_cycles, 0, 1e6, "cycles", "GM->UB/L1: cost per burst"),
      P(dma.read.peak_bytes_per_cycle, 0.01, 1e6, "B/cycle",
        "GM->UB/L1: per-core rate streaming from HBM (L2 misses)"),
      P(dma.read.l2_hit_bytes_per_cycle, 0.01, 1e6, "B/cycle",
        "GM->UB/L1: per-core rate when the data is in L2 (hits)"),
      P(dma.read.latency_cycles, 0, 1e7, "cycles", "GM->UB/L1: delay until the data is usable"),
      P(dma.write.issue_cycles, 0, 1e6, "cycles", "UB/L0C->GM: cost per instruction"),
      P(dma.write.burst_cycles, 0, 1e6, "cycles", "UB/L0C->GM: cost per burst"),
      P(dma.write.peak_bytes_per_cycle, 0.01, 1e6, "B/cycle", "UB/L0C->GM: engine peak"),
      P(dma.write.latency_cycles, 0, 1e7, "cycles", "UB/L0C->GM: delay until the data lands"),
      P(dma.l1.nd2nz_row_cycles, 0, 1e6, "cycles",
        "GM->L1 ND2NZ (AIC MTE2): cost per ND row converted to the NZ layout"),
      P(dma.l1.nd2nz_bytes_per_cycle, 0.01, 1e6, "B/cycle",
        "GM->L1 ND2NZ (AIC MTE2): per-core rate of strided ND rows from HBM (L2 misses)"),
      P(dma.l1.peak_bytes_per_cycle, 0.01, 1e6, "B/cycle",
        "GM->L1 plain copy (AIC MTE2, zN / ND2ND bursts): per-core rate from HBM (L2 misses)"),
      P(dma.l1.l2_hit_bytes_per_cycle, 0.01, 1e6, "B/cycle",
        "GM->L1 (AIC MTE2): per-core rate when the data is in L2 (hits)"),
      P(dma.gm_granule_bytes, 1, 1 << 20, "B", "GM granule; a misaligned burst pays more"),
      P(gm.hbm_bandwidth_gbps, 1, 1e6, "GB/s", "HBM read bandwidth all cores' DMA shares"),
      P(gm.hbm_write_bandwidth_gbps, 1, 1e6, "GB/s",
        "HBM write bandwidth: a written-back byte costs read / write bandwidth read bytes"),
      P(gm.hbm_queue_ns, 0, 1e6, "ns",
        "a memory wait on a task's critical path waits this x u / (1 - u) more at HBM use u"),
      P(l2.bytes, 0, 1e12, "B", "L2 cache shared by all cores"),
      P(l2.bandwidth_gbps, 1, 1e7, "GB/s",
        "L2 bandwidth all cores' GM traffic shares, reads and writes together"),
      P(l2.read_bandwidth_gbps, 1, 1e7, "GB/s",
        "L2 bandwidth all cores' GM reads share (hits and misses), within l2.bandwidth_gbps"),
      P(l2.same_line_request_ns, 0, 1e6, "ns",
        "requests for one L2 line by several cores at once are served one after another, each "
        "this long (a request: a DMA burst's piece within one line)"),
      P(vector.bytes_per_repeat, 32, 65536, "B", "bytes one vector repeat processes"),
      P(vector.max_repeats, 1, 1 << 20, "repeats", "repeats one instruction may carry"),
      P(vector.issue_cycles, 0, 1e6, "cycles", "cost per vector instruction"),
      P(vector.simple.cycles_per_repeat, 0.01, 1e4, "cycles", "add, mul, max, ...: per repeat"),
      P(vector.simple.latency_cycles, 0, 1e6, "cycles", "add, mul, max, ...: latency"),
      P(vector.bank_conflict_cycles_per_repeat, 0, 1e4, "cycles",
        "add, mul, ...: per repeat when the two sources share a UB bank group"),
      P(vector.complex.cycles_per_repeat, 0.01, 1e4, "cycles",
        "sqrt, reciprocal, divs: per repeat"),
      P(vector.complex.latency_cycles, 0, 1e6, "cycles", "sqrt, reciprocal, divs: latency"),
      P(vector.exp_ln.cycles_per_repeat, 0.01, 1e4, "cycles", "exp, ln (one source): per repeat"),
      P(vector.exp_ln.latency_cycles, 0, 1e6, "cycles", "exp, ln: latency"),
      P(vector.div.cycles_per_repeat, 0.01, 1e4, "cycles",
        "div (two sources, sharing a bank group): per repeat"),
      P(vector.div.latency_cycles, 0, 1e6, "cycles", "div: latency"),
      P(vector.rsqrt.cycles_per_repeat, 0.01, 1e4, "cycles", "rsqrt (one source): per repeat"),
      P(vector.rsqrt.latency_cycles, 0, 1e6, "cycles", "rsqrt: latency"),
      P(vector.reduce.cycles_per_repeat, 0.01, 1e4, "cycles", "in-row reduce: per repeat"),
      P(vector.reduce.latency_cycles, 0, 1e6, "cycles", "in-row reduce: latency"),
      P(vector.block_reduce_cycles_per_repeat, 0.01, 1e4, "cycles",
        "block reduce (vcgadd, vcgmax: each 32 B block of a repeat to one value): per repeat, its "
        "latency the in-row reduce's"),
      P(vector.bank_groups, 1, 1024, "groups",
        "UB bank groups: 32 B blocks fall in them in turn; one block per group per beat"),
      P(scalar.index_compare_cycles_per_element, 0, 1e6, "cycles",
        "an integer (int32 / int64) compare and its select, which the vector unit's Cmp does not "
        "take, run on the scalar unit: per element"),
      P(cube.fractal, 1, 1024, "elements", "cube fractal edge: m, k and n step by it"),
      P(cube.fp16_cycles_per_fractal, 0.01, 1e4, "cycles", "fp16 cube: per fractal"),
      P(cube.fp32_cycles_per_fractal, 0.01, 1e4, "cycles", "fp32 cube: per fractal"),
      P(cube.int8_cycles_per_fractal, 0.01, 1e4, "cycles", "int8 cube: per fractal"),
      P(cube.block_overhead_cycles, 0, 1e6, "cycles", "cube: per L0 block"),
      P(cube.mte1_issue_cycles, 0, 1e6, "cycles", "MTE1 L1->L0A/L0B: cost per load"),
      P(cube.mte1_l0a_bytes_per_cycle, 0.01, 1e6, "B/cycle", "MTE1 L1->L0A: rate"),
      P(cube.mte1_l0b_bytes_per_cycle, 0.01, 1e6, "B/cycle", "MTE1 L1->L0B: rate"),
      P(cube.fixpipe_l0c_bytes_per_cycle, 0.01, 1e6, "B/cycle",
        "fixpipe: rate reading the accumulator out of L0C"),
      P(cube.fixpipe_out_bytes_per_cycle, 0.01, 1e6, "B/cycle",
        "fixpipe: rate of the converted (cast / quantised) output towards GM"),
      P(cube.fixpipe_gm_bytes_per_cycle, 0.01, 1e6, "B/cycle",
        "fixpipe: rate of the output rows' write into GM"),
  };
  const std::initializer_list<HardwareParam> runtime = {
      P(scheduler.max_threads, 1, 64, "threads", "scheduler AICPU threads at most"),
      P(scheduler.aic_per_thread, 1, 1024, "cores",
        "AIC cores per scheduler thread on average: fewer AIC, fewer threads"),
      P(scheduler.dispatch_cycles, 0, 1e7, "cycles", "per task dispatched"),
      P(scheduler.resolve_cycles, 0, 1e7, "cycles", "per successor count decremented"),
      P(scheduler.resolve_last_cycles, 0, 1e7, "cycles",
        "per successor made ready by its last predecessor (no atomic decrement)"),
      P(scheduler.completion_cycles, 0, 1e7, "cycles", "per completion handled"),
      P(scheduler.poll_ns, 0, 1e6, "ns", "polling one core's status, serial per thread"),
      P(scheduler.notify_ns, 0, 1e6, "ns", "AICPU->AICore: task start notice"),
      P(scheduler.completion_notify_ns, 0, 1e6, "ns", "AICore->AICPU: completion notice"),
      P(scheduler.task_gap_ns, 0, 1e6, "ns", "gap between back-to-back tasks on a core"),
      P(scheduler.block_start_ns, 0, 1e6, "ns",
        "SPMD: from a core being free to the next block starting on it"),
      P(scheduler.handshake_cores, 0, 1024, "cores",
        "PyPTO runtime start: cores each thread shakes hands with (one poll each) first"),
      P(control.root_build_ns, 0, 1e9, "ns", "control AICPU: per root function built"),
      P(control.task_build_ns, 0, 1e9, "ns", "control AICPU: per task of a root built"),
      P(control.device_task_submit_ns, 0, 1e9, "ns", "per stitched device task"),
      P(control.stitch_function_max_num, 1, 1024, "functions",
        "most roots per device task (a run config's runtime.stitch_function_max_num wins)"),
      P(control.cube_merge_copyin_bytes, 0, 1e12, "B",
        "PyPTO's cube merge: a packed cube task's GM -> L1 copy-in bytes at most (0: no cap)"),
      P(kernel.vector_launch_us, 0, 1e6, "us",
        "kernel on vector cores only: from its start to its first core's start"),
      P(kernel.mixed_launch_us, 0, 1e6, "us",
        "kernel that starts cube cores (cube-only or mixed): from its start to its first core's"),
      P(kernel.end_us, 0, 1e6, "us",
        "every kernel: from the runtime seeing its last task's end to the kernel's end"),
      P(kernel.core_start_ns, 0, 1e6, "ns",
        "SPMD: the launch starts the cores it uses one after another, this far apart"),
      P(kernel.triton_op_cycles, 0, 1e6, "cycles",
        "Triton-Ascend compiled loop: per body operation (load, vector op, store) per iteration, "
        "not hidden by multi-buffering"),
      P(kernel.cross_core_flag_ns, 0, 1e6, "ns",
        "SPMD mixed block: from CrossCoreSetFlag on the AIC (or both AIVs) to the waiting "
        "partner core going on"),
  };
  const std::initializer_list<HardwareParam> limits = {
      P(limits.max_tile_elements, 1, kBig, "elements", "largest prod(tile) the rulebook allows"),
      P(limits.max_auto_tiles, 1, kBig, "tiles", "largest auto_tiles the rulebook allows"),
  };
  std::vector<HardwareParam> t;
  add_part(t, "The chip", chip);
  add_part(t, "The AICPU runtime", runtime);
  add_part(t, "The rulebook's limits", limits);
  return t;
}
}  // namespace
#undef P

const std::vector<HardwareParam>& hardware_params() {
  static const std::vector<HardwareParam> params = make_table();
  return params;
}

const HardwareParam* find_hardware_param(const std::string& key) {
  for (const auto& p : hardware_params())
    if (key == p.key) return &p;
  return nullptr;
}

double get_param(const Hardware& hw, const HardwareParam& p) {
  return std::visit(
      [&](auto field) -> double { return static_cast<double>(field(const_cast<Hardware&>(hw))); },
      p.field);
}

void set_param(Hardware& hw, const HardwareParam& p, double value) {
  std::visit(
      [&](auto field) {
        auto& member = field(hw);
        member = static_cast<std::remove_reference_t<decltype(member)>>(value);
      },
      p.field);
}

namespace {

// The parameter key closest to a misspelt one (edit distance at most 3), or "".
std::string nearest_key(const std::string& key) {
  std::vector<std::string> keys;
  for (const auto& p : hardware_params()) keys.emplace_back(p.key);
  return nearest_name(key, keys, 3);
}

std::string allowed_range(const HardwareParam& p) {
  return fmt::format("{} to {} {}", p.min, p.max, p.unit);
}

// One parameter's entry: {"value": ..., "source": "..."[, "fitted": true|false]}.
void check_entry(const JsonReader& e, const HardwareParam& p) {
  if (!e.json().is_object())
    e.fail("expected an object {\"value\": ..., \"source\": \"...\"}, got " + e.json().dump());
  e.check_keys({"value", "source", "fitted"});
  if (!e.has("source") || !e.json()["source"].is_string() ||
      e.json()["source"].get<std::string>().empty())
    e.fail("source missing: every value must say where it comes from (a non-empty string)");
  if (e.has("fitted")) e.at("fitted").boolean();
  const JsonReader v = e.at("value");
  const bool is_int = p.is_integer();
  if (is_int ? !v.json().is_number_integer() : !v.json().is_number())
    v.fail(fmt::format("expected {} ({}), got {}", is_int ? "an integer" : "a number",
                       allowed_range(p), v.json().dump()));
  const double x = v.json().get<double>();
  if (!std::isfinite(x) || x < p.min || x > p.max)
    v.fail(fmt::format("out of range: {} (allowed {})", v.json().dump(), allowed_range(p)));
}

std::string shipped_list() {
  const auto names = shipped_hardware_names();
  return names.empty() ? std::string("none found") : fmt::format("{}", fmt::join(names, ", "));
}

// "base": a path relative to the file, or a shipped name (as a run config's "hardware" is found).
std::filesystem::path base_file(const JsonReader& base) {
  const std::string named = base.string();
  if (auto found = find_hardware_file(base.origin(), named)) return *found;
  base.fail(fmt::format(
      "'{}' is neither a file beside this one ({}) nor a shipped name ({})", named,
      (std::filesystem::path(base.origin()).parent_path() / named).string(), shipped_list()));
}

std::string canonical_name(const std::string& file) {
  std::error_code ec;
  const auto c = std::filesystem::weakly_canonical(file, ec);
  return ec ? file : c.string();
}

// The entries of `doc` over those of its bases, each checked in the file that states it.
struct Merged {
  std::string name, description;
  std::map<std::string, nlohmann::ordered_json> entries;
  std::vector<std::string> files;  // this file, then its bases
};

// Keys that left the hardware file, and where their setting lives now.
const char* retired_key_home(const std::string& key) {
  static const std::map<std::string, const char*> retired = {
      {"scheduler.oldest_root_first",
       "the ready-queue order is a runtime policy of the run or sweep config, "
       "\"runtime\": {\"ready_order\": \"oldest_root_first\" | \"fifo\"}"},
      {"gm.l2_bandwidth_gbps", "nothing read it; L2 is modelled by l2.bytes (sim/l2_residency)"},
  };
  const auto it = retired.find(key);
  return it == retired.end() ? nullptr : it->second;
}

// One file of a chain of bases: its name and the entries it states itself.
struct Level {
  std::string name, description;
  std::map<std::string, nlohmann::ordered_json> own;
};

Level read_level(const JsonReader& top) {
  top.check_keys({"name", "description", "base", "parameters"});
  Level level{top.at("name").string(), top.string_or("description", ""), {}};
  // A file with a base may leave "parameters" out: it is then its base under another name.
  const auto params = top.has("base") ? top.find("parameters") : top.at("parameters");
  if (params)
    params->for_each_member([&](const std::string& key, const JsonReader& e) {
      const HardwareParam* p = find_hardware_param(key);
      if (!p) {
        if (const char* moved = retired_key_home(key))
          e.fail(fmt::format("no longer a hardware parameter: {}", moved));
        const std::string near = nearest_key(key);
        e.fail(fmt::format("unknown key{} (every key is listed in docs/hardware.md)",
                           near.empty() ? "" : "; did you mean " + near + "?"));
      }
      check_entry(e, *p);
      // The schema's order: value, source, fitted.
      auto& entry = level.own[key];
      for (const char* k : {"value", "source", "fitted"})
        if (e.has(k)) entry[k] = nlohmann::ordered_json::parse(e.json()[k].dump());
    });
  return level;
}

// Walks the chain of bases down (a loop, so a chain of any length costs memory and time linear
// in it), then lays each file's entries over its base's, from the deepest base up.
Merged merge(const nlohmann::json& doc, const std::string& origin) {
  std::deque<nlohmann::json> bases;  // the base documents read (stable addresses for the readers)
  std::vector<Level> levels;
  Merged m;
  std::set<std::string> seen;  // canonical paths, to detect a cycle of bases
  for (JsonReader file(doc, origin);;) {
    levels.push_back(read_level(file));
    m.files.push_back(file.origin());
    seen.insert(canonical_name(file.origin()));
    const auto base = file.find("base");
    if (!base) break;
    const auto path = base_file(*base);
    if (seen.count(canonical_name(path.string())))
      base->fail(
          fmt::format("cycle of bases: {} -> {}", fmt::join(m.files, " -> "), path.string()));
    bases.push_back(JsonReader::parse_file(path, "hardware file (a base)"));
    file = JsonReader(bases.back(), path.string());
  }
  m.name = levels.front().name;
  m.description = levels.front().description;
  for (auto level = levels.rbegin(); level != levels.rend(); ++level)
    for (auto& [key, entry] : level->own) m.entries[key] = std::move(entry);
  return m;
}

}  // namespace

nlohmann::ordered_json merged_hardware_json(const nlohmann::json& doc, const std::string& origin) {
  const Merged m = merge(doc, origin);
  nlohmann::ordered_json out;
  out["name"] = m.name;
  if (!m.description.empty()) out["description"] = m.description;
  auto& params = out["parameters"] = nlohmann::ordered_json::object();
  for (const auto& p : hardware_params()) {
    const auto it = m.entries.find(p.key);
    if (it == m.entries.end()) {
      const std::vector<std::string> bases(m.files.begin() + 1, m.files.end());
      throw Error(fmt::format(
          "{}: parameters.{}: missing{}: every parameter needs a value ({}, {}) and a source",
          origin, p.key,
          bases.empty()
              ? ""
              : fmt::format(" (neither here nor in its bases {})", fmt::join(bases, ", ")),
          p.is_integer() ? "an integer" : "a number", allowed_range(p)));
    }
    params[p.key] = it->second;
  }
  return out;
}

nlohmann::ordered_json merged_hardware_file(const std::filesystem::path& file) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    throw Error(file.string() + ": cannot open hardware file (give a path or a shipped name: " +
                shipped_list() + ")");
  return merged_hardware_json(JsonReader::parse_file(file, "hardware file"), file.string());
}

nlohmann::ordered_json merged_hardware_file(const std::filesystem::path& file,
                                            const std::vector<std::string>& settings) {
  if (settings.empty()) return merged_hardware_file(file);
  const nlohmann::ordered_json base = merged_hardware_file(file);
  nlohmann::json doc = {{"name", base["name"]}, {"base", std::filesystem::absolute(file).string()}};
  if (base.contains("description")) doc["description"] = base["description"];
  nlohmann::json& params = doc["parameters"] = nlohmann::json::object();
  std::vector<std::string> shown;
  for (const auto& text : settings) {
    const auto eq = text.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
      throw Error(
          fmt::format("--set {}: expected KEY=VALUE (a hardware parameter of "
                      "docs/hardware.md and its value, e.g. gm.hbm_bandwidth_gbps=800)",
                      text));
    const std::string key = text.substr(0, eq), value = text.substr(eq + 1);
    const nlohmann::json v = nlohmann::json::parse(value, nullptr, false);
    if (!v.is_number()) throw Error(fmt::format("--set {}: '{}' is not a number", text, value));
    if (params.contains(key)) throw Error(fmt::format("--set {}: {} is set twice", text, key));
    params[key] = {{"value", v}, {"source", "what-if: --set " + text}};
    shown.push_back(key + "=" + value);
  }
  nlohmann::ordered_json merged = merged_hardware_json(doc, "--set");
  merged["name"] =
      fmt::format("{} (what-if: {})", base["name"].get<std::string>(), fmt::join(shown, ", "));
  return merged;
}

namespace {
Hardware hardware_from_merged(const nlohmann::ordered_json& doc, const std::string& origin) {
  Hardware hw;
  hw.path = origin;
  hw.name = doc["name"].get<std::string>();
  for (const auto& p : hardware_params())
    set_param(hw, p, doc["parameters"][p.key]["value"].get<double>());
  if (hw.vector.bytes_per_repeat % hw.ub.align_bytes != 0)
    throw Error(origin + ": parameters.vector.bytes_per_repeat: must be a multiple of " +
                "ub.align_bytes (" + std::to_string(hw.ub.align_bytes) + ")");
  return hw;
}
}  // namespace

Hardware hardware_from_json(const nlohmann::json& doc, const std::string& origin) {
  return hardware_from_merged(merged_hardware_json(doc, origin), origin);
}

Hardware load_hardware(const std::filesystem::path& file) {
  return hardware_from_merged(merged_hardware_file(file), file.string());
}

Hardware load_hardware(const std::filesystem::path& file,
                       const std::vector<std::string>& settings) {
  return hardware_from_merged(merged_hardware_file(file, settings), file.string());
}

std::filesystem::path default_config_dir() {
  if (const char* env = std::getenv("TILESIM_CONFIG_DIR")) return env;
  // An installed tilesim (cmake --install): <prefix>/bin/tilesim finds <prefix>/share/tilesim.
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const auto installed = exe.parent_path().parent_path() / "share" / "tilesim" / "configs";
    if (std::filesystem::is_directory(installed / "hardware", ec)) return installed;
  }
#ifdef TILESIM_SOURCE_CONFIG_DIR
  return TILESIM_SOURCE_CONFIG_DIR;
#else
  return "configs";
#endif
}

std::filesystem::path default_hardware_path() {
  return shipped_hardware_path("ascend910b1");
}

std::filesystem::path shipped_hardware_path(const std::string& name) {
  return default_config_dir() / "hardware" / (name + ".json");
}

std::optional<std::filesystem::path> find_hardware_file(const std::filesystem::path& referrer,
                                                        const std::string& named) {
  const std::filesystem::path p(named);
  const auto beside = p.is_absolute() ? p : referrer.parent_path() / p;
  std::error_code ec;
  if (std::filesystem::is_regular_file(beside, ec)) return beside;
  if (p.is_relative() && !named.empty())
    for (const auto& shipped :
         {default_config_dir() / "hardware" / p, shipped_hardware_path(named)})
      if (std::filesystem::is_regular_file(shipped, ec)) return shipped;
  return std::nullopt;
}

std::vector<std::string> shipped_hardware_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(default_config_dir() / "hardware", ec))
    if (e.path().extension() == ".json") names.push_back(e.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace tilesim
