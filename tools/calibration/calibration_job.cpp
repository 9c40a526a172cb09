#include "tools/calibration/calibration_job.hpp"

#include "model/error.hpp"
#include "tools/formats/run_config.hpp"

namespace tilesim {

CalibrationOutcome run_calibration(const CalibrationJob& job) {
  const MeasurementSet set = load_measurements(job.measurements);
  std::filesystem::path hw_path = set.hardware;
  if (!job.hardware.empty()) hw_path = resolve_hardware_arg(job.hardware);
  const Hardware hw = load_hardware(hw_path);
  // The file merged with its bases: it names the default free parameters and is the template of
  // the output (a self-contained hardware file).
  const nlohmann::ordered_json hw_doc = merged_hardware_file(hw_path);
  std::vector<FreeParam> free;
  if (!job.free.empty()) {
    for (const auto& text : job.free) {
      FreeParam f = parse_free_arg(text);
      for (const auto& g : free)
        if (g.key == f.key) throw Error("--free " + text + ": " + f.key + " is listed twice");
      free.push_back(f);
    }
  } else if (set.has_free) {
    free = set.free;
  } else {
    free = default_free_params(nlohmann::json::parse(hw_doc.dump()));
  }
  CalibrationOutcome out;
  out.result = calibrate(set, hw, free, job.options);
  out.calibrated_hardware = calibrated_hardware_json(hw_doc, out.result);
  return out;
}

}  // namespace tilesim
