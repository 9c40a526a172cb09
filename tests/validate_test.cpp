// `tilesim validate`: the scores against hand counts, the dataset reader's one-line rejections,
// not-expressible points counted and never run, and the exit code when a dataset misses its own
// tolerances.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "model/error.hpp"
#include "test_support.hpp"
#include "tools/calibration/fit.hpp"
#include "tools/calibration/validate.hpp"
#include "tools/calibration/validate_sensitivity.hpp"
#include "tools/calibration/validation_dataset.hpp"

namespace tilesim {
namespace {

TEST(Validate, RankCorrelationCountsTimesWithinThreePercentAsTies) {
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {10, 20, 30, 40}, kTiePct), 1.0);
  EXPECT_DOUBLE_EQ(spearman({1, 2, 3, 4}, {40, 30, 20, 10}, kTiePct), -1.0);
  // 1 and 1.02 tie (2% apart); the model's inverted order of the pair does not count against it.
  EXPECT_DOUBLE_EQ(spearman({1, 1.02, 2, 3}, {1, 0.99, 2, 3}, kTiePct), 1.0);
  // 1 and 1.05 do not tie: ranks {1,2,3} against {2,1,3}: rho = 1 - 6*2/(3*8) = 0.5.
  EXPECT_DOUBLE_EQ(spearman({1, 1.05, 2}, {1.05, 1, 2}, kTiePct), 0.5);
  // Every measured time within 3% of the fastest: one tie group, no order to compare.
  EXPECT_TRUE(std::isnan(spearman({1, 1.01, 1.02}, {1, 2, 3}, kTiePct)));
}

// A side that is all one tie group has rank variance 0 (Pearson's formula is 0/0): both sides
// flat agree (identical rank vectors, 1); one side flat carries no order the other shows (the
// covariance, 0).
TEST(Validate, RankAgreementWhenASideIsOneTieGroup) {
  EXPECT_DOUBLE_EQ(rank_agreement({100, 101, 102}, {50, 50.5, 51}), 1.0);
  // sub_003 as measured against a model that ties its three points: the board's 2001.41 is 18%
  // above the rest, so the board orders what the model calls equal.
  EXPECT_DOUBLE_EQ(rank_agreement({1695.11, 2001.41, 1709.26}, {1698.28, 1698.34, 1698.32}), 0.0);
  // The board ties what the model orders: no agreement either.
  EXPECT_DOUBLE_EQ(rank_agreement({1, 1.01, 1.02}, {1, 2, 3}), 0.0);
  // amin_003 as measured: 2864.9 is 3.06% above 2779.78, a group of its own.
  EXPECT_DOUBLE_EQ(rank_agreement({2864.9, 2840.48, 2801.2, 2779.78}, {2786, 2781, 2781, 2792}),
                   0.0);
  // Neither side flat: Spearman with 3% ties, ranks {1, 2, 3} against {2, 1, 3}.
  EXPECT_DOUBLE_EQ(rank_agreement({1, 1.05, 2}, {1.05, 1, 2}), 0.5);
  EXPECT_TRUE(std::isnan(rank_agreement({1}, {2})));
}

ValidationSweep hand_sweep(const std::vector<double>& measured) {
  ValidationSweep sw;
  sw.name = "s";
  for (size_t i = 0; i < measured.size(); ++i) {
    ValidationPoint p;
    p.label = std::to_string(i);
    p.measured = measured[i];
    p.run.emplace();
    sw.points.push_back(p);
  }
  return sw;
}

TEST(Validate, SweepScoresMatchHandCounts) {
  ValidationSweep sw = hand_sweep({10, 20, 40, 5});
  sw.points[3].run.reset();
  sw.points[3].not_expressible = "no such op";
  const std::vector<PointOutcome> out = {{12, ""}, {20, ""}, {36, ""}, {NAN, ""}};
  const SweepScore s = score_sweep(sw, out);
  EXPECT_EQ(s.evaluated, 3u);
  EXPECT_EQ(s.not_expressible, 1u);
  EXPECT_EQ(s.rejected, 0u);
  // Normalised to each side's best: measured 1, 2, 4; modeled 1, 5/3, 3.
  EXPECT_NEAR(s.norm_err_pct[1], -100.0 / 6, 1e-9);
  EXPECT_NEAR(s.norm_err_pct[2], -25.0, 1e-9);
  EXPECT_NEAR(s.norm_mape_pct, (0 + 100.0 / 6 + 25) / 3, 1e-9);
  EXPECT_NEAR(s.abs_mape_pct, (20 + 0 + 10) / 3.0, 1e-9);  // +20%, 0%, -10%
  EXPECT_TRUE(std::isnan(s.norm_err_pct[3]));
  EXPECT_TRUE(s.argmin_match);
  EXPECT_EQ(s.worst, 2u);
  EXPECT_NEAR(s.worst_norm_err_pct, -25.0, 1e-9);
  EXPECT_DOUBLE_EQ(s.rank_corr, 1.0);
}

