#pragma once
// The machine description: every number the cost model and the simulator use. Values come from
// configs/hardware/*.json, each with its source; nothing here has a default a caller could forget
// to override.

#include <cstdint>
#include <filesystem>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tilesim {

struct Hardware {
  std::string name;
  std::string path;  // file it was loaded from ("" when built in code)

  double clock_mhz = 0;
  int64_t aiv_cores = 0;
  int64_t aic_cores = 0;

  // On-chip memories (bytes) and the alignment of their allocations.
  int64_t ub_bytes = 0;
  int64_t ub_align_bytes = 0;
  int64_t l1_bytes = 0;
  int64_t l0a_bytes = 0;
  int64_t l0b_bytes = 0;
  int64_t l0c_bytes = 0;

  // DMA engines: one instruction = issue + bursts * burst + bytes / peak; data lands after latency.
  double read_issue_cycles = 0;
  double read_burst_cycles = 0;
  double read_peak_bytes_per_cycle = 0;
  double read_latency_cycles = 0;
  double write_issue_cycles = 0;
  double write_burst_cycles = 0;
  double write_peak_bytes_per_cycle = 0;
  double write_latency_cycles = 0;
  int64_t gm_granule_bytes = 0;

  // Shared global memory: all cores' DMA traffic passes L2; misses and write-backs reach HBM.
  double hbm_bandwidth_gbps = 0;
  double l2_bandwidth_gbps = 0;
  int64_t l2_bytes = 0;

  // Vector pipe (per AIV).
  int64_t vector_bytes_per_repeat = 0;
  int64_t vector_max_repeats = 0;
  double vector_issue_cycles = 0;
  double vector_simple_cycles_per_repeat = 0;
  double vector_simple_latency_cycles = 0;
  double vector_complex_cycles_per_repeat = 0;
  double vector_complex_latency_cycles = 0;
  double vector_reduce_cycles_per_repeat = 0;
  double vector_reduce_latency_cycles = 0;

  // Cube pipe (per AIC).
  int64_t cube_fractal = 0;
  double cube_fp16_cycles_per_fractal = 0;
  double cube_fp32_cycles_per_fractal = 0;
  double cube_block_overhead_cycles = 0;

  // Runtime: scheduler AICPUs and the control AICPU.
  int64_t scheduler_threads = 0;
  double dispatch_cycles = 0;
  double resolve_cycles = 0;
  double completion_cycles = 0;
  double poll_ns = 0;
  double notify_ns = 0;
  double completion_notify_ns = 0;
  double task_gap_ns = 0;
  // Ready queues serve the oldest root function's tasks first (1) or FIFO by ready time (0).
  int64_t oldest_root_first = 0;
  double root_build_ns = 0;
  double task_build_ns = 0;
  double device_task_submit_ns = 0;
  int64_t stitch_function_max_num = 0;
  double kernel_launch_us = 0;

  // The rulebook's limits, reported as limit violations (not capacity errors).
  int64_t max_tile_elements = 0;
  int64_t max_auto_tiles = 0;

  double cycles_per_ns() const { return clock_mhz / 1000.0; }
  double ns_to_cycles(double ns) const { return ns * cycles_per_ns(); }
  double cycles_to_us(double cycles) const { return cycles / clock_mhz; }
  // HBM bandwidth in bytes per core clock cycle.
  double hbm_bytes_per_cycle() const { return hbm_bandwidth_gbps * 1e3 / clock_mhz; }
  double l2_bytes_per_cycle() const { return l2_bandwidth_gbps * 1e3 / clock_mhz; }
};

// A named, bounded parameter of Hardware: the loader, the calibrator and reports share this list.
struct HardwareParam {
  const char* key;  // key in the JSON "parameters" object
  std::variant<double Hardware::*, int64_t Hardware::*> field;
  double min;
  double max;
  const char* unit;
};

const std::vector<HardwareParam>& hardware_params();
const HardwareParam* find_hardware_param(const std::string& key);
double get_param(const Hardware& hw, const HardwareParam& p);
void set_param(Hardware& hw, const HardwareParam& p, double value);

// Parse a hardware description; `origin` names it in error messages. Rejects a missing key, an
// unknown key, a wrong type or an out-of-range value with one line naming the key.
Hardware hardware_from_json(const nlohmann::json& doc, const std::string& origin);
Hardware load_hardware(const std::filesystem::path& file);

// The shipped default description (configs/hardware/ascend910b1.json), found relative to the
// source tree or the TILESIM_CONFIG_DIR environment variable.
std::filesystem::path default_config_dir();
std::filesystem::path default_hardware_path();

}  // namespace tilesim
