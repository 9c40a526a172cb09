#pragma once
// msprof's op_summary_*.csv (mindstudio_profiler_output/): one row per task launch. Columns read
// (by their header text, as msprof writes them):
//   "Op Name"                 required: the kernel
//   "Task Duration(us)"       required: the launch's time on the device (us), a number > 0
//   "OP Type", "Task Type", "Stream ID", "Input Shapes", "Input Data Types"   optional, as text
//   "Block Dim" (CANN <= 8) or "Block Num" (CANN 8.5+)                      optional
//   "aiv_time(us)", "aiv_vec_time(us)", "aiv_mte2_time(us)", "aiv_mte3_time(us)",
//   "aiv_vec_ratio", "aiv_mte2_ratio", "aiv_mte3_ratio", "aic_mac_time(us)", "aic_mac_ratio",
//   "aicore_time(us)"                                                        optional PMU figures
// A pipe's time per core is its *_time(us) column when that is a number > 0, else its *_ratio
// times aiv_time(us) (aicore_time(us) for the cube) when both are numbers > 0 (msprof fills the
// ratios and leaves the times 0 in some versions); else the row has no figure for that pipe.
// "N/A", "NA" and empty fields are "not collected"; msprof pads some fields with a tab (Task Start
// Time), so spaces and tabs around a number are trimmed. Anything else that is not a number in a
// column read as one is an error naming the file, line and column.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "tools/formats/csv_reader.hpp"

namespace tilesim {

struct MsprofRow {
  std::string file;  // as named
  int64_t line = 0;
  std::vector<std::string> fields;  // every column of the row, trimmed (MsprofFile::header)
  double duration_us = 0;
  double block_dim = 0;  // 0: not collected
  // Busy time per core of each pipe (us); NaN when the row has no figure for it.
  double vec_us = 0, mte2_us = 0, mte3_us = 0, cube_us = 0;
};

struct MsprofFile {
  std::string file;
  std::vector<std::string> header;
  std::vector<MsprofRow> rows;

  int column(const std::string& name) const;  // -1 when absent
  // The row's text in column `name`; "" when the file has no such column.
  const std::string& text(const MsprofRow& row, const std::string& name) const;
};

MsprofFile msprof_from_csv(const CsvTable& table);
MsprofFile load_msprof_op_summary(const std::filesystem::path& file, const CsvLimits& limits = {});

// Trims spaces and tabs.
std::string trim_field(const std::string& s);
// "N/A", "NA", "" (msprof's "not collected").
bool not_collected(const std::string& trimmed);

}  // namespace tilesim
