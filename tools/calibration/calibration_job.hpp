#pragma once
// One calibration as `tilesim calibrate` and tilesim.calibrate() run it: the measurements file,
// the hardware to start from (the file's, or a --hardware argument), the free parameters (the
// --free arguments, else the file's list, else the hardware's defaults), the fit, and the
// calibrated hardware file it gives.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/calibration/calibrate.hpp"

namespace tilesim {

struct CalibrationJob {
  std::string measurements;       // the measurements file
  std::string hardware;           // empty: the file's hardware
  std::vector<std::string> free;  // "key" or "key:min:max"; empty: the file's or the defaults
  CalibrationOptions options;
};

struct CalibrationOutcome {
  CalibrationResult result;
  nlohmann::ordered_json calibrated_hardware;  // a self-contained hardware file
};

CalibrationOutcome run_calibration(const CalibrationJob& job);

}  // namespace tilesim
