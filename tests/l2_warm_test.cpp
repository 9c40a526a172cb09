// The warm-L2 run option ("runtime": {"l2": "warm"}): a rerun without an L2 flush starts with the
// graph's inputs resident when they fit, and gains nothing when they do not.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "model/error.hpp"
#include "sim/l2_residency.hpp"
#include "sim/simulator.hpp"
#include "test_support.hpp"
#include "tools/analyses/run_kernel.hpp"
#include "tools/formats/run_config.hpp"

namespace tilesim {
namespace {

// One task reading two input blocks (1000 B each) and writing one output block (1000 B).
TaskGraph read_two_write_one() {
  TaskGraph g;
  g.add_psg("t");
  TaskKind k;
  k.psg = 0;
  const int32_t kind = g.add_kind(k);
  const int32_t t = g.add_task(kind, 0);
  g.add_access(t, {1, 1000, false});
  g.add_access(t, {2, 1000, false});
  g.add_access(t, {3, 1000, true});
  g.finalize();
  return g;
}

TEST(L2Warm, InputsThatFitAreResidentAndCostNoHbm) {
  const TaskGraph g = read_two_write_one();
  // Footprint 3000 B fits 4096 B: writes are absorbed; cold reads miss (2000 of 3000 B).
  EXPECT_DOUBLE_EQ(L2Residency(g, 4096, false).on_start(0, 3.0).hbm, 2.0);
  EXPECT_DOUBLE_EQ(L2Residency(g, 4096, true).on_start(0, 3.0).hbm, 0.0);
}

TEST(L2Warm, InputsThatDoNotFitGainNothing) {
  const TaskGraph g = read_two_write_one();
  // 2000 B of inputs in 1500 B of L2: no preload; every byte goes to HBM either way.
  EXPECT_DOUBLE_EQ(L2Residency(g, 1500, false).on_start(0, 3.0).hbm, 3.0);
  EXPECT_DOUBLE_EQ(L2Residency(g, 1500, true).on_start(0, 3.0).hbm, 3.0);
}

TEST(L2Warm, IsReadFromTheRuntimeKeyAndDefaultsToCold) {
  auto doc = nlohmann::json::parse(
      R"({"op": "relu", "shape": [64, 1024], "tile": [8, 1024], "dtype": "fp32"})");
  EXPECT_FALSE(runtime_options_from_json(doc, "a.json").l2_warm);
  doc["runtime"] = {{"l2", "warm"}};
  EXPECT_TRUE(runtime_options_from_json(doc, "a.json").l2_warm);
  doc["runtime"] = {{"l2", "hot"}};
  try {
    runtime_options_from_json(doc, "a.json");
    ADD_FAILURE() << "accepted l2 hot";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "a.json: runtime.l2: \"hot\" is not allowed (allowed: cold, warm)");
  }
}

// A bandwidth-bound relu (64 MiB in, 64 MiB out on 48 cores): warm runs faster when its input fits
// L2, and exactly as fast as cold when L2 is smaller than the input.
TEST(L2Warm, WarmSmallInputRunsFasterAndTooLargeGainsNothing) {
  const RunConfig rc = load_run_config(test::source_path("configs/examples/relu_4096x4096.json"));
  Hardware hw = load_hardware(rc.hardware);
  SimOptions cold, warm;
  warm.l2_warm = true;
  ASSERT_GE(hw.l2.bytes, 2 * (int64_t{64} << 20));  // input and output fit
  const double cold_us = run_kernel(rc.spec, hw, cold).metrics.kernel_time_us;
  const double warm_us = run_kernel(rc.spec, hw, warm).metrics.kernel_time_us;
  EXPECT_LT(warm_us, cold_us);
  hw.l2.bytes = int64_t{32} << 20;  // half the input
  EXPECT_DOUBLE_EQ(run_kernel(rc.spec, hw, warm).metrics.kernel_time_us,
                   run_kernel(rc.spec, hw, cold).metrics.kernel_time_us);
}

}  // namespace
}  // namespace tilesim
