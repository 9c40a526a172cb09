#include "tools/formats/msprof_op_summary.hpp"

#include <fmt/format.h>

#include <charconv>
#include <cmath>
#include <limits>

#include "model/missing.hpp"
#include "tools/formats/measured_bounds.hpp"

namespace tilesim {

std::string trim_field(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

bool not_collected(const std::string& t) {
  return t.empty() || t == "N/A" || t == "NA";
}

namespace {

// The value of column `c` of `row` as a number from 0 to what a measurement holds (an import never
// writes a figure its measurements file would refuse); NaN when absent or not collected.
double number_at(const CsvTable& t, const CsvRow& row, int c, bool required) {
  if (c < 0) return kNaN;
  const std::string v = trim_field(row.fields[static_cast<size_t>(c)]);
  if (not_collected(v)) {
    if (required)
      t.fail(row.line, c, "expected a number of microseconds, got '" + printable_field(v) + "'");
    return kNaN;
  }
  double x = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
  if (ec != std::errc() || end != v.data() + v.size() || !std::isfinite(x))
    t.fail(row.line, c, "expected a number, got '" + printable_field(v) + "'");
  if (x < 0) t.fail(row.line, c, "expected a number >= 0, got '" + printable_field(v) + "'");
  if (x > kMaxMeasured)
    t.fail(row.line, c,
           fmt::format("{} is out of range (at most {:g}, what a measurement holds)",
                       printable_field(v), kMaxMeasured));
  return x;
}

// A pipe's time per core: its time column, else ratio x the core's time.
double pipe_time(const CsvTable& t, const CsvRow& row, int time_col, int ratio_col,
                 int core_time_col) {
  const double time = number_at(t, row, time_col, false);
  if (time > 0) return time;
  const double ratio = number_at(t, row, ratio_col, false),
               core = number_at(t, row, core_time_col, false);
  if (ratio >= 0 && core > 0) return ratio * core;
  return time == 0 && ratio == 0 ? 0.0 : kNaN;  // a pipe msprof measured idle stays 0
}

}  // namespace

int MsprofFile::column(const std::string& name) const {
  for (size_t c = 0; c < header.size(); ++c)
    if (header[c] == name) return static_cast<int>(c);
  return -1;
}

const std::string& MsprofFile::text(const MsprofRow& row, const std::string& name) const {
  static const std::string none;
  const int c = column(name);
  return c < 0 ? none : row.fields[static_cast<size_t>(c)];
}

MsprofFile msprof_from_csv(const CsvTable& t) {
  MsprofFile out;
  out.file = t.origin;
  out.header = t.header;
  const int name = t.column("Op Name"), duration = t.column("Task Duration(us)");
  for (const auto& [col, key] : {std::pair{name, "Op Name"}, {duration, "Task Duration(us)"}})
    if (col < 0)
      t.fail(
          1, -1,
          std::string("no column '") + key +
              "' in the header (an msprof op_summary CSV has 'Op Name' and 'Task Duration(us)')");
  int block = t.column("Block Dim");
  if (block < 0) block = t.column("Block Num");
  const int aiv = t.column("aiv_time(us)"), aic = t.column("aicore_time(us)");
  const int vec_t = t.column("aiv_vec_time(us)"), vec_r = t.column("aiv_vec_ratio");
  const int mte2_t = t.column("aiv_mte2_time(us)"), mte2_r = t.column("aiv_mte2_ratio");
  const int mte3_t = t.column("aiv_mte3_time(us)"), mte3_r = t.column("aiv_mte3_ratio");
  const int mac_t = t.column("aic_mac_time(us)"), mac_r = t.column("aic_mac_ratio");
  out.rows.reserve(t.rows.size());
  for (const auto& row : t.rows) {
    MsprofRow r;
    r.file = t.origin;
    r.line = row.line;
    r.fields.reserve(row.fields.size());
    for (const auto& f : row.fields) r.fields.push_back(trim_field(f));
    if (r.fields[static_cast<size_t>(name)].empty()) t.fail(row.line, name, "the op name is empty");
    r.duration_us = number_at(t, row, duration, true);
    if (!(r.duration_us > 0)) t.fail(row.line, duration, "expected a duration > 0 us, got 0");
    const double b = number_at(t, row, block, false);
    r.block_dim = std::isnan(b) ? 0 : b;
    r.vec_us = pipe_time(t, row, vec_t, vec_r, aiv);
    r.mte2_us = pipe_time(t, row, mte2_t, mte2_r, aiv);
    r.mte3_us = pipe_time(t, row, mte3_t, mte3_r, aiv);
    r.cube_us = pipe_time(t, row, mac_t, mac_r, aic);
    out.rows.push_back(std::move(r));
  }
  return out;
}

MsprofFile load_msprof_op_summary(const std::filesystem::path& file, const CsvLimits& limits) {
  return msprof_from_csv(load_csv(file, limits));
}

}  // namespace tilesim
