#include "tools/calibration/validation_dataset.hpp"

#include <cmath>

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "model/error.hpp"
#include "model/json_reader.hpp"
#include "tools/formats/run_config.hpp"

namespace tilesim {

namespace {

ValidationTolerances parse_tolerances(const JsonReader& t) {
  t.expect_object();
  t.check_keys({"max_mape_pct", "max_abs_mape_pct", "max_abs_err_pct", "min_rank_corr", "argmin"});
  ValidationTolerances tol;
  if (const auto v = t.find("max_mape_pct")) tol.max_mape_pct = v->number(0);
  if (const auto v = t.find("max_abs_mape_pct")) tol.max_abs_mape_pct = v->number(0);
  if (const auto v = t.find("max_abs_err_pct")) tol.max_abs_err_pct = v->number(0);
  if (const auto v = t.find("min_rank_corr")) tol.min_rank_corr = v->number(-1, 1);
  tol.argmin = t.boolean_or("argmin", false);
  return tol;
}

ValidationPoint parse_point(const JsonReader& p, size_t index, const std::filesystem::path& file,
                            const std::string& sweep) {
  p.expect_object();
  p.check_keys(
      {"x", "measured", "board_rejected", "mapping", "config", "config_file", "not_expressible"});
  ValidationPoint pt;
  const auto x = p.at("x");
  if (x.json().is_number()) {
    pt.x = x.number();
    pt.label = x.json().dump();
  } else if (x.json().is_string()) {
    pt.label = x.string();
    pt.x = static_cast<double>(index);
  } else {
    x.fail("expected a number or a string (the point on the sweep's axis), got " + x.json().dump());
  }
  if (const auto br = p.find("board_rejected")) {
    pt.board_rejected = br->string();
    if (pt.board_rejected.empty()) br->fail("expected what the board reported, got \"\"");
    if (p.has("measured") && !p.at("measured").json().is_null())
      p.at("measured").fail("a point the board rejected has no time (null or absent)");
    if (p.has("not_expressible"))
      br->fail("a board-rejected point is run to check the model rejects it too: give its config");
    pt.measured = std::nan("");
  } else {
    const auto measured = p.at("measured");
    pt.measured = measured.number(-std::numeric_limits<double>::infinity(), kMaxMeasured);
    if (!(pt.measured > 0))
      measured.fail("must be a positive number, got " + measured.json().dump());
    if (pt.measured < kMinMeasured)
      measured.fail(fmt::format("{} is below {:g}, no time in any unit the metrics use",
                                measured.json().dump(), kMinMeasured));
  }
  if (const auto ne = p.find("not_expressible")) {
    pt.not_expressible = ne->string();
    if (pt.not_expressible.empty()) ne->fail("expected the reason, got an empty string");
    if (p.has("config") || p.has("config_file"))
      ne->fail("a point the model cannot express has no config or config_file");
    pt.mapping = p.string_or("mapping", "");
    return pt;
  }
  pt.mapping = p.at("mapping").string();
  if (pt.mapping.empty()) p.at("mapping").fail("expected how the kernel is mapped and why");
  pt.run = parse_measured_run(p, sweep + " x=" + pt.label, file);
  return pt;
}

KnownMiss parse_known_miss(const JsonReader& k, const ValidationTolerances& tol) {
  k.expect_object();
  k.check_keys({"min_rank_corr", "why"});
  KnownMiss m;
  m.min_rank_corr = k.at("min_rank_corr").number(-1, 1);
  m.why = k.at("why").string();
  if (m.why.empty()) k.at("why").fail("expected why the model misses the sweep's rank order");
  if (!tol.min_rank_corr)
    k.fail("the dataset has no tolerances.min_rank_corr to fall short of");
  else if (m.min_rank_corr >= *tol.min_rank_corr)
    k.at("min_rank_corr")
        .fail(fmt::format("{} is not below the dataset's min_rank_corr {}: not a miss",
                          m.min_rank_corr, *tol.min_rank_corr));
  return m;
}

ValidationSweep parse_sweep(const JsonReader& s, const std::filesystem::path& file,
                            const ValidationTolerances& tol) {
  s.expect_object();
  s.check_keys({"name", "axis", "metric", "known_miss", "points"});
  ValidationSweep sw;
  sw.name = s.at("name").string();
  if (sw.name.empty()) s.at("name").fail("expected a non-empty string");
  sw.axis = s.string_or("axis", sw.axis);
  if (const auto m = s.find("metric")) {
    sw.metric = m->string();
    if (!is_calibration_metric(sw.metric))
      m->fail("unknown metric '" + sw.metric + "' (allowed: " + allowed_metrics() + ")");
  }
  if (const auto k = s.find("known_miss")) sw.known_miss = parse_known_miss(*k, tol);
  const auto points = s.at("points");
  if (!points.json().is_array() || points.json().empty())
    points.fail("expected a non-empty array of points");
  const auto items = points.items();
  for (size_t i = 0; i < items.size(); ++i) {
    sw.points.push_back(parse_point(items[i], i, file, sw.name));
    sw.numeric_x = sw.numeric_x && items[i].json()["x"].is_number();
  }
  if (!sw.numeric_x)
    for (size_t i = 0; i < sw.points.size(); ++i) sw.points[i].x = static_cast<double>(i);
  return sw;
}

}  // namespace

ValidationDataset validation_dataset_from_json(const nlohmann::json& json,
                                               const std::filesystem::path& file) {
  const JsonReader doc(json, file.string());
  doc.expect_object();
  doc.check_keys({"description", "source", "hardware", "tolerances", "known_outside", "sweeps"});
  ValidationDataset ds;
  ds.path = file;
  ds.description = config_description(doc);
  ds.source = doc.string_or("source", "");
  ds.hardware = config_hardware(doc);
  if (const auto t = doc.find("tolerances")) ds.tolerances = parse_tolerances(*t);
  if (const auto k = doc.find("known_outside")) {
    ds.known_outside = k->string();
    if (ds.known_outside.empty()) k->fail("expected why the model misses, with the numbers");
  }
  const auto sweeps = doc.at("sweeps");
  if (!sweeps.json().is_array() || sweeps.json().empty())
    sweeps.fail("expected a non-empty array of sweeps");
  for (const auto& s : sweeps.items()) {
    ds.sweeps.push_back(parse_sweep(s, file, ds.tolerances));
    for (size_t i = 0; i + 1 < ds.sweeps.size(); ++i)
      if (ds.sweeps[i].name == ds.sweeps.back().name)
        s.at("name").fail("duplicate sweep name '" + ds.sweeps.back().name + "'");
  }
  return ds;
}

ValidationDataset load_validation_dataset(const std::filesystem::path& file) {
  return validation_dataset_from_json(JsonReader::parse_file(file, "validation dataset"), file);
}

std::vector<std::filesystem::path> validation_files(const std::filesystem::path& dir) {
  if (!std::filesystem::is_directory(dir))
    throw Error(dir.string() + ": no such folder (validation datasets: *.json)");
  std::vector<std::filesystem::path> files;
  for (const auto& e : std::filesystem::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() == ".json") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  if (files.empty()) throw Error(dir.string() + ": no validation datasets (*.json) in it");
  return files;
}

}  // namespace tilesim
