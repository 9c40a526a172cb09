#pragma once
// A run config file: a kernel spec plus the hardware file to run it on (resolved relative to the
// config file), an optional description and an optional "measured" block for experiments.

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "kernels/kernel_spec.hpp"

namespace tilesim {

struct RunConfig {
  std::filesystem::path path;
  KernelSpec spec;
  std::filesystem::path hardware;  // resolved path
  std::string description;
  nlohmann::json measured;  // null when absent
};

nlohmann::json read_json_file(const std::filesystem::path& file, const std::string& what);
RunConfig load_run_config(const std::filesystem::path& file);
// A path named in a config is relative to the config's folder; a bare default names a shipped file.
std::filesystem::path resolve_config_path(const std::filesystem::path& config,
                                          const std::string& named);
// A --hardware argument: a path relative to the working directory, or a shipped name.
std::filesystem::path resolve_hardware_arg(const std::string& named);

}  // namespace tilesim
