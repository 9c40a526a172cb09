#include "model/hardware.hpp"

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "model/error.hpp"

namespace tilesim {

namespace {
using H = Hardware;
constexpr double kBig = 1e12;
}  // namespace

const std::vector<HardwareParam>& hardware_params() {
  static const std::vector<HardwareParam> params = {
      {"clock_mhz", &H::clock_mhz, 100, 10000, "MHz"},
      {"cores.aiv", &H::aiv_cores, 1, 1024, "cores"},
      {"cores.aic", &H::aic_cores, 0, 1024, "cores"},
      {"ub.bytes", &H::ub_bytes, 1024, 1 << 30, "B"},
      {"ub.align_bytes", &H::ub_align_bytes, 1, 4096, "B"},
      {"l1.bytes", &H::l1_bytes, 1024, 1 << 30, "B"},
      {"l0a.bytes", &H::l0a_bytes, 1024, 1 << 30, "B"},
      {"l0b.bytes", &H::l0b_bytes, 1024, 1 << 30, "B"},
      {"l0c.bytes", &H::l0c_bytes, 1024, 1 << 30, "B"},
      {"dma.read.issue_cycles", &H::read_issue_cycles, 0, 1e6, "cycles"},
      {"dma.read.burst_cycles", &H::read_burst_cycles, 0, 1e6, "cycles"},
      {"dma.read.peak_bytes_per_cycle", &H::read_peak_bytes_per_cycle, 0.01, 1e6, "B/cycle"},
      {"dma.read.latency_cycles", &H::read_latency_cycles, 0, 1e7, "cycles"},
      {"dma.write.issue_cycles", &H::write_issue_cycles, 0, 1e6, "cycles"},
      {"dma.write.burst_cycles", &H::write_burst_cycles, 0, 1e6, "cycles"},
      {"dma.write.peak_bytes_per_cycle", &H::write_peak_bytes_per_cycle, 0.01, 1e6, "B/cycle"},
      {"dma.write.latency_cycles", &H::write_latency_cycles, 0, 1e7, "cycles"},
      {"dma.gm_granule_bytes", &H::gm_granule_bytes, 1, 1 << 20, "B"},
      {"gm.hbm_bandwidth_gbps", &H::hbm_bandwidth_gbps, 1, 1e6, "GB/s"},
      {"gm.l2_bandwidth_gbps", &H::l2_bandwidth_gbps, 1, 1e6, "GB/s"},
      {"l2.bytes", &H::l2_bytes, 0, 1e12, "B"},
      {"vector.bytes_per_repeat", &H::vector_bytes_per_repeat, 32, 65536, "B"},
      {"vector.max_repeats", &H::vector_max_repeats, 1, 1 << 20, "repeats"},
      {"vector.issue_cycles", &H::vector_issue_cycles, 0, 1e6, "cycles"},
      {"vector.simple.cycles_per_repeat", &H::vector_simple_cycles_per_repeat, 0.01, 1e4, "cycles"},
      {"vector.simple.latency_cycles", &H::vector_simple_latency_cycles, 0, 1e6, "cycles"},
      {"vector.complex.cycles_per_repeat", &H::vector_complex_cycles_per_repeat, 0.01, 1e4,
       "cycles"},
      {"vector.complex.latency_cycles", &H::vector_complex_latency_cycles, 0, 1e6, "cycles"},
      {"vector.reduce.cycles_per_repeat", &H::vector_reduce_cycles_per_repeat, 0.01, 1e4, "cycles"},
      {"vector.reduce.latency_cycles", &H::vector_reduce_latency_cycles, 0, 1e6, "cycles"},
      {"cube.fractal", &H::cube_fractal, 1, 1024, "elements"},
      {"cube.fp16_cycles_per_fractal", &H::cube_fp16_cycles_per_fractal, 0.01, 1e4, "cycles"},
      {"cube.fp32_cycles_per_fractal", &H::cube_fp32_cycles_per_fractal, 0.01, 1e4, "cycles"},
      {"cube.block_overhead_cycles", &H::cube_block_overhead_cycles, 0, 1e6, "cycles"},
      {"scheduler.threads", &H::scheduler_threads, 1, 64, "threads"},
      {"scheduler.dispatch_cycles", &H::dispatch_cycles, 0, 1e7, "cycles"},
      {"scheduler.resolve_cycles", &H::resolve_cycles, 0, 1e7, "cycles"},
      {"scheduler.completion_cycles", &H::completion_cycles, 0, 1e7, "cycles"},
      {"scheduler.poll_ns", &H::poll_ns, 0, 1e6, "ns"},
      {"scheduler.notify_ns", &H::notify_ns, 0, 1e6, "ns"},
      {"scheduler.completion_notify_ns", &H::completion_notify_ns, 0, 1e6, "ns"},
      {"scheduler.task_gap_ns", &H::task_gap_ns, 0, 1e6, "ns"},
      {"scheduler.oldest_root_first", &H::oldest_root_first, 0, 1, "flag"},
      {"control.root_build_ns", &H::root_build_ns, 0, 1e9, "ns"},
      {"control.task_build_ns", &H::task_build_ns, 0, 1e9, "ns"},
      {"control.device_task_submit_ns", &H::device_task_submit_ns, 0, 1e9, "ns"},
      {"control.stitch_function_max_num", &H::stitch_function_max_num, 1, 1 << 20, "functions"},
      {"kernel.launch_us", &H::kernel_launch_us, 0, 1e6, "us"},
      {"limits.max_tile_elements", &H::max_tile_elements, 1, kBig, "elements"},
      {"limits.max_auto_tiles", &H::max_auto_tiles, 1, kBig, "tiles"},
  };
  return params;
}

const HardwareParam* find_hardware_param(const std::string& key) {
  for (const auto& p : hardware_params())
    if (key == p.key) return &p;
  return nullptr;
}

double get_param(const Hardware& hw, const HardwareParam& p) {
  return std::visit([&](auto member) -> double { return static_cast<double>(hw.*member); },
                    p.field);
}

void set_param(Hardware& hw, const HardwareParam& p, double value) {
  std::visit(
      [&](auto member) {
        using T = std::remove_reference_t<decltype(hw.*member)>;
        hw.*member = static_cast<T>(value);
      },
      p.field);
}

Hardware hardware_from_json(const nlohmann::json& doc, const std::string& origin) {
  auto fail = [&](const std::string& where, const std::string& what) -> void {
    throw Error(origin + ": " + where + ": " + what);
  };
  if (!doc.is_object()) fail("top level", "expected a JSON object");
  static const std::set<std::string> top_keys = {"name", "description", "parameters"};
  for (auto it = doc.begin(); it != doc.end(); ++it)
    if (!top_keys.count(it.key()))
      fail(it.key(), "unknown key (allowed: name, description, parameters)");
  Hardware hw;
  hw.path = origin;
  if (!doc.contains("name") || !doc["name"].is_string()) fail("name", "missing or not a string");
  hw.name = doc["name"].get<std::string>();
  if (!doc.contains("parameters") || !doc["parameters"].is_object())
    fail("parameters", "missing or not an object");
  const auto& params = doc["parameters"];
  for (auto it = params.begin(); it != params.end(); ++it)
    if (!find_hardware_param(it.key()))
      fail("parameters." + it.key(), "unknown key (see docs/hardware.md for the list)");
  for (const auto& p : hardware_params()) {
    const std::string where = std::string("parameters.") + p.key;
    if (!params.contains(p.key)) fail(where, "missing");
    const auto& entry = params[p.key];
    if (!entry.is_object()) fail(where, "expected an object {\"value\": ..., \"source\": \"...\"}");
    for (auto e = entry.begin(); e != entry.end(); ++e)
      if (e.key() != "value" && e.key() != "source" && e.key() != "fitted")
        fail(where + "." + e.key(), "unknown key (allowed: value, source, fitted)");
    if (!entry.contains("source") || !entry["source"].is_string() ||
        entry["source"].get<std::string>().empty())
      fail(where + ".source", "missing: every value must say where it comes from");
    if (entry.contains("fitted") && !entry["fitted"].is_boolean())
      fail(where + ".fitted", "expected true or false");
    if (!entry.contains("value")) fail(where + ".value", "missing");
    const auto& v = entry["value"];
    const bool is_int = std::holds_alternative<int64_t Hardware::*>(p.field);
    if (is_int ? !v.is_number_integer() : !v.is_number())
      fail(where + ".value",
           std::string("expected ") + (is_int ? "an integer" : "a number") + ", got " + v.dump());
    const double x = v.get<double>();
    if (!std::isfinite(x) || x < p.min || x > p.max)
      fail(where + ".value", "out of range: " + v.dump() + " (allowed " +
                                 nlohmann::json(p.min).dump() + " to " +
                                 nlohmann::json(p.max).dump() + " " + p.unit + ")");
    set_param(hw, p, x);
  }
  if (hw.vector_bytes_per_repeat % hw.ub_align_bytes != 0)
    fail("parameters.vector.bytes_per_repeat", "must be a multiple of ub.align_bytes");
  return hw;
}

Hardware load_hardware(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) {
    std::set<std::string> names;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(default_config_dir() / "hardware", ec))
      if (e.path().extension() == ".json") names.insert(e.path().stem().string());
    std::string shipped;
    for (const auto& n : names) shipped += (shipped.empty() ? "" : ", ") + n;
    throw Error(file.string() + ": cannot open hardware file (give a path or a shipped name: " +
                (shipped.empty() ? std::string("none found") : shipped) + ")");
  }
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(in);
  } catch (const nlohmann::json::parse_error& e) {
    throw Error(file.string() + ": malformed JSON: " + e.what());
  }
  return hardware_from_json(doc, file.string());
}

std::filesystem::path default_config_dir() {
  if (const char* env = std::getenv("TILESIM_CONFIG_DIR")) return env;
#ifdef TILESIM_SOURCE_CONFIG_DIR
  return TILESIM_SOURCE_CONFIG_DIR;
#else
  return "configs";
#endif
}

std::filesystem::path default_hardware_path() {
  return default_config_dir() / "hardware" / "ascend910b1.json";
}

}  // namespace tilesim
