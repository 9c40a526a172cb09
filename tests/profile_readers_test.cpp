// tools/calibration/profile_import.hpp: a board-profile reader is one file and one line. A toy
// reader, defined and registered here, is listed after the built-ins and run by name as the CLI
// (`measurements from-<name>`) and Python (tilesim._core.measurements_from) run every reader.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "model/error.hpp"
#include "test_support.hpp"
#include "tools/calibration/board_measurements.hpp"
#include "tools/calibration/profile_import.hpp"

namespace tilesim {
namespace {

// The toy format: text files of task durations in us, one a line, each file launches of the one
// run config given: one kernel, its task_duration_us the median.
ProfileImport import_toy(const ProfileInputs& in) {
  std::vector<double> us;
  for (const auto& f : in.files("log")) {
    std::ifstream s(f);
    if (!s) throw Error(f + ": cannot read");
    for (double v; s >> v;) us.push_back(v);
  }
  BoardKernel k;
  k.id = "toy";
  k.source = "toy logs";
  k.mapping = "the run config given";
  k.config_file = in.value("config");
  k.figures.push_back({"task_duration_us", median(us), static_cast<int64_t>(us.size()),
                       *std::min_element(us.begin(), us.end()),
                       *std::max_element(us.begin(), us.end())});
  ProfileImport out;
  out.measurements.description = "toy logs";
  out.measurements.kernels.push_back(k);
  out.inputs = in.files("log");
  out.inputs.push_back(in.value("config"));
  return out;
}

ProfileReader toy_reader() {
  return {"toy",
          "toy logs of one run config to measurements",
          {{ProfileOption::kFiles, "log", "toy log files", true},
           {ProfileOption::kValue, "config", "the run config the logs are launches of", true}},
          import_toy};
}

// The one line.
const bool registered = register_profile_reader(toy_reader());

std::string write_log(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << text;
  return path;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  } catch (const InternalError& e) {
    return std::string("internal: ") + e.what();
  }
  return "no error";
}

TEST(ProfileReaders, AToyReaderIsListedAfterTheBuiltIns) {
  EXPECT_TRUE(registered);
  std::vector<std::string> names;
  for (const auto& r : profile_readers()) names.push_back(r.name);
  EXPECT_EQ(names, (std::vector<std::string>{"msprof", "swimlane", "toy"}));
  const auto toy = find_profile_reader("toy");
  ASSERT_TRUE(toy);
  ASSERT_EQ(toy->options.size(), 2u);
  EXPECT_EQ(toy->options[0].name, "log");
  EXPECT_EQ(toy->options[0].kind, ProfileOption::kFiles);
  EXPECT_FALSE(find_profile_reader("nope"));
}

TEST(ProfileReaders, AToyReaderIsRunByNameToAMeasurementsFile) {
  const std::string cfg = test::source_path("configs/examples/add_pypto.json");
  const std::string a = write_log("toy_a.log", "10\n12\n"), b = write_log("toy_b.log", "11\n");
  ProfileImport in = import_profile("toy", {{{"log", {a, b}}, {"config", {cfg}}}});
  EXPECT_EQ(in.inputs, (std::vector<std::string>{a, b, cfg}));
  const std::string out = ::testing::TempDir() + "toy_measurements.json";
  const nlohmann::json j = imported_file_json(in.measurements, "calibrate", {}, out);
  ASSERT_EQ(j.at("measurements").size(), 1u) << j.dump(2);
  const auto& m = j.at("measurements").at(0);
  EXPECT_EQ(m.at("id"), "toy.task_duration_us");
  EXPECT_EQ(m.at("metric"), "task_duration_us");
  EXPECT_EQ(m.at("measured"), 11.0) << m.dump(2);
  EXPECT_EQ(m.at("source"), "toy logs of 3 (10 .. 12)");
}

// The built-ins run by name as their functions run them.
TEST(ProfileReaders, TheBuiltInsRunByNameAsTheirFunctions) {
  const std::string board = test::source_path("configs/measurements/board/");
  const std::string csv = board + "relu_op_summary.csv", map = board + "relu_msprof_map.json";
  ProfileImport by_name = import_profile("msprof", {{{"csv", {csv}}, {"map", {map}}}});
  ProfileImport direct = import_msprof({csv}, map);
  EXPECT_EQ(by_name.inputs, direct.inputs);
  EXPECT_EQ(measurements_file_json(by_name.measurements, "m.json"),
            measurements_file_json(direct.measurements, "m.json"));
  // An option not given takes its fallback (--time-unit us), as the CLI's does.
  const std::string lane = board + "add_pypto_16x4096_swimlane.json";
  const std::string cfg = board + "add_pypto_16x4096.json";
  ProfileImport lanes = import_profile("swimlane", {{{"trace", {lane}}, {"config", {cfg}}}});
  ProfileImport lanes_direct = import_swimlanes({lane}, cfg, "", "us", "", "");
  EXPECT_EQ(measurements_file_json(lanes.measurements, "m.json"),
            measurements_file_json(lanes_direct.measurements, "m.json"));
}

TEST(ProfileReaders, BadNamesAreErrorsNamingWhatThereIs) {
  EXPECT_EQ(error_of([] { import_profile("nope", {}); }),
            "profile reader 'nope': allowed msprof, swimlane, toy");
  EXPECT_EQ(error_of([] {
              import_profile("toy", {{{"log", {"x"}}, {"cfg", {"y"}}}});
            }),
            "profile reader toy: unknown input 'cfg' (allowed: log, config)");
  EXPECT_EQ(error_of([] {
              import_profile("toy", {{{"log", {"x"}}}});
            }),
            "profile reader toy: config is required");
  EXPECT_EQ(error_of([] {
              import_profile("toy", {{{"log", {"x"}}, {"config", {"a", "b"}}}});
            }),
            "profile reader toy: config takes one value, got 2");
  EXPECT_EQ(error_of([] { register_profile_reader(toy_reader()); }),
            "internal: profile reader registered twice: toy");
}

}  // namespace
}  // namespace tilesim
