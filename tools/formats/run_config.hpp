#pragma once
// A run config file: a kernel spec plus the hardware file to run it on (resolved relative to the
// config file), an optional description, an optional "measured" block for experiments and the
// runtime policies to simulate it with:
//   "runtime": {"ready_order": "oldest_root_first" | "fifo",   (default oldest_root_first)
//               "l2": "cold" | "warm" | "flushed"}   (default cold; warm: inputs resident in L2
//                                         when they fit; flushed: L2 full of dirty lines)
// The config may leave out "tile" when the run gives one (run --tile).

#include <filesystem>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "kernels/spec/kernel_spec.hpp"
#include "kernels/spec/spec_reader.hpp"
#include "model/json_reader.hpp"
#include "sim/simulator.hpp"

namespace tilesim {

struct RunConfig {
  std::filesystem::path path;
  KernelSpec spec;                 // spec.tile is empty when the config gives none
  std::filesystem::path hardware;  // resolved path
  std::string description;
  nlohmann::json measured;  // null when absent
  SimOptions options;       // the "runtime" policies
};

nlohmann::json read_json_file(const std::filesystem::path& file, const std::string& what);
RunConfig load_run_config(const std::filesystem::path& file);
// A run config document; `file` names it in errors and anchors its relative paths.
RunConfig run_config_from_json(const nlohmann::json& doc, const std::filesystem::path& file);
// The kernel to run: the config's, with `tile` (from --tile) when it is not empty. Fails
// "<file>: tile: missing (<how>)" when neither has a tile.
KernelSpec run_spec(const RunConfig& rc, const Dims& tile = {},
                    const std::string& how = "give it in the config or with --tile");
// A loop count override (--loop, Python's loop=; `option` names it): refused for a tile program
// without a loop, where it would change nothing.
void override_loop_count(KernelSpec& spec, int64_t loop, const std::string& option);

// The kernel keys of a config whose "tile" may be left out (the spec's tile is then empty):
// run configs, and sweep configs whose candidates supply the tiles. `caller_keys` are the keys
// the caller reads itself.
KernelSpec kernel_spec_tile_optional(const JsonReader& doc,
                                     const std::set<std::string>& caller_keys);
// A config's "hardware": a path relative to the config file or a shipped name; the default
// hardware when absent.
std::filesystem::path config_hardware(const JsonReader& doc);
// A config's optional "description" string.
std::string config_description(const JsonReader& doc);

// The "runtime" policies of a run or sweep config `doc` (defaults when the key is absent).
SimOptions runtime_options_from_json(const nlohmann::json& doc, const std::string& origin);
// A path named in a config is relative to the config's folder; a bare default names a shipped file.
std::filesystem::path resolve_config_path(const std::filesystem::path& config,
                                          const std::string& named);
// A --hardware argument: a path relative to the working directory, or a shipped name.
std::filesystem::path resolve_hardware_arg(const std::string& named);

}  // namespace tilesim