TEST(Validate, ASweepTheModelFlattensScoresZeroRankCorrelation) {
  // The board puts 12 20% above 10; the model puts them 1% apart: one tie group.
  EXPECT_DOUBLE_EQ(score_sweep(hand_sweep({10, 12}), {{10, ""}, {10.1, ""}}).rank_corr, 0.0);
  EXPECT_DOUBLE_EQ(score_sweep(hand_sweep({10, 10.2}), {{10, ""}, {10.1, ""}}).rank_corr, 1.0);
  EXPECT_TRUE(std::isnan(score_sweep(hand_sweep({10}), {{10, ""}}).rank_corr));
}

TEST(Validate, ArgminMatchesWithinTheTieAndRejectedPointsAreCounted) {
  const ValidationSweep sw = hand_sweep({10, 10.2, 30});
  // The model prefers point 1, measured 2% above the best: a tie, so the argmin matches.
  SweepScore s = score_sweep(sw, {{11, ""}, {10, ""}, {30, ""}});
  EXPECT_TRUE(s.argmin_match);
  EXPECT_EQ(s.modeled_argmin, 1u);
  s = score_sweep(hand_sweep({10, 11, 30}), {{11, ""}, {10, ""}, {30, ""}});
  EXPECT_FALSE(s.argmin_match);
  s = score_sweep(sw, {{11, ""}, {NAN, "UB overflow"}, {30, ""}});
  EXPECT_EQ(s.rejected, 1u);
  EXPECT_EQ(s.evaluated, 2u);
}

// One folder per process: ctest runs the cases (and other builds theirs) at once.
std::filesystem::path temp_dir() {
  return std::filesystem::temp_directory_path() /
         ("tilesim_validate_test_" + std::to_string(::getpid()));
}

std::string write_temp(const std::string& name, const nlohmann::json& j) {
  const auto dir = temp_dir();
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path) << j.dump(1);
  return path.string();
}

nlohmann::json relu_config(int64_t rows) {
  return {{"op", "relu"},
          {"shape", {rows, 1024}},
          {"tile", {8, 1024}},
          {"dtype", "fp32"},
          {"partition", {{"style", "ascendc"}, {"cores", 8}}}};
}

nlohmann::json small_dataset() {
  return {
      {"description", "test"},
      {"hardware", "ascend910b1"},
      {"sweeps",
       {{{"name", "rows"},
         {"axis", "rows"},
         {"points",
          {{{"x", 64}, {"measured", 10.0}, {"mapping", "same op"}, {"config", relu_config(64)}},
           {{"x", 1024}, {"measured", 40.0}, {"mapping", "same op"}, {"config", relu_config(1024)}},
           {{"x", 4096}, {"measured", 90.0}, {"not_expressible", "needs a fused op"}}}}}}}};
}

std::string load_error(const nlohmann::json& j) {
  try {
    load_validation_dataset(write_temp("bad.json", j));
  } catch (const Error& e) {
    const std::string what = e.what();
    return what.substr(what.find("bad.json"));
  }
  return "(accepted)";
}

TEST(Validate, DatasetRejectionsNameTheFileAndKey) {
  auto j = small_dataset();
  j["sweeps"][0]["points"][0].erase("mapping");
  EXPECT_EQ(load_error(j), "bad.json: sweeps[0].points[0].mapping: missing");
  j = small_dataset();
  j["sweeps"][0]["points"][2]["config"] = relu_config(64);
  EXPECT_EQ(load_error(j),
            "bad.json: sweeps[0].points[2].not_expressible: a point the model cannot express has "
            "no config or config_file");
  j = small_dataset();
  j["sweeps"][0]["metric"] = "speed";
  EXPECT_EQ(load_error(j).substr(0, 52), "bad.json: sweeps[0].metric: unknown metric 'speed' (");
  j = small_dataset();
  j["tolerances"] = {{"min_rank_corr", 2}};
  EXPECT_EQ(load_error(j), "bad.json: tolerances.min_rank_corr: out of range: 2 (allowed -1 to 1)");
}

