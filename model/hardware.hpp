#pragma once
// The machine description: every number the cost model and the simulator use. Values come from
// configs/hardware/*.json, each with its source; nothing here has a default a caller could forget
// to override.

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tilesim {

struct Hardware {
  std::string name;
  std::string path;  // file it was loaded from ("" when built in code)

  // ---- The chip ----
  double clock_mhz = 0;
  struct Cores {
    int64_t aiv = 0;
    int64_t aic = 0;
  } cores;

  // On-chip memories (bytes) and the alignment of their allocations.
  struct Memory {
    int64_t bytes = 0;
  };
  struct AlignedMemory {
    int64_t bytes = 0;
    int64_t align_bytes = 0;
  };
  AlignedMemory ub, l1, l0a, l0b, l0c;

  // DMA engines: one instruction = issue + bursts * burst + bytes / peak; data lands after latency.
  struct DmaDirection {
    double issue_cycles = 0;
    double burst_cycles = 0;
    double peak_bytes_per_cycle = 0;
    double latency_cycles = 0;
    double l2_hit_bytes_per_cycle = 0;  // reads only: the engine's rate when the data is in L2
  };
  // GM -> L1 on a cube core (the AIC's MTE2): issue and latency as dma.read, its own rates.
  struct DmaL1 {
    double nd2nz_row_cycles = 0;        // per ND row an ND2NZ copy converts (its bursts)
    double nd2nz_bytes_per_cycle = 0;   // per-core rate of an ND2NZ copy from HBM (L2 misses)
    double peak_bytes_per_cycle = 0;    // per-core rate of a plain copy from HBM (L2 misses)
    double l2_hit_bytes_per_cycle = 0;  // per-core rate when the data is in L2
  };
  struct Dma {
    DmaDirection read, write;
    DmaL1 l1;
    int64_t gm_granule_bytes = 0;
  } dma;

  // Shared global memory: all cores' DMA traffic passes L2; misses and write-backs reach HBM.
  struct Gm {
    double hbm_bandwidth_gbps = 0;        // reads
    double hbm_write_bandwidth_gbps = 0;  // write-backs
    double hbm_queue_ns = 0;              // queueing delay scale of a loaded HBM (M/M/1)
  } gm;
  struct L2 {
    int64_t bytes = 0;
    double bandwidth_gbps = 0;       // all cores' traffic through L2, reads and writes together
    double read_bandwidth_gbps = 0;  // ... their reads alone (hits and misses)
    // Requests for one line by several cores at once are served one after another, this long
    // each: a request is one DMA burst's piece within a line (at most dma.gm_granule_bytes).
    double same_line_request_ns = 0;
  } l2;

  // Vector pipe (per AIV): an instruction issues, then runs its repeats at its class's rate.
  struct VectorClass {
    double cycles_per_repeat = 0;
    double latency_cycles = 0;
  };
  struct Vector {
    int64_t bytes_per_repeat = 0;
    int64_t max_repeats = 0;
    double issue_cycles = 0;
    VectorClass simple, complex, reduce;
    VectorClass exp_ln, div, rsqrt;  // pto-isa's 910B3 calibration of vexp / vln, vdiv, vrsqrt
    double bank_conflict_cycles_per_repeat = 0;  // taken off a simple op whose sources do not
                                                 // share a bank group
    double block_reduce_cycles_per_repeat = 0;   // vcgadd / vcgmax: each 32 B block to a value
    int64_t bank_groups = 0;  // UB bank groups; a beat serves one 32 B block row of each
  } vector;

  // Scalar unit (per core): work the vector unit's instructions do not take, element by element.
  struct Scalar {
    double index_compare_cycles_per_element = 0;  // an int32 / int64 compare and its select
  } scalar;

  // Cube pipe (per AIC).
  // Cube core (per AIC): MTE1 loads L1 -> L0A/L0B, the mmad, the fixpipe L0C -> GM.
  struct Cube {
    int64_t fractal = 0;
    double fp16_cycles_per_fractal = 0;  // fp16 and bf16
    double fp32_cycles_per_fractal = 0;
    double int8_cycles_per_fractal = 0;
    double block_overhead_cycles = 0;
    double mte1_issue_cycles = 0;
    double mte1_l0a_bytes_per_cycle = 0;
    double mte1_l0b_bytes_per_cycle = 0;
    double fixpipe_l0c_bytes_per_cycle = 0;  // reading the accumulator out of L0C
    double fixpipe_out_bytes_per_cycle = 0;  // converted output towards GM
    double fixpipe_gm_bytes_per_cycle = 0;   // the output rows' write into GM
  } cube;

  // ---- The AICPU runtime's costs: scheduler threads, the control AICPU, the launch ----
  struct Scheduler {
    int64_t max_threads = 0;     // scheduler AICPU threads at most
    int64_t aic_per_thread = 0;  // AIC cores one thread manages on average
    double dispatch_cycles = 0;
    double resolve_cycles = 0;
    double resolve_last_cycles = 0;
    double completion_cycles = 0;
    double poll_ns = 0;
    double notify_ns = 0;
    double completion_notify_ns = 0;
    double task_gap_ns = 0;
    double block_start_ns = 0;    // SPMD: a block's start on the free core it is placed on
    int64_t handshake_cores = 0;  // PyPTO: cores a thread shakes hands with before dispatching
  } scheduler;
  struct Control {
    double root_build_ns = 0;
    double task_build_ns = 0;
    double device_task_submit_ns = 0;
    int64_t stitch_function_max_num = 0;
    int64_t cube_merge_copyin_bytes = 0;  // a packed cube task's GM -> L1 bytes at most
  } control;
  struct Kernel {
    double vector_launch_us = 0;    // vector cores only: kernel start to the first core's start
    double mixed_launch_us = 0;     // a kernel that starts cube cores: the same
    double end_us = 0;              // the runtime seeing the last end to the kernel's end
    double core_start_ns = 0;       // SPMD: cores start one after another, this far apart
    double triton_op_cycles = 0;    // Triton-Ascend loop body: per operation per iteration
    double cross_core_flag_ns = 0;  // SPMD mixed block: a flag set on one core seen by another
  } kernel;

  // ---- The rulebook's limits, reported as limit violations (not capacity errors) ----
  struct Limits {
    int64_t max_tile_elements = 0;
    int64_t max_auto_tiles = 0;
  } limits;

  double cycles_per_ns() const { return clock_mhz / 1000.0; }
  double ns_to_cycles(double ns) const { return ns * cycles_per_ns(); }
  double cycles_to_us(double cycles) const { return cycles / clock_mhz; }
  // HBM bandwidth in bytes per core clock cycle.
  double hbm_bytes_per_cycle() const { return gm.hbm_bandwidth_gbps * 1e3 / clock_mhz; }
  double l2_bytes_per_cycle() const { return l2.bandwidth_gbps * 1e3 / clock_mhz; }
  double l2_read_bytes_per_cycle() const { return l2.read_bandwidth_gbps * 1e3 / clock_mhz; }
  double hbm_queue_cycles() const { return gm.hbm_queue_ns * clock_mhz / 1e3; }
};

// One parameter of Hardware, declared once in the table (model/hardware.cpp): the loader, the
// calibrator and docs/hardware.md all read this list. The key is the member's path in Hardware
// (`dma.read.issue_cycles` is hw.dma.read.issue_cycles); the type is the member's.
struct HardwareParam {
  const char* key;
  std::variant<double& (*)(Hardware&), int64_t& (*)(Hardware&)> field;
  double min;
  double max;
  const char* unit;
  const char* doc;   // one line: what it is, what it costs
  const char* part;  // the chip, the AICPU runtime or the rulebook limits
  bool is_integer() const { return std::holds_alternative<int64_t& (*)(Hardware&)>(field); }
};

const std::vector<HardwareParam>& hardware_params();
const HardwareParam* find_hardware_param(const std::string& key);
double get_param(const Hardware& hw, const HardwareParam& p);
void set_param(Hardware& hw, const HardwareParam& p, double value);

// A hardware document with its "base" chain merged: a self-contained hardware file (name,
// description, every parameter in table order, each entry {"value", "source"[, "fitted"]} from the
// nearest file that sets it; no "base"). `origin` is the document's file: a relative base is
// found beside it. Rejects, with one line naming the file (a base's own errors name the base) and
// the key: an unknown key, a missing key (in neither the file nor its bases), a wrong type, an
// out-of-range value, a value without a source, a base that is not found, a cycle of bases.
nlohmann::ordered_json merged_hardware_json(const nlohmann::json& doc, const std::string& origin);
nlohmann::ordered_json merged_hardware_file(const std::filesystem::path& file);

// What-ifs over a hardware file (the CLI's --set, Python's set=): each "key=value" as if a file
// based on `file` set it, so keys, types and ranges are checked as a file's are (errors name
// "--set"); the merged document's name says what was set, each value's source "what-if".
nlohmann::ordered_json merged_hardware_file(const std::filesystem::path& file,
                                            const std::vector<std::string>& settings);

// The machine a hardware document describes (validated as merged_hardware_json does).
Hardware hardware_from_json(const nlohmann::json& doc, const std::string& origin);
// `file` is a path; a file that cannot be opened is rejected with the shipped names listed.
Hardware load_hardware(const std::filesystem::path& file);
Hardware load_hardware(const std::filesystem::path& file, const std::vector<std::string>& settings);

// The shipped configs: $TILESIM_CONFIG_DIR, else an installed tilesim's
// <prefix>/share/tilesim/configs (beside <prefix>/bin, found from the running executable), else the
// source tree's configs/. The default hardware is configs/hardware/ascend910b1.json there.
std::filesystem::path default_config_dir();
std::filesystem::path default_hardware_path();
// configs/hardware/<name>.json of a shipped name, and the shipped names (sorted).
std::filesystem::path shipped_hardware_path(const std::string& name);
// The hardware file `named` by a file at `referrer` (a config, or a hardware file's "base"): an
// absolute path, a path beside the referrer, or a shipped name with or without ".json".
std::optional<std::filesystem::path> find_hardware_file(const std::filesystem::path& referrer,
                                                        const std::string& named);
std::vector<std::string> shipped_hardware_names();

}  // namespace tilesim
