#pragma once
// A mapping file for `tilesim measurements from-msprof`: which tilesim run config each kernel of
// an msprof op_summary CSV is. A CSV row names a kernel and its launch time, never its tile, loop
// count or grid, so the run the model needs is stated here, with why. Schema:
//
//   {
//     "description": "...",                      optional
//     "hardware": "ascend910b4",                 file path (relative to this file) or shipped
//                                                name; default ascend910b1
//     "kernels": [
//       {"id": "relu_b1",                        unique; names the measurements
//        "match": {"Op Name": "relu_kernel"},    CSV column -> text (trimmed); a row is this
//                                                kernel when every column matches; "Op Name"
//                                                is required
//        "csv": "relu_b1_op_summary.csv",        optional: only rows of this CSV (as named on
//                                                the command line, or its file name)
//        "skip_first": 10,                       optional: warm-up launches dropped (file order)
//        "mapping": "why this config is that kernel",
//        "config": {run config} | "config_file": "path relative to this file",
//        "sweep": "relu", "x": 1}                optional: the sweep and point in a validation
//                                                dataset (--as validate); default the id, 1
//     ]
//   }

#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/calibration/measurements.hpp"

namespace tilesim {

struct MsprofKernelMap {
  std::string id;
  std::string where;  // "<map file>: kernels[i] (id)", for messages
  std::vector<std::pair<std::string, std::string>> match;  // column, text
  std::string csv;                                         // "" any file
  int64_t skip_first = 0;
  std::string mapping;
  nlohmann::json config;              // the inline run config, or null
  std::filesystem::path config_file;  // else the run config file (resolved)
  CalibrationRun run;                 // parsed and checked
  std::string sweep;
  nlohmann::json x;
};

struct MsprofMap {
  std::filesystem::path path;
  std::string description;
  std::string hardware_named;      // as written ("" when absent)
  std::filesystem::path hardware;  // resolved
  std::vector<MsprofKernelMap> kernels;
};

MsprofMap load_msprof_map(const std::filesystem::path& file);
MsprofMap msprof_map_from_json(const nlohmann::json& doc, const std::filesystem::path& file);

}  // namespace tilesim
