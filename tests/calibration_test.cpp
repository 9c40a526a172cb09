// The shipped experiment configs against the measurements they reproduce
// (shared/data/calibration: dma_gm_to_ub_a2.json GM->UB rows, add_8192_a2.json cases 1-3), and the
// shipped measurement set (configs/measurements/a2_calibration.json, whose runs are those configs)
// against the calibrated hardware file.
//
// Every test reads one modelling of the measurement set's runs on the default hardware: the
// program is one CTest test (tests/CMakeLists.txt), so its largest run, the GM->UB copy of
// fp16 [12288, 12288] in [1, 64] tiles (2.4 million DMA instructions), is simulated once.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "test_support.hpp"
#include "tools/calibration/calibrate.hpp"
#include "tools/calibration/fit.hpp"
#include "tools/calibration/measurements.hpp"
#include "tools/formats/run_config.hpp"

namespace tilesim {
namespace {

// The shipped measurement set and its rows modeled on the default hardware, once per process.
struct Shipped {
  MeasurementSet set;
  std::vector<double> modeled;  // per measurement
};

const Shipped& shipped() {
  static const Shipped s = [] {
    Shipped r;
    r.set = load_measurements(test::source_path("configs/measurements/a2_calibration.json"));
    r.modeled = model_measurements(r.set, load_hardware(default_hardware_path()));
    return r;
  }();
  return s;
}

// The modeled `metric` of the run config configs/experiments/`file`, as the measurement set
// models it.
double modeled(const std::string& file, const std::string& metric) {
  const Shipped& s = shipped();
  for (size_t i = 0; i < s.set.measurements.size(); ++i) {
    const Measurement& m = s.set.measurements[i];
    if (m.metric == metric && s.set.runs[m.run].label == "../experiments/" + file)
      return s.modeled[i];
  }
  ADD_FAILURE() << "configs/measurements/a2_calibration.json has no " << metric << " of " << file;
  return 0;
}

struct Row {
  std::string name;
  double measured_us, modeled_us, measured_mte2, modeled_mte2;
};

// An experiment's measured figures (its own "measured" block) against the model of its run.
Row run_experiment(const std::string& file) {
  const RunConfig rc = load_run_config(test::source_path("configs/experiments/" + file));
  // The measurement set models every run on the default hardware: the experiment's own.
  EXPECT_TRUE(std::filesystem::equivalent(rc.hardware, default_hardware_path())) << file;
  return {file, rc.measured.at("task_duration_us").get<double>(), modeled(file, "task_duration_us"),
          rc.measured.at("mte2_time_us").get<double>(), modeled(file, "mte2_time_us")};
}

double rel_err(double modeled, double measured) {
  return std::abs(modeled / measured - 1);
}

TEST(Calibration, GmToUbRowsWithin15PercentAndInOrder) {
  std::vector<Row> rows;
  for (const char* f : {"dma_gm_to_ub_ub_tile_1x64.json", "dma_gm_to_ub_ub_tile_64x64.json",
                        "dma_gm_to_ub_ub_tile_64x1024.json"}) {
    rows.push_back(run_experiment(f));
    const Row& r = rows.back();
    EXPECT_LT(rel_err(r.modeled_us, r.measured_us), 0.15) << r.name << " " << r.modeled_us;
    EXPECT_LT(rel_err(r.modeled_mte2, r.measured_mte2), 0.15) << r.name << " " << r.modeled_mte2;
  }
  // Measured order: 1x64 slowest, then 64x64, then 64x1024.
  EXPECT_GT(rows[0].modeled_us, rows[1].modeled_us);
  EXPECT_GT(rows[1].modeled_us, rows[2].modeled_us);
}

TEST(Calibration, Add8192CasesWithin20Percent) {
  for (const char* f : {"add_8192_case1.json", "add_8192_case2.json", "add_8192_case3.json"}) {
    const Row r = run_experiment(f);
    EXPECT_LT(rel_err(r.modeled_us, r.measured_us), 0.20) << r.name << " " << r.modeled_us;
  }
}

// ---------------------------------------------------------------------------------------------
// The shipped measurements and their calibrated hardware file.

TEST(CalibrationShipped, MeasurementsLoadAndCiteTheSharedData) {
  const MeasurementSet& set = shipped().set;
  EXPECT_GE(set.measurements.size(), 12u);
  // Each row cites its board data: the shipped shared/data/calibration, or the public vendor
  // study a row was taken from (hicann/..., a repository path and its section).
  for (const auto& m : set.measurements)
    EXPECT_TRUE(m.source.rfind("shared/data/calibration/", 0) == 0 ||
                m.source.rfind("hicann/", 0) == 0)
        << m.id << ": " << m.source;
  EXPECT_TRUE(set.has_free);
}

TEST(CalibrationShipped, CalibratedHardwareMeetsTheAcceptanceOnShippedMeasurements) {
  // The default configs/hardware/ascend910b1.json is `tilesim calibrate` on the shipped
  // measurements: MAPE <= 10% and Spearman >= 0.9 over every row (held-out rows included).
  const Shipped& s = shipped();
  std::vector<double> measured;
  for (const auto& m : s.set.measurements) measured.push_back(m.measured);
  EXPECT_LE(mape_percent(s.modeled, measured), 10.0);
  EXPECT_GE(spearman(measured, s.modeled), 0.9);
}

}  // namespace
}  // namespace tilesim
