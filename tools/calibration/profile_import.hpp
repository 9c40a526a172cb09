#pragma once
// Board profiles in, as `tilesim measurements from-msprof / from-swimlane` and
// tilesim.measurements_from_msprof / _from_swimlane run it: the files read, the measurements
// built and described, the inputs named (so no output replaces one).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/calibration/board_measurements.hpp"

namespace tilesim {

struct ProfileImport {
  BoardMeasurements measurements;
  std::vector<std::string> inputs;    // every file read
  std::vector<std::string> warnings;  // the swimlane analyses', each naming its file
};

// op_summary CSVs with the mapping file naming each kernel's run config.
ProfileImport import_msprof(const std::vector<std::string>& csvs, const std::string& map);

// Swimlanes (repeats) of one run config; `graph` (may be empty) splits the wait; time_unit "us",
// "ns" or "cycles" (the clock of `hardware`, else the config's); `id` defaults to the config's
// file name.
ProfileImport import_swimlanes(const std::vector<std::string>& traces, const std::string& config,
                               const std::string& graph, const std::string& time_unit,
                               const std::string& hardware, const std::string& id);

// The file to write at `output`: a measurements file (as_ "calibrate") or a validation dataset
// ("validate"), keeping only `metrics` (empty: every figure).
nlohmann::json imported_file_json(BoardMeasurements& m, const std::string& as_,
                                  const std::vector<std::string>& metrics,
                                  const std::string& output);

}  // namespace tilesim
