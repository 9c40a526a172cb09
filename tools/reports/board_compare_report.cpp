#include "tools/reports/board_compare_report.hpp"

#include <cmath>

#include "model/printable.hpp"
#include "tools/formats/text_append.hpp"

namespace tilesim {

namespace {

std::string cell(double x) {
  return std::isnan(x) ? "-" : fmt::format("{:.3f}", x);
}

nlohmann::json or_null(double x) {
  return std::isnan(x) ? nlohmann::json(nullptr) : nlohmann::json(x);
}

}  // namespace

std::string board_comparison_table(const BoardComparison& c) {
  std::string s;
  append(s, "\n  {:<22} {:>12} {:>12} {:>9}   {}\n", "metric", "simulated", "board", "diff%",
         "meaning");
  for (const auto& r : c.rows)
    append(s, "  {:<22} {:>12} {:>12} {:>9}   {}\n", r.metric, cell(r.simulated), cell(r.board),
           std::isnan(r.diff_pct) ? "-" : fmt::format("{:+.1f}", r.diff_pct), r.meaning);
  for (const auto& n : c.notes) append(s, "\n  note: {}", n);
  if (!c.notes.empty()) s += "\n";
  return s;
}

nlohmann::json board_comparison_json(const CompareOutcome& out, const std::string& config) {
  nlohmann::json j = board_comparison_to_json(out.comparison);
  j["config"] = config;
  j["hardware"] = out.hardware_name;
  return j;
}

nlohmann::json board_comparison_to_json(const BoardComparison& c) {
  nlohmann::json j;
  j["board"] = {{"kind", c.board_kind}, {"source", c.board_source}};
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : c.rows)
    rows.push_back({{"metric", r.metric},
                    {"meaning", r.meaning},
                    {"simulated", or_null(r.simulated)},
                    {"board", or_null(r.board)},
                    {"diff_pct", or_null(r.diff_pct)}});
  j["rows"] = rows;
  j["notes"] = c.notes;
  return j;
}

std::string board_measurements_summary(const BoardMeasurements& m) {
  std::string s;
  for (const auto& k : m.kernels) {
    append(s, "\n  {}: {}\n", printable(k.id), printable(k.source));
    for (const auto& f : k.figures)
      append(s, "    {:<22} {:>12.3f}   (n={}, {:.3f} .. {:.3f})\n", f.metric, f.value, f.samples,
             f.min, f.max);
    for (const auto& l : k.left_out) append(s, "    left out: {}\n", l);
  }
  if (!m.unmapped.empty()) {
    int64_t rows = 0;
    for (const auto& u : m.unmapped) rows += u.rows;
    append(s, "\n  {} of {} rows match no kernel of the mapping (not measurements):\n", rows,
           m.rows);
    for (const auto& u : m.unmapped)
      append(s, "    {}: {} row{} from line {}: Op Name '{}', Task Type '{}'\n", printable(u.file),
             u.rows, u.rows == 1 ? "" : "s", u.first_line, printable_field(u.op_name),
             printable_field(u.task_type));
  }
  return s;
}

}  // namespace tilesim