TEST(Validate, AKnownMissNeedsAReasonAndAFloorBelowTheDatasets) {
  auto j = small_dataset();
  j["sweeps"][0]["known_miss"] = {{"min_rank_corr", 0}, {"why", "flat model"}};
  EXPECT_EQ(load_error(j),
            "bad.json: sweeps[0].known_miss: the dataset has no tolerances.min_rank_corr to fall "
            "short of");
  j["tolerances"] = {{"min_rank_corr", 0.5}};
  j["sweeps"][0]["known_miss"]["min_rank_corr"] = 0.5;
  EXPECT_EQ(load_error(j),
            "bad.json: sweeps[0].known_miss.min_rank_corr: 0.5 is not below the dataset's "
            "min_rank_corr 0.5: not a miss");
  j["sweeps"][0]["known_miss"] = {{"min_rank_corr", 0}, {"why", ""}};
  EXPECT_EQ(load_error(j),
            "bad.json: sweeps[0].known_miss.why: expected why the model misses the sweep's rank "
            "order");
  j["sweeps"][0]["known_miss"] = {{"min_rank_corr", 0}};
  EXPECT_EQ(load_error(j), "bad.json: sweeps[0].known_miss.why: missing");
}

// The relu rows sweep, measured 10 and 40 us, against a model that orders the two points the
// other way round: rank correlation -1, under the dataset's floor; a known miss at -1 holds it.
TEST(Validate, AKnownMissIsHeldToItsOwnFloorAndPrinted) {
  auto j = small_dataset();
  j["sweeps"][0]["points"][0]["measured"] = 40.0;
  j["sweeps"][0]["points"][1]["measured"] = 10.0;
  j["tolerances"] = {{"min_rank_corr", 0.5}};
  ValidationResult r = validate({load_validation_dataset(write_temp("miss.json", j))});
  ASSERT_DOUBLE_EQ(r.scores[0].sweeps[0].rank_corr, -1.0);
  ASSERT_EQ(r.scores[0].violations.size(), 1u);
  EXPECT_EQ(r.scores[0].violations[0], "sweep 'rows': rank correlation -1.00 < min_rank_corr 0.5");
  j["sweeps"][0]["known_miss"] = {{"min_rank_corr", -0.5}, {"why", "inverted"}};
  r = validate({load_validation_dataset(write_temp("miss.json", j))});
  ASSERT_EQ(r.scores[0].violations.size(), 1u);
  EXPECT_EQ(r.scores[0].violations[0],
            "sweep 'rows': rank correlation -1.00 < known_miss.min_rank_corr -0.5");
  j["sweeps"][0]["known_miss"]["min_rank_corr"] = -1;
  const test::CmdResult out = test::run_cli("validate " + write_temp("miss.json", j));
  EXPECT_EQ(out.code, 0) << out.out;
  EXPECT_NE(out.out.find("  known miss: rows rank correlation -1.00 (held to >= -1): inverted\n"),
            std::string::npos)
      << out.out;
}

TEST(Validate, NotExpressiblePointsAreReportedAndDoNotCount) {
  const ValidationResult r =
      validate({load_validation_dataset(write_temp("ok.json", small_dataset()))});
  ASSERT_EQ(r.scores.size(), 1u);
  EXPECT_EQ(r.scores[0].evaluated, 2u);
  EXPECT_EQ(r.scores[0].not_expressible, 1u);
  EXPECT_TRUE(std::isnan(r.scores[0].points[0][2].modeled));
  EXPECT_TRUE(r.within());  // no tolerances
}

// A point may be a tile program: inline ({"program": file, "tile": ...}, the file beside the
// dataset or absolute) or a program's run config file; it times as `tilesim run` does.
TEST(Validate, TileProgramsArePoints) {
  const std::string prog = test::source_path("configs/programs/gelu_16x16384.json");
  auto j = small_dataset();
  auto& points = j["sweeps"][0]["points"];
  points[0]["config"] = {{"program", prog}, {"tile", {1, 4096}}};
  points[1].erase("config");
  points[1]["config_file"] = prog;
  const ValidationResult r = validate({load_validation_dataset(write_temp("prog.json", j))});
  ASSERT_EQ(r.scores[0].evaluated, 2u);
  const auto run = [&](const std::string& tile) {
    const test::CmdResult out = test::run_cli("run " + prog + tile + " --json", false);
    return nlohmann::json::parse(out.out)["kernel_time_us"].get<double>();
  };
  EXPECT_NEAR(r.scores[0].points[0][0].modeled, run(" --tile 1,4096"), 1e-9);
  EXPECT_NEAR(r.scores[0].points[0][1].modeled, run(""), 1e-9);
  points[0]["config"].erase("tile");
  points[0]["config"]["program"] = "no_such_program.json";
  EXPECT_NE(load_error(j).find("no_such_program.json"), std::string::npos) << load_error(j);
}

