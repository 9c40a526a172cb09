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
constexpr double kBig = 1e12;

template <class T>
HardwareParam make_param(const char* key, T& (*field)(Hardware&), double min, double max,
                         const char* unit) {
  return {key, field, min, max, unit};
}
}  // namespace

// The key is spelled once: it is the member's path, stringified.
#define P(path, ...) \
  make_param(#path, +[](Hardware& h) -> auto& { return h.path; }, __VA_ARGS__)

const std::vector<HardwareParam>& hardware_params() {
  static const std::vector<HardwareParam> params = {
      P(clock_mhz, 100, 10000, "MHz"),
      P(cores.aiv, 1, 1024, "cores"),
      P(cores.aic, 0, 1024, "cores"),
      P(ub.bytes, 1024, 1 << 30, "B"),
      P(ub.align_bytes, 1, 4096, "B"),
      P(l1.bytes, 1024, 1 << 30, "B"),
      P(l0a.bytes, 1024, 1 << 30, "B"),
      P(l0b.bytes, 1024, 1 << 30, "B"),
      P(l0c.bytes, 1024, 1 << 30, "B"),
      P(dma.read.issue_cycles, 0, 1e6, "cycles"),
      P(dma.read.burst_cycles, 0, 1e6, "cycles"),
      P(dma.read.peak_bytes_per_cycle, 0.01, 1e6, "B/cycle"),
      P(dma.read.latency_cycles, 0, 1e7, "cycles"),
      P(dma.write.issue_cycles, 0, 1e6, "cycles"),
      P(dma.write.burst_cycles, 0, 1e6, "cycles"),
      P(dma.write.peak_bytes_per_cycle, 0.01, 1e6, "B/cycle"),
      P(dma.write.latency_cycles, 0, 1e7, "cycles"),
      P(dma.gm_granule_bytes, 1, 1 << 20, "B"),
      P(gm.hbm_bandwidth_gbps, 1, 1e6, "GB/s"),
      P(l2.bytes, 0, 1e12, "B"),
      P(vector.bytes_per_repeat, 32, 65536, "B"),
      P(vector.max_repeats, 1, 1 << 20, "repeats"),
      P(vector.issue_cycles, 0, 1e6, "cycles"),
      P(vector.simple.cycles_per_repeat, 0.01, 1e4, "cycles"),
      P(vector.simple.latency_cycles, 0, 1e6, "cycles"),
      P(vector.complex.cycles_per_repeat, 0.01, 1e4,
       "cycles"),
      P(vector.complex.latency_cycles, 0, 1e6, "cycles"),
      P(vector.reduce.cycles_per_repeat, 0.01, 1e4, "cycles"),
      P(vector.reduce.latency_cycles, 0, 1e6, "cycles"),
      P(cube.fractal, 1, 1024, "elements"),
      P(cube.fp16_cycles_per_fractal, 0.01, 1e4, "cycles"),
      P(cube.fp32_cycles_per_fractal, 0.01, 1e4, "cycles"),
      P(cube.block_overhead_cycles, 0, 1e6, "cycles"),
      P(scheduler.threads, 1, 64, "threads"),
      P(scheduler.dispatch_cycles, 0, 1e7, "cycles"),
      P(scheduler.resolve_cycles, 0, 1e7, "cycles"),
      P(scheduler.completion_cycles, 0, 1e7, "cycles"),
      P(scheduler.poll_ns, 0, 1e6, "ns"),
      P(scheduler.notify_ns, 0, 1e6, "ns"),
      P(scheduler.completion_notify_ns, 0, 1e6, "ns"),
      P(scheduler.task_gap_ns, 0, 1e6, "ns"),
      P(control.root_build_ns, 0, 1e9, "ns"),
      P(control.task_build_ns, 0, 1e9, "ns"),
      P(control.device_task_submit_ns, 0, 1e9, "ns"),
      P(control.stitch_function_max_num, 1, 1 << 20, "functions"),
      P(kernel.launch_us, 0, 1e6, "us"),
      P(limits.max_tile_elements, 1, kBig, "elements"),
      P(limits.max_auto_tiles, 1, kBig, "tiles"),
  };
  return params;
}
#undef P

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
    const bool is_int = p.is_integer();
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
  if (hw.vector.bytes_per_repeat % hw.ub.align_bytes != 0)
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
