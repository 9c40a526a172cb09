#include "tools/formats/run_config.hpp"

#include <fmt/format.h>

#include "model/error.hpp"
#include "model/hardware.hpp"
#include "tools/formats/program_file.hpp"

namespace tilesim {

nlohmann::json read_json_file(const std::filesystem::path& file, const std::string& what) {
  return JsonReader::parse_file(file, what);
}

std::filesystem::path resolve_config_path(const std::filesystem::path& config,
                                          const std::string& named) {
  // A name that finds nothing stays beside the config, so the loader's "cannot open" names it.
  return find_hardware_file(config, named).value_or(config.parent_path() / named);
}

std::filesystem::path resolve_hardware_arg(const std::string& named) {
  // As if named by a config file in the working directory.
  return resolve_config_path(std::filesystem::current_path() / "command-line", named);
}

KernelSpec kernel_spec_tile_optional(const JsonReader& doc,
                                     const std::set<std::string>& caller_keys) {
  doc.expect_object();
  if (doc.has("program")) return program_spec_from_json(doc, caller_keys);
  const bool has_tile = doc.has("tile");
  const auto& shape = doc.json().find("shape");
  if (has_tile || shape == doc.json().end() || !shape->is_array())
    return kernel_spec_from_json(doc.json(), doc.origin(), caller_keys);
  // The kernel checks need a tile: the shape stands in, and is dropped again.
  nlohmann::json kernel = doc.json();
  kernel["tile"] = *shape;
  KernelSpec spec = kernel_spec_from_json(kernel, doc.origin(), caller_keys);
  spec.tile.clear();
  return spec;
}

std::filesystem::path config_hardware(const JsonReader& doc) {
  const auto h = doc.find("hardware");
  if (!h) return default_hardware_path();
  if (!h->json().is_string())
    h->fail("expected a file path or a shipped name (ascend910b1), got " + h->json().dump());
  return resolve_config_path(doc.origin(), h->string());
}

std::string config_description(const JsonReader& doc) {
  return doc.string_or("description", "");
}

SimOptions runtime_options_from_json(const nlohmann::json& doc, const std::string& origin) {
  SimOptions options;
  const auto runtime = JsonReader(doc, origin).find("runtime");
  if (!runtime) return options;
  runtime->check_keys({"ready_order", "l2", "stitch_function_max_num", "launch_sched_aicpu_num"});
  // PyPTO's runtime_options, with PyPTO's names and ranges (pypto.jit runtime_options docs; a
  // device task holds at most MAX_STITCH_FUNC_NUM = 1024 roots, device_execute_context.cpp).
  options.stitch_function_max_num = runtime->integer_or("stitch_function_max_num", 0, 1, 1024);
  options.launch_sched_aicpu_num = runtime->integer_or("launch_sched_aicpu_num", 0, 1, 7);
  // one_of refuses a name outside the table, listing the table's names (the ready orders: the
  // built-in policies and those registered, sim/simulator.hpp).
  if (const auto order = runtime->find("ready_order"))
    options.ready_order = *ready_order_named(order->one_of(ready_order_names()));
  if (const auto l2 = runtime->find("l2"))
    options.l2_start = *enum_named(kL2StartNames, l2->one_of(enum_names(kL2StartNames)));
  return options;
}

RunConfig load_run_config(const std::filesystem::path& file) {
  return run_config_from_json(read_json_file(file, "run config"), file);
}

RunConfig run_config_from_json(const nlohmann::json& config, const std::filesystem::path& file) {
  // A tile program runs as itself: {"program": <the program>} (its "$schema" stays on top).
  const bool program = config.is_object() && config.contains("body") && config.contains("inputs");
  nlohmann::json json = program ? nlohmann::json{{"program", config}} : config;
  if (program && config.contains("$schema")) {
    json["$schema"] = config["$schema"];
    json["program"].erase("$schema");
  }
  const JsonReader doc(json, file.string());
  RunConfig rc;
  rc.path = file;
  rc.spec = kernel_spec_tile_optional(doc, {"hardware", "description", "measured", "runtime"});
  rc.options = runtime_options_from_json(json, file.string());
  rc.hardware = config_hardware(doc);
  rc.description = config_description(doc);
  if (const auto m = doc.find("measured")) {
    if (!m->json().is_object())
      m->fail("expected an object of measured figures, got " + m->json().dump());
    rc.measured = m->json();
  }
  return rc;
}

KernelSpec run_spec(const RunConfig& rc, const Dims& tile, const std::string& how) {
  KernelSpec spec = rc.spec;
  for (const int64_t d : tile)
    if (d <= 0)
      throw Error(
          fmt::format("{}: tile: {} overrides it with a dim {} (each dim is an integer >= 1)",
                      rc.path.string(), format_dims(tile), d),
          ErrorKind::kInput, "tile");
  if (!tile.empty()) spec.tile = tile;
  if (spec.tile.empty()) throw Error(rc.path.string() + ": tile: missing (" + how + ")");
  return spec;
}

void override_loop_count(KernelSpec& spec, int64_t loop, const std::string& option) {
  if (spec.program && spec.program_loop.empty())
    throw Error(fmt::format("{} {}: program '{}' has no loop, so a loop count changes nothing (add "
                            "a {{\"loop\": ...}} region to the program)",
                            option, loop, spec.program->name),
                ErrorKind::kInput, "loop_count");
  spec.loop_count = loop;
}

}  // namespace tilesim