// ../shared/hostile-t3 out_validate_svg_name_collision: sweeps "x/y" and "x_y" named one file and
// the second plot replaced the first ("2 SVG plots written", one file). Later ones get "-2"...
TEST(Validate, EverySweepKeepsItsOwnSvgFile) {
  const nlohmann::json point = {
      {"x", 1},
      {"measured", 1.0},
      {"mapping", "m"},
      {"config", {{"op", "add"}, {"shape", {64, 64}}, {"tile", {8, 64}}}}};
  nlohmann::json j = {{"hardware", "ascend910b1"}, {"sweeps", nlohmann::json::array()}};
  for (const char* name : {"x/y", "x_y", "X_y"})
    j["sweeps"].push_back({{"name", name}, {"points", {point}}});
  const std::string d = write_temp("d.json", j);
  const auto dir = std::filesystem::temp_directory_path() / "tilesim_validate_test" / "svgs";
  std::filesystem::remove_all(dir);
  const test::CmdResult r = test::run_cli("validate " + d + " --svg-dir " + dir.string());
  EXPECT_NE(r.out.find("3 SVG plots written to"), std::string::npos) << r.out;
  for (const char* file : {"d__x_y.svg", "d__x_y-2.svg", "d__X_y-3.svg"})
    EXPECT_TRUE(std::filesystem::exists(dir / file)) << file;
  std::filesystem::remove_all(dir);
}

TEST(Validate, ExitsOneOutsideItsOwnTolerancesAndZeroWithin) {
  auto j = small_dataset();
  j["tolerances"] = {{"max_abs_mape_pct", 0.001}};
  test::CmdResult r = test::run_cli("validate " + write_temp("tight.json", j));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("absolute MAPE"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("not expressible (1): rows rows=4096: needs a fused op"), std::string::npos)
      << r.out;
  j["tolerances"] = {{"max_abs_mape_pct", 1e6}, {"argmin", true}};
  r = test::run_cli("validate " + write_temp("loose.json", j));
  EXPECT_EQ(r.code, 0) << r.out;
  // Every point, not their mean: the worst point's error against max_abs_err_pct.
  const ValidationResult v = validate({load_validation_dataset(write_temp("loose.json", j))});
  double worst = 0, sum = 0;
  size_t n = 0;
  for (const auto& sweep : v.scores[0].sweeps)
    for (const double e : sweep.abs_err_pct)
      if (!std::isnan(e)) {
        worst = std::max(worst, std::abs(e));
        sum += std::abs(e);
        ++n;
      }
  ASSERT_GT(n, 1u);
  ASSERT_GT(worst, sum / static_cast<double>(n));  // the points' errors differ
  j["tolerances"] = {{"max_abs_err_pct", worst * 0.999}, {"max_abs_mape_pct", worst}};
  r = test::run_cli("validate " + write_temp("worst.json", j));
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("worst point's absolute error"), std::string::npos) << r.out;
  j["tolerances"] = {{"max_abs_err_pct", worst * 1.001}};
  EXPECT_EQ(test::run_cli("validate " + write_temp("worst.json", j)).code, 0);
}

