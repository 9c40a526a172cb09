#include "tools/calibration/board_measurements.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "kernels/spec/registry.hpp"
#include "model/dtype.hpp"
#include "model/error.hpp"
#include "model/hardware.hpp"
#include "tools/calibration/measurements.hpp"

namespace tilesim {

const std::vector<std::string>& msprof_metrics() {
  static const std::vector<std::string> m = {"task_duration_us", "vec_time_us", "mte2_time_us",
                                             "mte3_time_us", "cube_time_us"};
  return m;
}

const std::vector<std::string>& swimlane_metrics() {
  static const std::vector<std::string> m = {"gen_time_us",       "core_busy_us",
                                             "core_work_time_us", "wait_time_us",
                                             "tasks_per_core",    "wait_schedule_time_us"};
  return m;
}

double median(std::vector<double> v) {
  if (v.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

namespace {

// A figure from the samples that have one; a left-out note otherwise.
void add_figure(BoardKernel& k, const std::string& metric, const std::vector<double>& all,
                const std::string& not_collected_why) {
  std::vector<double> v;
  for (double x : all)
    if (!std::isnan(x)) v.push_back(x);
  if (v.empty()) {
    k.left_out.push_back(metric + ": " + not_collected_why);
    return;
  }
  // 9 significant digits: a swimlane's ends minus starts carry float noise (2.1300000000000097).
  const auto round9 = [](double x) { return std::stod(fmt::format("{:.9g}", x)); };
  BoardFigure f{metric, round9(median(v)), static_cast<int64_t>(v.size()),
                round9(*std::min_element(v.begin(), v.end())),
                round9(*std::max_element(v.begin(), v.end()))};
  if (!(f.value > 0)) {
    k.left_out.push_back(metric + ": measured 0 (calibrate and validate compare positive times)");
    return;
  }
  if (v.size() < all.size())
    k.left_out.push_back(
        fmt::format("{}: {} of {} launches have no figure; the median is of the "
                    "other {}",
                    metric, all.size() - v.size(), all.size(), v.size()));
  k.figures.push_back(f);
}

// msprof's names of the input data types, as the model's dtypes.
std::optional<DType> msprof_dtype(const std::string& name) {
  std::string s;
  for (char c : name) s += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (s.rfind("DT_", 0) == 0) s = s.substr(3);
  if (s == "FLOAT16" || s == "FP16" || s == "F16" || s == "HALF") return DType::kFp16;
  if (s == "FLOAT" || s == "FLOAT32" || s == "FP32" || s == "F32") return DType::kFp32;
  if (s == "BF16" || s == "BFLOAT16") return DType::kBf16;
  return std::nullopt;
}

// The first entry of a ';'-separated list ("8,256,384;8,256,384" -> "8,256,384").
std::string first_entry(const std::string& s) {
  return trim_field(s.substr(0, s.find(';')));
}

// Checks a row's collected input dtype and element count against the mapped run config, so a
// row is never scored against a run of another size or type.
}  // namespace

void check_row_against_spec(const MsprofFile& f, const MsprofRow& row, const KernelSpec& spec,
                            const std::string& where) {
  const auto fail = [&](const std::string& column, const std::string& what) {
    throw Error(fmt::format("{}: line {}, column {} ({}): {} ({})", f.file, row.line,
                            f.column(column) + 1, column, what, where));
  };
  const std::string types = first_entry(f.text(row, "Input Data Types"));
  if (!not_collected(types)) {
    const auto dt = msprof_dtype(types);
    if (!dt)
      fail("Input Data Types",
           "'" + printable_field(types) + "' is not a dtype the model has (fp32, fp16, bf16)");
    if (*dt != spec.dtype)
      fail("Input Data Types", fmt::format("'{}' is {}, the mapped run config's dtype is {}", types,
                                           dtype_name(*dt), dtype_name(spec.dtype)));
  }
  std::string shape = first_entry(f.text(row, "Input Shapes"));
  shape.erase(std::remove(shape.begin(), shape.end(), '"'), shape.end());
  if (not_collected(shape)) return;
  double elements = 1;
  size_t pos = 0;
  while (pos <= shape.size()) {
    const size_t comma = std::min(shape.find(',', pos), shape.size());
    const std::string d = trim_field(shape.substr(pos, comma - pos));
    if (d.empty() || d.find_first_not_of("0123456789") != std::string::npos || d.size() > 15)
      fail("Input Shapes",
           "'" + printable_field(shape) + "' is not a list of dims (\"8,256,384;...\")");
    elements *= std::stod(d);
    pos = comma + 1;
  }
  const KernelFamily* fam = find_family(spec.op);
  const auto tensors =
      fam && fam->tensors_of ? fam->tensors_of(spec.shape) : std::vector<Dims>{spec.shape};
  double expected = 1;
  for (int64_t d : tensors.front()) expected *= static_cast<double>(d);
  if (elements != expected)
    fail("Input Shapes", fmt::format("the first input [{}] has {} elements, the mapped run "
                                     "config's first tensor {}",
                                     printable_field(shape), elements, expected));
}

namespace {

bool applies_to(const MsprofKernelMap& k, const std::string& file) {
  return k.csv.empty() || k.csv == file || k.csv == std::filesystem::path(file).filename().string();
}

}  // namespace

BoardMeasurements measurements_from_msprof(const std::vector<MsprofFile>& files,
                                           const MsprofMap& map) {
  BoardMeasurements out;
  out.description = map.description;
  out.hardware_named = map.hardware_named;
  out.hardware = map.hardware;
  struct Hit {
    size_t file;
    const MsprofRow* row;
  };
  std::vector<std::vector<Hit>> hits(map.kernels.size());
  std::map<std::tuple<std::string, std::string, std::string>, size_t> unmapped_index;
  for (size_t fi = 0; fi < files.size(); ++fi) {
    const MsprofFile& f = files[fi];
    // Each kernel's match columns in this file (-1 for a kernel that does not apply to it).
    std::vector<std::vector<int>> cols(map.kernels.size());
    for (size_t k = 0; k < map.kernels.size(); ++k) {
      if (!applies_to(map.kernels[k], f.file)) continue;
      for (const auto& [column, text] : map.kernels[k].match) {
        const int c = f.column(column);
        if (c < 0)
          throw Error(fmt::format("{}: match: no column '{}' in {} (its header names the columns)",
                                  map.kernels[k].where, column, f.file));
        cols[k].push_back(c);
      }
    }
    for (const auto& row : f.rows) {
      ++out.rows;
      int found = -1;
      for (size_t k = 0; k < map.kernels.size(); ++k) {
        if (cols[k].empty()) continue;
        bool all = true;
        for (size_t m = 0; m < cols[k].size() && all; ++m)
          all = row.fields[static_cast<size_t>(cols[k][m])] == map.kernels[k].match[m].second;
        if (!all) continue;
        if (found >= 0)
          throw Error(fmt::format("{}: line {}: matched by two kernels of the mapping: {} and {}",
                                  f.file, row.line, map.kernels[static_cast<size_t>(found)].where,
                                  map.kernels[k].where));
        found = static_cast<int>(k);
      }
      if (found >= 0) {
        hits[static_cast<size_t>(found)].push_back({fi, &row});
        continue;
      }
      const std::string name = f.text(row, "Op Name"), type = f.text(row, "Task Type");
      const auto [it, fresh] =
          unmapped_index.emplace(std::tuple{f.file, name, type}, out.unmapped.size());
      if (fresh) out.unmapped.push_back({f.file, row.line, name, type, 0});
      ++out.unmapped[it->second].rows;
    }
  }
  for (size_t k = 0; k < map.kernels.size(); ++k) {
    const MsprofKernelMap& km = map.kernels[k];
    auto& h = hits[k];
    if (h.empty()) {
      std::string names;
      for (const auto& f : files) names += (names.empty() ? "" : ", ") + f.file;
      throw Error(fmt::format("{}: match: matches no row of {}", km.where, names));
    }
    if (static_cast<int64_t>(h.size()) <= km.skip_first)
      throw Error(fmt::format("{}: skip_first: {} leaves no launch of the {} matched", km.where,
                              km.skip_first, h.size()));
    h.erase(h.begin(), h.begin() + km.skip_first);
    for (const auto& hit : h)
      check_row_against_spec(files[hit.file], *hit.row, km.run.spec, km.where);
    BoardKernel bk;
    bk.id = km.id;
    bk.mapping = km.mapping;
    bk.config = km.config;
    bk.config_file = km.config_file;
    bk.sweep = km.sweep;
    bk.x = km.x;
    // Where: each file's first and last line.
    std::string where;
    for (size_t fi = 0; fi < files.size(); ++fi) {
      int64_t first = -1, last = -1, n = 0;
      for (const auto& hit : h)
        if (hit.file == fi) {
          if (first < 0) first = hit.row->line;
          last = hit.row->line;
          ++n;
        }
      if (n)
        where += fmt::format("{}{} lines {}-{} ({} rows)", where.empty() ? "" : ", ",
                             files[fi].file, first, last, n);
    }
    std::string op_name;
    for (const auto& [column, text] : km.match)
      if (column == "Op Name") op_name = text;
    bk.source =
        fmt::format("msprof op_summary {}: {} launches of Op Name '{}'{}, median", where, h.size(),
                    op_name, km.skip_first ? fmt::format(" after {} warm-up", km.skip_first) : "");
    std::vector<double> dur, vec, mte2, mte3, cube;
    for (const auto& hit : h) {
      dur.push_back(hit.row->duration_us);
      vec.push_back(hit.row->vec_us);
      mte2.push_back(hit.row->mte2_us);
      mte3.push_back(hit.row->mte3_us);
      cube.push_back(hit.row->cube_us);
    }
    add_figure(bk, "task_duration_us", dur, "not collected");
    const char* why =
        "no time: its *_time(us) is N/A or 0, and so is aiv_time(us) (aicore_time(us) for the "
        "cube), which would turn its *_ratio into a time";
    add_figure(bk, "vec_time_us", vec, why);
    add_figure(bk, "mte2_time_us", mte2, why);
    add_figure(bk, "mte3_time_us", mte3, why);
    add_figure(bk, "cube_time_us", cube, why);
    out.kernels.push_back(std::move(bk));
  }
  return out;
}

BoardMeasurements measurements_from_swimlanes(const std::vector<std::string>& swimlane_files,
                                              const std::vector<SwimlaneAnalysis>& analyses,
                                              const std::filesystem::path& run_config,
                                              const std::string& id) {
  BoardMeasurements out;
  BoardKernel k;
  k.id = id;
  k.config_file = run_config;
  k.sweep = id;
  k.mapping = "the swimlane is a run of this config (given with --config)";
  std::string names;
  for (const auto& f : swimlane_files) names += (names.empty() ? "" : ", ") + f;
  k.source = fmt::format(
      "swimlane {} (per-core figures: means over the cores that ran a task), median", names);
  for (const auto& metric : swimlane_metrics()) {
    std::vector<double> v;
    bool all_deps = true;
    for (const auto& a : analyses) {
      v.push_back(metric_value(RunFigures{a.metrics, ""}, metric));
      all_deps = all_deps && a.dependencies;
    }
    if (metric == "wait_schedule_time_us" && !all_deps) {
      k.left_out.push_back(metric + ": needs the task graph (--graph) to split the wait");
      continue;
    }
    add_figure(k, metric, v, "not in the swimlane");
  }
  out.kernels.push_back(std::move(k));
  return out;
}

void select_metrics(BoardMeasurements& m, const std::vector<std::string>& metrics) {
  if (metrics.empty()) return;
  for (const auto& name : metrics)
    if (!is_calibration_metric(name))
      throw Error("--metric " + name + ": unknown metric (allowed: " + allowed_metrics() + ")");
  for (auto& k : m.kernels)
    k.figures.erase(std::remove_if(k.figures.begin(), k.figures.end(),
                                   [&](const BoardFigure& f) {
                                     return std::find(metrics.begin(), metrics.end(), f.metric) ==
                                            metrics.end();
                                   }),
                    k.figures.end());
}

namespace {

std::string relative_to(const std::filesystem::path& target, const std::filesystem::path& dir) {
  const auto t = std::filesystem::absolute(target).lexically_normal();
  const auto rel = t.lexically_relative(std::filesystem::absolute(dir).lexically_normal());
  return rel.empty() ? t.string() : rel.generic_string();
}

std::filesystem::path output_dir(const std::filesystem::path& output) {
  if (output == "-" || output.parent_path().empty()) return std::filesystem::current_path();
  return output.parent_path();
}

// The run a figure was measured on: inline, or its file relative to the output.
void put_run(nlohmann::json& j, const BoardKernel& k, const std::filesystem::path& dir) {
  if (!k.config.is_null())
    j["config"] = k.config;
  else
    j["config_file"] = relative_to(k.config_file, dir);
}

void put_head(nlohmann::json& j, const BoardMeasurements& m, const std::filesystem::path& dir) {
  j["description"] = m.description;
  if (m.hardware_named.empty()) return;
  // A shipped file is named by its name; another file relative to the output.
  std::error_code ec;
  const bool shipped =
      std::filesystem::equivalent(m.hardware.parent_path(), default_config_dir() / "hardware", ec);
  j["hardware"] = shipped ? m.hardware.stem().string() : relative_to(m.hardware, dir);
}

size_t figure_count(const BoardMeasurements& m) {
  size_t n = 0;
  for (const auto& k : m.kernels) n += k.figures.size();
  return n;
}

// The head every written file starts with; refuses to write a file without a figure.
nlohmann::json file_head(const BoardMeasurements& m, const std::filesystem::path& dir) {
  if (figure_count(m) == 0)
    throw Error("no measurement: no kernel has a figure for the metrics asked for");
  nlohmann::json j;
  put_head(j, m, dir);
  return j;
}

}  // namespace

nlohmann::json measurements_file_json(const BoardMeasurements& m,
                                      const std::filesystem::path& output) {
  const auto dir = output_dir(output);
  nlohmann::json j = file_head(m, dir);
  nlohmann::json list = nlohmann::json::array();
  for (const auto& k : m.kernels)
    for (const auto& f : k.figures) {
      nlohmann::json e;
      e["id"] = k.id + "." + f.metric;
      e["source"] = fmt::format("{} of {} ({} .. {})", k.source, f.samples, f.min, f.max);
      put_run(e, k, dir);
      e["metric"] = f.metric;
      e["measured"] = f.value;
      e["note"] = k.mapping;
      list.push_back(e);
    }
  j["measurements"] = list;
  return j;
}

nlohmann::json validation_dataset_json(const BoardMeasurements& m,
                                       const std::filesystem::path& output) {
  const auto dir = output_dir(output);
  nlohmann::json j = file_head(m, dir);
  std::vector<std::string> sweeps, metrics;
  for (const auto& k : m.kernels) {
    if (std::find(sweeps.begin(), sweeps.end(), k.sweep) == sweeps.end()) sweeps.push_back(k.sweep);
    for (const auto& f : k.figures)
      if (std::find(metrics.begin(), metrics.end(), f.metric) == metrics.end())
        metrics.push_back(f.metric);
  }
  nlohmann::json list = nlohmann::json::array();
  for (const auto& sweep : sweeps)
    for (const auto& metric : metrics) {
      nlohmann::json points = nlohmann::json::array();
      for (const auto& k : m.kernels) {
        if (k.sweep != sweep) continue;
        for (const auto& f : k.figures) {
          if (f.metric != metric) continue;
          nlohmann::json p;
          p["x"] = k.x.is_null() ? nlohmann::json(points.size() + 1) : k.x;
          p["measured"] = f.value;
          p["mapping"] =
              k.mapping + " [" + k.id + ": " + k.source + " of " + std::to_string(f.samples) + "]";
          put_run(p, k, dir);
          points.push_back(p);
        }
      }
      if (points.empty()) continue;
      nlohmann::json s;
      s["name"] = metrics.size() == 1 ? sweep : sweep + " " + metric;
      s["metric"] = metric;
      s["points"] = points;
      list.push_back(s);
    }
  j["sweeps"] = list;
  return j;
}

}  // namespace tilesim
