#pragma once
// A run config file: a kernel spec plus the hardware file to run it on (resolved relative to the
// config file), an optional description, an optional "measured" block for experiments and the
// runtime policies to simulate it with:
//   "runtime": {"ready_order": "oldest_root_first" | "fifo"}   (default oldest_root_first)

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "kernels/kernel_spec.hpp"
#include "sim/simulator.hpp"

namespace tilesim {

struct RunConfig {
  std::filesystem::path path;
  KernelSpec spec;
  std::filesystem::path hardware;  // resolved path
  std::string description;
  nlohmann::json measured;  // null when absent
  SimOptions options;       // the "runtime" policies
};

nlohmann::json read_json_file(const std::filesystem::path& file, const std::string& what);
RunConfig load_run_config(const std::filesystem::path& file);
// The "runtime" policies of a run or sweep config `doc` (defaults when the key is absent).
SimOptions runtime_options_from_json(const nlohmann::json& doc, const std::string& origin);
// A path named in a config is relative to the config's folder; a bare default names a shipped file.
std::filesystem::path resolve_config_path(const std::filesystem::path& config,
                                          const std::string& named);
// A --hardware argument: a path relative to the working directory, or a shipped name.
std::filesystem::path resolve_hardware_arg(const std::string& named);

}  // namespace tilesim
