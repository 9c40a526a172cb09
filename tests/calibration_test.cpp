// The shipped experiment configs against the measurements they reproduce
// (shared/data/calibration: dma_gm_to_ub_a2.json GM->UB rows, add_8192_a2.json cases 1-3).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "test_support.hpp"
#include "tools/analyses/run_kernel.hpp"
#include "tools/formats/run_config.hpp"

namespace tilesim {
namespace {

struct Row {
  std::string name;
  double measured_us, modeled_us, measured_mte2, modeled_mte2;
};

Row run_experiment(const std::string& file) {
  const RunConfig rc = load_run_config(test::source_path("configs/experiments/" + file));
  const Hardware hw = load_hardware(rc.hardware);
  const RunOutcome r = run_kernel(rc.spec, hw);
  return {file, rc.measured.at("task_duration_us").get<double>(), r.metrics.kernel_time_us,
          rc.measured.at("mte2_time_us").get<double>(), r.metrics.pipes[0].mean_us};
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

}  // namespace
}  // namespace tilesim