// A dataset that states no tolerance is held to nothing: validate says "no tolerances", never
// "within", and the summary counts it apart from the datasets held to theirs.
TEST(Validate, ADatasetWithoutTolerancesSaysSoNotWithin) {
  const ValidationResult v =
      validate({load_validation_dataset(write_temp("free.json", small_dataset()))});
  EXPECT_STREQ(v.scores[0].status(), "no tolerances");
  EXPECT_TRUE(v.within());  // nothing failed: exit 0
  const test::CmdResult r = test::run_cli("validate " + write_temp("free.json", small_dataset()));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("tolerances: none stated: scored, held to nothing (no tolerances)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("0/0 within, 1 with no tolerances"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find(" within\n"), std::string::npos) << r.out;
  auto j = small_dataset();
  j["tolerances"] = {{"max_abs_mape_pct", 1e6}};
  EXPECT_STREQ(validate({load_validation_dataset(write_temp("held.json", j))}).scores[0].status(),
               "within");
}

// Spearman's rho over 2 or 3 points takes a handful of values: such a rank is marked "*" with a
// note, in the table, the summary, the JSON and the plot.
TEST(Validate, RanksOverFewerThanFourPointsAreMarked) {
  const std::string f = write_temp("few.json", small_dataset());  // 2 evaluated points
  const test::CmdResult r = test::run_cli("validate " + f);
  EXPECT_NE(r.out.find("1.00*"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("* rank correlation over fewer than 4 points"), std::string::npos) << r.out;
  const test::CmdResult j = test::run_cli("validate " + f + " --json", false);
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_TRUE(doc["datasets"][0]["sweeps"][0]["rank_few_points"].get<bool>());
  auto four = small_dataset();
  auto& points = four["sweeps"][0]["points"];
  for (const int64_t rows : {2048, 8192})
    points.push_back({{"x", rows},
                      {"measured", 10.0 * static_cast<double>(rows) / 64},
                      {"mapping", "same op"},
                      {"config", relu_config(rows)}});
  const ValidationResult v = validate({load_validation_dataset(write_temp("four.json", four))});
  EXPECT_EQ(v.scores[0].sweeps[0].evaluated, 4u);
  EXPECT_FALSE(v.scores[0].sweeps[0].few_rank_points());
}

// The worst point's figures are absolute times: the line gives the absolute error beside the
// normalised one it is chosen by.
TEST(Validate, TheWorstPointShowsBothErrors) {
  const test::CmdResult r = test::run_cli("validate " + write_temp("worst2.json", small_dataset()));
  EXPECT_NE(r.out.find("% normalised, "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("% absolute ("), std::string::npos) << r.out;
}

// Exit 1 is a verdict: --json and --csv are written with it, as on success.
TEST(Validate, WritesItsFilesWhateverTheVerdict) {
  auto j = small_dataset();
  j["tolerances"] = {{"max_abs_mape_pct", 0.001}};
  const auto dir = temp_dir();
  const auto json = dir / "verdict.json", csv = dir / "verdict.csv";
  std::filesystem::remove(json);
  std::filesystem::remove(csv);
  const test::CmdResult r = test::run_cli("validate " + write_temp("tight2.json", j) + " --json " +
                                          json.string() + " --csv " + csv.string());
  EXPECT_EQ(r.code, 1) << r.out;
  ASSERT_TRUE(std::filesystem::exists(json)) << r.out;
  ASSERT_TRUE(std::filesystem::exists(csv)) << r.out;
  std::ifstream in(json);
  const auto doc = nlohmann::json::parse(in);
  EXPECT_FALSE(doc["within"].get<bool>());
  EXPECT_EQ(doc["datasets"][0]["status"], "OUTSIDE");
}

// A dataset that states why the model misses it is still scored against its tolerances and
// reported outside them ("OUTSIDE (known)", the reason printed), but does not fail the run; an
// empty reason is refused.
TEST(Validate, AKnownOutsideDatasetIsReportedOutsideWithItsReasonAndPasses) {
  auto j = small_dataset();
  j["tolerances"] = {{"max_abs_mape_pct", 0.001}};
  j["known_outside"] = "the board is another chip: 260 us of HBM against 181 us measured";
  const ValidationResult v = validate({load_validation_dataset(write_temp("known.json", j))});
  EXPECT_FALSE(v.scores[0].within());
  EXPECT_STREQ(v.scores[0].status(), "OUTSIDE (known)");
  EXPECT_TRUE(v.within());
  const test::CmdResult r = test::run_cli("validate " + write_temp("known.json", j));
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("OUTSIDE (known)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("    known: the board is another chip: 260 us of HBM against 181 us"),
            std::string::npos)
      << r.out;
  j["known_outside"] = "";
  EXPECT_EQ(load_error(j),
            "bad.json: known_outside: expected why the model misses, with the numbers");
}

// A point the board refused to run (no time) is run to check the model refuses it too: a
// match is reported with the model's reason and never scored; a model that runs it breaks the
// dataset, whatever its tolerances.
TEST(Validate, BoardRejectedPointsMustBeRejectedByTheModel) {
  auto j = small_dataset();
  auto huge = relu_config(64);
  huge["tile"] = {64, 4096};  // 1 MiB fp32 tiles: over the 192 KiB UB
  j["sweeps"][0]["points"][2] = {
      {"x", 4096}, {"board_rejected", "UB overflow"}, {"mapping", "too big"}, {"config", huge}};
  ValidationResult r = validate({load_validation_dataset(write_temp("rej.json", j))});
  EXPECT_EQ(r.scores[0].sweeps[0].board_rejections, 1u);
  EXPECT_EQ(r.scores[0].evaluated, 2u);
  EXPECT_TRUE(r.within());
  test::CmdResult out = test::run_cli("validate " + write_temp("rej.json", j));
  EXPECT_EQ(out.code, 0) << out.out;
  EXPECT_NE(out.out.find("rows rows=4096: as on the board (UB overflow): UB overflow in task"),
            std::string::npos)
      << out.out;
  j["sweeps"][0]["points"][2]["config"] = relu_config(64);  // fits: the model runs it
  r = validate({load_validation_dataset(write_temp("rej.json", j))});
  ASSERT_EQ(r.scores[0].violations.size(), 1u);
  EXPECT_EQ(r.scores[0].violations[0].substr(0, 77),
            "sweep 'rows': rows=4096: the board rejected it (UB overflow), the model ran i");
  j["sweeps"][0]["points"][2]["measured"] = 3.0;
  EXPECT_EQ(load_error(j),
            "bad.json: sweeps[0].points[2].measured: a point the board rejected has no time (null "
            "or absent)");
}

// --sensitivity on the KernelBench 910B4 set: every point is an SPMD vector kernel, so moving
// kernel.vector_launch_us by +-50% moves each modeled time by exactly +-0.55 us, and the pooled
// absolute MAPE follows by hand; a cube parameter moves nothing.
TEST(Validate, SensitivityMovesOneParameterAtATime) {
  const ValidationResult base = validate_files(
      {test::source_path("configs/validation/kernelbench_elementwise_910b4.json")}, "", 2);
  const auto sens = validation_sensitivity(
      base, sensitivity_keys("cube.fp16_cycles_per_fractal,kernel.vector_launch_us"), 0.5, 2);
  ASSERT_EQ(sens.size(), 1u);
  ASSERT_EQ(sens[0].params.size(), 2u);
  const ParamSwing& launch = sens[0].params[0];  // the larger swing comes first
  EXPECT_EQ(launch.key, "kernel.vector_launch_us");
  EXPECT_DOUBLE_EQ(launch.value, 1.1);
  EXPECT_DOUBLE_EQ(launch.low, 0.55);
  EXPECT_DOUBLE_EQ(launch.high, 1.65);
  for (const double shift : {-0.55, 0.55}) {
    double sum = 0;
    size_t n = 0;
    const auto& ds = base.datasets[0];
    for (size_t s = 0; s < ds.sweeps.size(); ++s)
      for (size_t p = 0; p < ds.sweeps[s].points.size(); ++p) {
        const PointOutcome& o = base.scores[0].points[s][p];
        if (!o.evaluated()) continue;
        const double t = ds.sweeps[s].points[p].measured;
        sum += std::abs(o.modeled + shift - t) / t;
        ++n;
      }
    EXPECT_NEAR(shift < 0 ? launch.abs_low : launch.abs_high, 100 * sum / n, 1e-9);
  }
  const ParamSwing& cube = sens[0].params[1];
  EXPECT_EQ(cube.key, "cube.fp16_cycles_per_fractal");
  EXPECT_DOUBLE_EQ(cube.swing, 0.0);
  EXPECT_DOUBLE_EQ(cube.abs_low, base.scores[0].abs_mape_pct);
  // An integer or unknown key is refused, naming the real-valued ones; none given is all of them.
  const std::string bad = test::error_of([] { sensitivity_keys("cores.aiv"); });
  EXPECT_EQ(bad.rfind("--sensitivity-keys: 'cores.aiv' is not a real-valued hardware parameter "
                      "(allowed: clock_mhz, ",
                      0),
            0u);
  EXPECT_NE(bad.find("kernel.vector_launch_us"), std::string::npos);
  size_t real = 0;
  for (const HardwareParam& p : hardware_params()) real += p.is_integer() ? 0 : 1;
  EXPECT_EQ(sensitivity_keys("").size(), real);
}

}  // namespace
}  // namespace tilesim
