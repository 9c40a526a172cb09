#include "tools/formats/run_config.hpp"

#include <fstream>

#include "model/error.hpp"
#include "model/json_reader.hpp"
#include "model/hardware.hpp"

namespace tilesim {

nlohmann::json read_json_file(const std::filesystem::path& file, const std::string& what) {
  return JsonReader::parse_file(file, what);
}

std::filesystem::path resolve_config_path(const std::filesystem::path& config,
                                          const std::string& named) {
  std::filesystem::path p(named);
  if (p.is_absolute()) return p;
  const auto beside = config.parent_path() / p;
  if (std::filesystem::exists(beside)) return beside;
  const auto shipped = default_config_dir() / "hardware" / p;
  if (std::filesystem::exists(shipped)) return shipped;
  const auto shipped_json = default_config_dir() / "hardware" / (named + ".json");
  if (std::filesystem::exists(shipped_json)) return shipped_json;
  return beside;
}

std::filesystem::path resolve_hardware_arg(const std::string& named) {
  // As if named by a config file in the working directory.
  return resolve_config_path(std::filesystem::current_path() / "command-line", named);
}

SimOptions runtime_options_from_json(const nlohmann::json& doc, const std::string& origin) {
  SimOptions options;
  const auto runtime = JsonReader(doc, origin).find("runtime");
  if (!runtime) return options;
  runtime->check_keys({"ready_order"});
  if (const auto order = runtime->find("ready_order")) {
    const std::vector<std::string> names = {ready_order_name(ReadyOrder::kOldestRootFirst),
                                            ready_order_name(ReadyOrder::kFifo)};
    options.ready_order =
        order->one_of(names) == names[0] ? ReadyOrder::kOldestRootFirst : ReadyOrder::kFifo;
  }
  return options;
}

RunConfig load_run_config(const std::filesystem::path& file) {
  const auto doc = read_json_file(file, "run config");
  RunConfig rc;
  rc.path = file;
  rc.spec =
      kernel_spec_from_json(doc, file.string(), {"hardware", "description", "measured", "runtime"});
  rc.options = runtime_options_from_json(doc, file.string());
  rc.hardware = default_hardware_path();
  if (doc.contains("hardware")) {
    if (!doc["hardware"].is_string())
      throw Error(file.string() +
                  ": hardware: expected a file path or a shipped name (ascend910b1)");
    rc.hardware = resolve_config_path(file, doc["hardware"].get<std::string>());
  }
  if (doc.contains("description")) {
    if (!doc["description"].is_string())
      throw Error(file.string() + ": description: expected a string");
    rc.description = doc["description"].get<std::string>();
  }
  if (doc.contains("measured")) {
    if (!doc["measured"].is_object())
      throw Error(file.string() + ": measured: expected an object of measured figures");
    rc.measured = doc["measured"];
  }
  return rc;
}

}  // namespace tilesim
