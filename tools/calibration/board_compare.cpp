#include "tools/calibration/board_compare.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "model/error.hpp"
#include "model/missing.hpp"
#include "tools/analyses/run_kernel.hpp"
#include "tools/calibration/board_measurements.hpp"
#include "tools/formats/pypto_graph.hpp"
#include "tools/formats/run_config.hpp"

namespace tilesim {

namespace {

double max_per_core(const Metrics& m, double CoreMetrics::*field) {
  double x = m.per_core.empty() ? kNaN : 0;
  for (const auto& c : m.per_core) x = std::max(x, c.*field);
  return x;
}

double max_tasks(const Metrics& m) {
  double x = m.per_core.empty() ? kNaN : 0;
  for (const auto& c : m.per_core) x = std::max(x, static_cast<double>(c.execute_task_num));
  return x;
}

// The median of the figures the rows have (NaN: not collected).
double median_of(const std::vector<const MsprofRow*>& rows, double MsprofRow::*field) {
  std::vector<double> v;
  for (const auto* r : rows)
    if (!std::isnan(r->*field)) v.push_back(r->*field);
  return median(v);
}

}  // namespace

BoardSide board_from_msprof(const MsprofFile& file,
                            const std::vector<std::pair<std::string, std::string>>& match,
                            int64_t skip_first, const KernelSpec& spec) {
  std::vector<int> cols;
  bool by_name = false;
  std::string what;
  for (const auto& [column, text] : match) {
    const int c = file.column(column);
    if (c < 0)
      throw Error(
          fmt::format("--match {}={}: no column '{}' in {}", column, text, column, file.file));
    cols.push_back(c);
    by_name = by_name || column == "Op Name";
    what += fmt::format("{}{} '{}'", what.empty() ? "" : ", ", column, text);
  }
  std::vector<const MsprofRow*> rows;
  for (const auto& r : file.rows) {
    bool all = true;
    for (size_t m = 0; m < cols.size() && all; ++m)
      all = r.fields[static_cast<size_t>(cols[m])] == match[m].second;
    if (all) rows.push_back(&r);
  }
  std::vector<std::string> names;
  for (const auto* r : rows) {
    const std::string& n = file.text(*r, "Op Name");
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  if (!by_name && names.size() > 1) {
    std::string list;
    for (size_t i = 0; i < names.size() && i < 8; ++i)
      list += (i ? ", " : "") + printable_field(names[i]);
    throw Error(
        fmt::format("{}: {} kernels (Op Name: {}{}); name the one to compare with "
                    "--op-name (or --match COLUMN=TEXT)",
                    file.file, names.size(), list, names.size() > 8 ? ", ..." : ""));
  }
  if (rows.empty())
    throw Error(fmt::format("{}: no row has {}", file.file, what.empty() ? "a kernel" : what));
  if (static_cast<int64_t>(rows.size()) <= skip_first)
    throw Error(fmt::format("--skip-first {}: leaves none of the {} launches of '{}'", skip_first,
                            rows.size(), printable_field(names.front())));
  rows.erase(rows.begin(), rows.begin() + skip_first);
  for (const auto* r : rows) check_row_against_spec(file, *r, spec, "the run config compared with");
  const std::string name = printable_field(names.front());
  BoardSide b;
  b.kind = "msprof";
  b.source = fmt::format("{}: {} launches of Op Name '{}'{}, medians", file.file, rows.size(), name,
                         skip_first ? fmt::format(" after {} warm-up", skip_first) : "");
  b.end_to_end_us = median_of(rows, &MsprofRow::duration_us);
  std::vector<double> blocks;
  for (const auto* r : rows)
    if (r->block_dim > 0) blocks.push_back(r->block_dim);
  b.cores = median(blocks);
  b.busy_mean_us = b.busy_max_us = b.tasks_mean = b.tasks_max = b.wait_mean_us =
      b.wait_sched_mean_us = kNaN;
  b.vec_us = median_of(rows, &MsprofRow::vec_us);
  b.mte2_us = median_of(rows, &MsprofRow::mte2_us);
  b.mte3_us = median_of(rows, &MsprofRow::mte3_us);
  b.cube_us = median_of(rows, &MsprofRow::cube_us);
  b.notes.push_back(
      "an op_summary row is a whole launch: per-core busy, tasks and wait need a swimlane");
  return b;
}

BoardSide board_from_swimlane(const SwimlaneAnalysis& a, const std::string& file) {
  const Metrics& m = a.metrics;
  BoardSide b;
  b.kind = "swimlane";
  b.source = file;
  b.end_to_end_us = m.gen_time_us;
  b.cores = static_cast<double>(m.per_core.size());
  b.busy_mean_us = mean_per_core(m, &CoreMetrics::busy_us);
  b.busy_max_us = max_per_core(m, &CoreMetrics::busy_us);
  b.tasks_mean = mean_tasks_per_core(m);
  b.tasks_max = max_tasks(m);
  b.wait_mean_us = mean_per_core(m, &CoreMetrics::total_wait_time_us);
  b.wait_sched_mean_us =
      a.dependencies ? mean_per_core(m, &CoreMetrics::wait_schedule_time_us) : kNaN;
  b.vec_us = b.mte2_us = b.mte3_us = b.cube_us = kNaN;
  b.notes.push_back("a swimlane has task times per core, no pipe times: vec/mte2/mte3 need msprof");
  if (!a.dependencies)
    b.notes.push_back("no --graph: the board's wait is not split into Wait Schedule / Predecessor");
  return b;
}

BoardComparison compare_with_board(const Metrics& s, const BoardSide& b) {
  BoardComparison c;
  c.board_kind = b.kind;
  c.board_source = b.source;
  c.notes = b.notes;
  const bool msprof = b.kind == "msprof";
  auto row = [&](const char* metric, const std::string& meaning, double sim, double board) {
    CompareRow r{metric, meaning, sim, board, kNaN};
    if (!std::isnan(board) && board != 0) r.diff_pct = (sim - board) / board * 100;
    c.rows.push_back(r);
  };
  if (msprof)
    row("end_to_end_us", "kernel_time_us vs Task Duration(us)", s.kernel_time_us, b.end_to_end_us);
  else
    row("end_to_end_us", "gen_time_us, span of all tasks", s.gen_time_us, b.end_to_end_us);
  row("cores", msprof ? "cores that ran a task vs Block Dim" : "cores that ran a task",
      static_cast<double>(s.per_core.size()), b.cores);
  row("busy_us_mean", "busy time per core, mean", mean_per_core(s, &CoreMetrics::busy_us),
      b.busy_mean_us);
  row("busy_us_max", "busy time per core, max", max_per_core(s, &CoreMetrics::busy_us),
      b.busy_max_us);
  row("vec_us", "V pipe busy per core, mean", pipe_mean_us(s, "V"), b.vec_us);
  row("mte2_us", "MTE2 busy per core, mean", pipe_mean_us(s, "MTE2"), b.mte2_us);
  row("mte3_us", "MTE3 busy per core, mean", pipe_mean_us(s, "MTE3"), b.mte3_us);
  row("cube_us", "CUBE busy per core, mean", pipe_mean_us(s, "CUBE"), b.cube_us);
  row("tasks_per_core_mean", "Execute task num, mean", mean_tasks_per_core(s), b.tasks_mean);
  row("tasks_per_core_max", "Execute task num, max", max_tasks(s), b.tasks_max);
  row("wait_us_mean", "Total Wait Time per core, mean",
      mean_per_core(s, &CoreMetrics::total_wait_time_us), b.wait_mean_us);
  row("wait_schedule_us_mean", "Wait Schedule Time per core, mean",
      mean_per_core(s, &CoreMetrics::wait_schedule_time_us), b.wait_sched_mean_us);
  return c;
}

CompareOutcome compare_profile(const CompareRequest& q) {
  const RunConfig rc = load_run_config(q.config);
  const KernelSpec spec = run_spec(rc);
  const Hardware hw = load_hardware(
      q.hardware.empty() ? rc.hardware : resolve_hardware_arg(q.hardware), q.settings);
  CompareOutcome out;
  BoardSide board;
  if (std::filesystem::path(q.profile).extension() == ".csv") {
    std::vector<std::pair<std::string, std::string>> match;
    if (!q.op_name.empty()) match.emplace_back("Op Name", q.op_name);
    for (const auto& m : q.match) {
      const auto eq = m.find('=');
      if (eq == std::string::npos || eq == 0)
        throw Error("--match " + m + ": expected COLUMN=TEXT (\"Input Shapes=8,256,384\")");
      match.emplace_back(m.substr(0, eq), m.substr(eq + 1));
    }
    board = board_from_msprof(load_msprof_op_summary(q.profile), match, q.skip_first, spec);
  } else {
    std::optional<PyptoGraph> graph;
    if (!q.graph.empty()) graph = load_pypto_graph(q.graph);
    const SwimlaneAnalysis an =
        analyze_swimlane(load_swimlane(q.profile, q.units_per_us), graph ? &*graph : nullptr);
    out.warnings = an.warnings;
    board = board_from_swimlane(an, q.profile);
  }
  const RunOutcome run = run_kernel(spec, hw, rc.options);
  out.comparison = compare_with_board(run.metrics, board);
  out.hardware_name = hw.name;
  return out;
}

}  // namespace tilesim
