#pragma once
// A validation dataset for `tilesim validate`: figures measured on hardware, grouped in sweeps,
// each point a run config that states how the measured kernel is mapped and why. Schema:
//
//   {
//     "description": "...", "source": "...",     optional
//     "hardware": "ascend910b4",                 file path (relative to this file) or shipped
//                                                name; default ascend910b1; every point runs on it
//     "tolerances": {"max_mape_pct": 15,         optional, each key optional: normalised MAPE over
//                    "max_abs_mape_pct": 25,     all points, absolute MAPE over all points, each
//                    "max_abs_err_pct": 30,      point's absolute error, rank correlation of every
//                    "min_rank_corr": 0.8,       sweep (where defined), the argmin of every sweep
//                    "argmin": true},
//     "sweeps": [
//       {"name": "...", "axis": "batch",         axis: what the points vary (default "point")
//        "metric": "task_duration_us",           a calibrate metric (default task_duration_us)
//        "known_miss": {"min_rank_corr": 0,      optional: a rank correlation the model is known
//                       "why": "..."},           to miss, held to its own floor (below the
//                                                dataset's min_rank_corr) and printed with why
//        "points": [
//          {"x": 1 | "label",                    the point on the axis
//           "measured": 2.58,                    in the metric's unit, > 0; or, for a point the
//           | "board_rejected": "UB overflow",    board refused to run, why (then the model must
//                                                reject its config too)
//           "mapping": "why this run config is the measured kernel",
//           "config": {run config} | "config_file": "path relative to this file"
//             | "not_expressible": "what the model lacks"}   reported, never run
//        ]}
//     ]
//   }

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "tools/calibration/measurements.hpp"

namespace tilesim {

struct ValidationPoint {
  std::string label;                  // "x" as written
  double x = 0;                       // "x" when a number, else the point's index
  double measured = 0;                // in the sweep's metric
  std::string mapping;                // how the measured kernel is mapped and why
  std::string not_expressible;        // non-empty: never run, for this reason
  std::string board_rejected;         // non-empty: the board refused it (no time): the model
                                      // must reject the run too
  std::optional<CalibrationRun> run;  // set when expressible
};

// A sweep whose rank order the model is known to miss: held to its own, lower floor so the
// dataset still guards every other sweep at the dataset's; the report prints the reason.
struct KnownMiss {
  double min_rank_corr = 0;
  std::string why;
};

struct ValidationSweep {
  std::string name;
  std::string axis = "point";
  std::string metric = "task_duration_us";
  std::optional<KnownMiss> known_miss;
  bool numeric_x = true;  // every x is a number (the plot's axis), else labels in order
  std::vector<ValidationPoint> points;
};

struct ValidationTolerances {
  std::optional<double> max_mape_pct;      // normalised MAPE over the dataset's points
  std::optional<double> max_abs_mape_pct;  // absolute MAPE over the dataset's points
  std::optional<double> max_abs_err_pct;   // every point's absolute error
  std::optional<double> min_rank_corr;     // each sweep's rank correlation, where defined
  bool argmin = false;                     // each sweep's argmin must match
  // Some tolerance is stated (else validate reports "no tolerances", holding the dataset to
  // nothing).
  bool any() const {
    return max_mape_pct || max_abs_mape_pct || max_abs_err_pct || min_rank_corr || argmin;
  }
};

struct ValidationDataset {
  std::filesystem::path path;
  std::string description;
  std::string source;
  std::filesystem::path hardware;  // resolved path
  ValidationTolerances tolerances;
  // Why the model misses the dataset's tolerances, with the numbers: the dataset is still scored
  // against them and reported outside ("OUTSIDE (known)", the reason printed), but it does not
  // fail the run. Empty: a miss fails.
  std::string known_outside;
  std::vector<ValidationSweep> sweeps;
};

ValidationDataset load_validation_dataset(const std::filesystem::path& file);
ValidationDataset validation_dataset_from_json(const nlohmann::json& doc,
                                               const std::filesystem::path& file);
// Every *.json file of `dir`, sorted by name; fails when there is none.
std::vector<std::filesystem::path> validation_files(const std::filesystem::path& dir);

}  // namespace tilesim
