#include "tools/calibration/msprof_map.hpp"

#include <set>

#include "model/json_reader.hpp"
#include "tools/formats/run_config.hpp"

namespace tilesim {

MsprofMap msprof_map_from_json(const nlohmann::json& json, const std::filesystem::path& file) {
  const JsonReader doc(json, file.string());
  doc.expect_object();
  doc.check_keys({"description", "hardware", "kernels"});
  MsprofMap map;
  map.path = file;
  map.description = config_description(doc);
  map.hardware = config_hardware(doc);
  if (const auto h = doc.find("hardware")) map.hardware_named = h->string();
  const JsonReader ks = doc.at("kernels");
  if (!ks.json().is_array() || ks.json().empty())
    ks.fail("expected a non-empty array of kernels (id, match, mapping, config or config_file)");
  std::set<std::string> ids;
  for (const auto& item : ks.items()) {
    const auto [e, id] = identified_entry(
        item,
        {"id", "match", "csv", "skip_first", "mapping", "config", "config_file", "sweep", "x"},
        ids);
    MsprofKernelMap k;
    k.id = id;
    k.where = file.string() + ": " + e.path();
    const JsonReader match = e.at("match");
    if (!match.json().is_object())
      match.fail("expected an object of CSV column -> text, e.g. {\"Op Name\": \"relu_kernel\"}");
    match.for_each_member([&](const std::string& column, const JsonReader& v) {
      if (!v.json().is_string()) v.fail("expected the column's text, got " + v.json().dump());
      k.match.emplace_back(column, v.string());
    });
    if (!match.has("Op Name"))
      match.fail_at("Op Name", "missing (every kernel is matched by its op name at least)");
    k.csv = e.string_or("csv", "");
    k.skip_first = e.integer_or("skip_first", 0, 0, int64_t{1} << 40);
    const auto mapping = e.at("mapping");
    k.mapping = mapping.string();
    if (k.mapping.empty()) mapping.fail("expected why this run config is the measured kernel");
    k.run = parse_measured_run(e, k.id, file);
    if (const auto c = e.find("config"))
      k.config = c->json();
    else
      k.config_file = file.parent_path() / e.at("config_file").string();
    k.sweep = e.string_or("sweep", k.id);
    if (const auto x = e.find("x")) {
      if (!x->json().is_number() && !x->json().is_string())
        x->fail("expected a number or a string (the point on the sweep's axis)");
      k.x = x->json();
    }
    map.kernels.push_back(std::move(k));
  }
  return map;
}

MsprofMap load_msprof_map(const std::filesystem::path& file) {
  return msprof_map_from_json(read_json_file(file, "msprof mapping file"), file);
}

}  // namespace tilesim
