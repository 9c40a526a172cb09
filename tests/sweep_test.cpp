// The sweep tool's infrastructure: config parsing and candidate generation, the pre-check,
// determinism across thread counts, the CSV/JSON/SVG outputs, zones on synthetic inputs and the
// command line. (Rulebook outcomes on the shipped sweeps are in sweep_rules_test.cpp.)
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "kernels/spec/kernel_spec.hpp"
#include "model/error.hpp"
#include "test_support.hpp"
#include "tools/analyses/binding.hpp"
#include "tools/analyses/candidate_json.hpp"
#include "tools/analyses/run_kernel.hpp"
#include "tools/analyses/spmd_figures.hpp"
#include "tools/analyses/sweep.hpp"
#include "tools/analyses/zones.hpp"
#include "tools/formats/run_config.hpp"
#include "tools/formats/sweep_config.hpp"
#include "tools/reports/report.hpp"
#include "tools/reports/svg_plot.hpp"
#include "tools/reports/sweep_report.hpp"

namespace tilesim {
namespace {

using nlohmann::json;

SweepConfig parse(const std::string& text) {
  return sweep_config_from_json(json::parse(text), "test.json");
}

std::string parse_error(const std::string& text, const Hardware* hw = nullptr) {
  try {
    const SweepConfig cfg = parse(text);
    if (hw) expand_candidates(cfg, *hw);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// ---- config parsing and candidate generation ----

TEST(SweepConfig, ParsesExplicitCandidates) {
  const auto cfg = parse(R"({
    "op": "softmax", "shape": [16, 16384], "dtype": "fp32", "dim": 1,
    "candidates": {"tiles": [[1, 8192], [2, 4096]], "loop_counts": [1, 2, 4]}})");
  EXPECT_EQ(cfg.base.op, "softmax");
  EXPECT_EQ(cfg.base.dims, std::vector<int>{1});
  ASSERT_EQ(cfg.tiles.size(), 2u);
  EXPECT_EQ(cfg.loop_counts, (std::vector<int64_t>{1, 2, 4}));
  const auto hw = test::default_hw();
  const auto cands = expand_candidates(cfg, hw);
  ASSERT_EQ(cands.size(), 6u);
  EXPECT_EQ(cands[0].tile, (Dims{1, 8192}));
  EXPECT_EQ(cands[0].loop_count, 1);
  EXPECT_EQ(cands[5].tile, (Dims{2, 4096}));
  EXPECT_EQ(cands[5].loop_count, 4);
  EXPECT_EQ(cfg.hardware, default_hardware_path());
}

TEST(SweepConfig, KernelTileAndLoopAreTheDefaultSpace) {
  const auto cfg = parse(R"({"op": "add", "shape": [16, 64], "tile": [1, 64], "loop_count": 2})");
  const auto cands = expand_candidates(cfg, test::default_hw());
  ASSERT_EQ(cands.size(), 1u);
  EXPECT_EQ(cands[0].tile, (Dims{1, 64}));
  EXPECT_EQ(cands[0].loop_count, 2);
}

TEST(SweepConfig, DuplicatesAreRemovedInOrder) {
  const auto cfg = parse(R"({"op": "add", "shape": [16, 64],
    "candidates": {"tiles": [[1, 64], [2, 32], [1, 64]], "loop_counts": [2, 1, 2]}})");
  const auto cands = expand_candidates(cfg, test::default_hw());
  ASSERT_EQ(cands.size(), 4u);
  EXPECT_EQ(cands[0].loop_count, 2);
  EXPECT_EQ(cands[1].loop_count, 1);
  EXPECT_EQ(cands[2].tile, (Dims{2, 32}));
}

TEST(SweepConfig, GeneratesPowersOfTwoAndAlignedLastDim) {
  const auto hw = test::default_hw();
  auto cfg = parse(R"({"op": "softmax", "shape": [12, 100], "dim": 1,
    "candidates": {"generate_tiles": {}}})");
  auto v = generate_tile_values(cfg, hw);
  EXPECT_EQ(v[0], (Dims{1, 2, 4, 8, 12}));  // powers of two up to the dim, then the dim
  Dims aligned;
  for (int64_t x = 8; x <= 100; x += 8) aligned.push_back(x);  // 32 B / 4 B
  EXPECT_EQ(v[1], aligned);
  EXPECT_EQ(expand_candidates(cfg, hw).size(), 5u * aligned.size());

  cfg = parse(R"({"op": "softmax", "shape": [16, 64], "dtype": "fp16", "dim": 1,
    "candidates": {"generate_tiles": {"fixed": {"0": 1}}}})");
  v = generate_tile_values(cfg, hw);
  EXPECT_EQ(v[0], (Dims{1}));
  EXPECT_EQ(v[1], (Dims{16, 32, 48, 64}));  // 32 B / 2 B

  cfg = parse(R"({"op": "softmax", "shape": [16, 1024], "dim": 1,
    "candidates": {"generate_tiles": {"fixed": {"-1": 256}, "max": [4, 1024]}}})");
  v = generate_tile_values(cfg, hw);
  EXPECT_EQ(v[0], (Dims{1, 2, 4}));
  EXPECT_EQ(v[1], (Dims{256}));

  cfg = parse(R"({"op": "softmax", "shape": [4, 1000], "dim": 1,
    "candidates": {"generate_tiles": {"last_dim": "pow2"}}})");
  v = generate_tile_values(cfg, hw);
  EXPECT_EQ(v[1], (Dims{8, 16, 32, 64, 128, 256, 512, 1000}));
}

TEST(SweepConfig, GeneratesLoopCountsOnALogScale) {
  const auto hw = test::default_hw();
  auto cfg = parse(R"({"op": "add", "shape": [256, 64], "tile": [1, 64],
    "candidates": {"generate_loop_counts": {"from": 1, "to": 128}}})");
  std::vector<int64_t> loops;
  for (const auto& c : expand_candidates(cfg, hw)) loops.push_back(c.loop_count);
  EXPECT_EQ(loops, (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 128}));
  cfg = parse(R"({"op": "add", "shape": [256, 64], "tile": [1, 64],
    "candidates": {"loop_counts": [3], "generate_loop_counts": {"from": 2, "to": 100,
    "factor": 4}}})");
  loops.clear();
  for (const auto& c : expand_candidates(cfg, hw)) loops.push_back(c.loop_count);
  EXPECT_EQ(loops, (std::vector<int64_t>{3, 2, 8, 32}));
}

TEST(SweepConfig, UnknownKeysNameTheKeyAndTheAllowedOnes) {
  const std::string k = R"("op": "softmax", "shape": [16, 64], "dim": 1, )";
  EXPECT_NE(parse_error("{" + k + R"("tiel": [1, 64]})").find("tiel: unknown key"),
            std::string::npos);
  std::string e = parse_error("{" + k + R"("candidates": {"tilez": [[1, 64]]}})");
  EXPECT_NE(e.find("candidates.tilez: unknown key"), std::string::npos) << e;
  EXPECT_NE(e.find("generate_tiles"), std::string::npos) << e;
  e = parse_error("{" + k + R"("candidates": {"tiles": [[1, 64]], "constraints": {"limit": 1}}})");
  EXPECT_NE(e.find("candidates.constraints.limit: unknown key"), std::string::npos) << e;
  e = parse_error("{" + k + R"("candidates": {"generate_tiles": {"step": 8}}})");
  EXPECT_NE(e.find("candidates.generate_tiles.step: unknown key"), std::string::npos) << e;
  e = parse_error("{" + k + R"("candidates": {"generate_loop_counts": {"to": 8, "x": 1}}})");
  EXPECT_NE(e.find("candidates.generate_loop_counts.x: unknown key"), std::string::npos) << e;
  e = parse_error("{" + k + R"("tile": [1, 64], "zones": {"tol": 0.1}})");
  EXPECT_NE(e.find("zones.tol: unknown key"), std::string::npos) << e;
}

TEST(SweepConfig, ImpossibleSpacesSayWhatIsWrong) {
  const auto hw = test::default_hw();
  const std::string k = R"("op": "softmax", "shape": [16, 64], "dim": 1, )";
  auto has = [&](const std::string& text, const std::string& needle) {
    const std::string e = parse_error(text, &hw);
    EXPECT_NE(e.find(needle), std::string::npos) << "error: '" << e << "' for " << text;
    EXPECT_EQ(e.find('\n'), std::string::npos) << e;
  };
  has("{" + k + R"("candidates": {"generate_loop_counts": {"from": 8, "to": 4}}, "tile": [1, 64]})",
      "impossible space: to = 4 is below from = 8");
  has("{" + k + R"("candidates": {"tiles": [[64]]}})",
      "candidates.tiles[0]: expected an array of 2 positive integers");
  has("{" + k + R"("candidates": {"tiles": [[1, 0]]}})", "candidates.tiles[0]");
  has("{" + k + R"("candidates": {"tiles": []}})", "candidates.tiles: expected a non-empty");
  has("{" + k + R"("candidates": {"loop_counts": [0], "tiles": [[1, 64]]}})",
      "candidates.loop_counts[0]: out of range: 0 (allowed >= 1)");
  has("{" + k + R"("candidates": {"generate_tiles": {"fixed": {"2": 1}}}})",
      "candidates.generate_tiles.fixed.2: not a tile dim of a rank-2 shape");
  has("{" + k + R"("candidates": {"generate_tiles": {"fixed": {"1": 12}}}})",
      "impossible space: 12 x 4 B is not a multiple of the 32 B alignment");
  has("{" + k + R"("candidates": {"generate_tiles": {"max": [16, 4]}}})",
      "impossible space: no aligned tile value up to 4 in dim 1");
  has("{" + k + R"("candidates": {"generate_tiles": {"fixed": {"0": 32}},
      "constraints": {"allow_tile_over_shape": false}}})",
      "32 exceeds the shape (16)");
  has("{" + k + R"("candidates": {"constraints": {}}})", "no tile space");
  has("{" + k + R"("candidates": {"tiles": [[1, 64]], "axis": "tile:5"}})",
      "candidates.axis: 'tile:5' names no tile dim of a rank-2 shape (allowed -2..1)");
  has("{" + k + R"("candidates": {"tiles": [[1, 64]], "axis": "rows"}})",
      "is not \"auto\", \"loop_count\", \"grid\" or \"tile:N\"");
  has(R"({"shape": [16, 64], "candidates": {"tiles": [[1, 64]]}})", "op: missing");
  has(R"({"op": "softmax", "shape": [16, 64], "dim": 1})", "candidates: missing");
}

// candidates.params: every combination of the op's param values is a candidate; each runs as the
// run config with those params does, and the outputs name them.
TEST(SweepConfig, ParamValuesAreCandidatesThatRunAsTheirRunConfig) {
  const auto hw = test::default_hw();
  const std::string kernel =
      R"("op": "matmul", "shape": [1024, 1024, 1024], "dtype": "fp16", "tile": [128, 256, 256],
         "partition": {"style": "spmd"}, "params": {"assignment": "contiguous"}, )";
  const auto cfg = parse("{" + kernel + R"("candidates": {"grids": [8],
      "params": {"l0_tile": [[128, 256, 64], [128, 128, 64]], "swizzle": [[3, 0], [1, 0]]}}})");
  const auto cands = expand_candidates(cfg, hw);
  ASSERT_EQ(cands.size(), 4u);
  EXPECT_EQ(cands[1].params, json::parse(R"({"l0_tile": [128, 256, 64], "swizzle": [1, 0]})"));
  const SweepResult r = run_sweep(cfg, hw);
  std::set<double> times;
  for (const auto& c : r.candidates) {
    ASSERT_TRUE(c.ok) << c.reason;
    json run = json::parse("{" + kernel + R"("hardware": "ascend910b1"})");
    run["partition"]["grid"] = 8;
    for (const auto& [name, value] : c.params.items()) run["params"][name] = value;
    const RunConfig rc = run_config_from_json(run, "run.json");
    EXPECT_EQ(run_kernel(run_spec(rc), hw).metrics.gen_time_us, c.gen_time_us) << run.dump();
    EXPECT_EQ(run_spec(rc).params.at("assignment"), "contiguous");  // the kernel's own params stay
    times.insert(c.gen_time_us);
    EXPECT_EQ(candidate_from_json(candidate_to_json(c), "shard").params, c.params);
  }
  EXPECT_EQ(times.size(), 4u);  // each param moves the time
  const json j = sweep_json(cfg, hw, r);
  EXPECT_EQ(j["candidates"][0]["params"].size(), 2u);
  EXPECT_EQ(j["recommended"]["params"], r.candidates[*r.recommended].params);
  EXPECT_NE(sweep_csv(cfg, hw, r).find(",params,"), std::string::npos);
  EXPECT_NE(sweep_table(cfg, hw, r, 0).find("l0_tile [128, 128, 64], swizzle [1, 0]"),
            std::string::npos);
  // What is wrong, and where: an unknown param, a value its declaration refuses, no values, a
  // tile program.
  auto error = [&](const std::string& params) {
    return parse_error("{" + kernel + R"("candidates": {"grids": [8], "params": )" + params + "}}");
  };
  EXPECT_NE(
      error(R"({"l0_tyle": [[128, 256, 64]]})")
          .find("test.json: candidates.params.l0_tyle[0]: unknown param for matmul (allowed: "),
      std::string::npos);
  EXPECT_NE(
      error(R"({"assignment": ["strided", "diagonal"]})").find("candidates.params.assignment[1]"),
      std::string::npos);
  EXPECT_NE(error(R"({"swizzle": []})").find("candidates.params.swizzle: expected a non-empty"),
            std::string::npos);
  EXPECT_NE(error(R"([1])").find("candidates.params: "), std::string::npos);
}

// Errors carry their class where they are thrown: a malformed key is input, a space the UB
// alignment leaves empty is alignment.
TEST(SweepConfig, ErrorsCarryTheirKind) {
  const auto hw = test::default_hw();
  const std::string k = R"("op": "softmax", "shape": [16, 64], "dim": 1, )";
  auto kind_of = [&](const std::string& text) {
    try {
      expand_candidates(parse(text), hw);
    } catch (const Error& e) {
      return std::string(error_kind_name(e.kind()));
    }
    return std::string("accepted");
  };
  EXPECT_EQ(kind_of("{" + k + R"("candidates": {"tiles": [[1, 0]]}})"), "input");
  EXPECT_EQ(kind_of("{" + k + R"("candidates": {"generate_tiles": {"fixed": {"1": 12}}}})"),
            "alignment");
  EXPECT_EQ(kind_of("{" + k + R"("candidates": {"generate_tiles": {"max": [16, 4]}}})"),
            "alignment");
}

TEST(SweepConfig, EveryShippedSweepParsesAndExpands) {
  const auto dir = std::filesystem::path(test::source_path("configs/sweeps"));
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().string());
    const SweepConfig cfg = load_sweep_config(entry.path());
    const Hardware hw = load_hardware(cfg.hardware);
    EXPECT_FALSE(expand_candidates(cfg, hw).empty());
    EXPECT_FALSE(cfg.description.empty());
    ++n;
  }
  EXPECT_GE(n, 8);
}

TEST(SweepConfig, MatmulLoopSweepDerivesBasicBatchFromTheLoopCount) {
  const auto cfg =
      load_sweep_config(test::source_path("configs/sweeps/rule2_matmul_16384_loops.json"));
  const auto hw = load_hardware(cfg.hardware);
  std::vector<int64_t> loops;
  for (const auto& c : expand_candidates(cfg, hw)) loops.push_back(c.loop_count);
  EXPECT_EQ(loops, (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 64, 128}));
  EXPECT_EQ(cfg.base.shape[0], 16384);  // BASIC_BATCH = ceil_div(m, loop) is the kernel's own
}

// ---- the pre-check ----

TEST(SweepPrecheck, RejectsWithReasonsAndCountsThemByClass) {
  const auto hw = test::default_hw();
  const auto cfg = parse(R"({"op": "softmax", "shape": [16, 16384], "dim": 1,
    "candidates": {"tiles": [[1, 8192], [1, 12], [1, 8], [32, 512], [1, 2048]],
                   "constraints": {"allow_tile_over_shape": false, "min_contiguous_bytes": 16384}}})");
  const SweepResult r = run_sweep(cfg, hw, {1, nullptr});
  ASSERT_EQ(r.candidates.size(), 5u);
  EXPECT_TRUE(r.candidates[0].ok) << r.candidates[0].reason;
  EXPECT_EQ(r.candidates[1].reject_class, "alignment");
  EXPECT_NE(r.candidates[1].reason.find("misaligned"), std::string::npos);
  EXPECT_EQ(r.candidates[2].reject_class, "limits");
  EXPECT_NE(r.candidates[2].reason.find("auto_tiles = 32768 > limits.max_auto_tiles = 2048"),
            std::string::npos)
      << r.candidates[2].reason;
  EXPECT_EQ(r.candidates[3].reject_class, "tile_over_shape");
  EXPECT_EQ(r.candidates[4].reject_class, "contiguous");
  EXPECT_EQ(r.rejected_by_class.at("alignment"), 1);
  EXPECT_EQ(r.rejected_by_class.at("limits"), 1);
  EXPECT_EQ(r.rejected_by_class.at("tile_over_shape"), 1);
  EXPECT_EQ(r.rejected_by_class.at("contiguous"), 1);
  ASSERT_EQ(r.ranking.size(), 1u);
  EXPECT_EQ(*r.recommended, 0u);
}

// Candidates refused for the same reason word for word (a too-large tile at every loop count)
// are one line with their count and the first few named, not a line each.
TEST(SweepPrecheck, IdenticalRejectionsAreListedOnceWithTheirCount) {
  const auto hw = test::default_hw();
  const auto cfg = parse(R"({"op": "add", "shape": [64, 65536], "hardware": "ascend910b1",
    "candidates": {"tiles": [[64, 65536], [32, 65536]], "loop_counts": [1, 2, 4, 8]}})");
  const SweepResult r = run_sweep(cfg, hw, {1, nullptr});
  const std::string table = sweep_table(cfg, hw, r, 25, false);
  EXPECT_NE(table.find("4 candidates (tile (64, 65536) loop 1, tile (64, 65536) loop 2, tile (64, "
                       "65536) loop 4, ...): limits: prod(tile) ="),
            std::string::npos)
      << table;
  // Each reason once: the (64, 65536) one, the (32, 65536) one.
  size_t lines = 0;
  for (size_t at = table.find("4 candidates ("); at != std::string::npos;
       at = table.find("4 candidates (", at + 1))
    ++lines;
  EXPECT_EQ(lines, 2u) << table;
  EXPECT_EQ(table.find("tile (64, 65536) loop 8"), std::string::npos) << table;
  EXPECT_EQ(r.rejected_by_class.at("limits"), 8);
}

TEST(SweepPrecheck, UbOverflowComesFromTheModelsBudget) {
  const auto hw = test::default_hw();
  const auto cfg = parse(R"({"op": "add", "shape": [16, 65536],
    "candidates": {"tiles": [[1, 65536], [1, 4096]], "constraints": {"prune_over_limits": false}}})");
  const SweepResult r = run_sweep(cfg, hw, {1, nullptr});
  EXPECT_EQ(r.candidates[0].reject_class, "capacity");
  EXPECT_NE(r.candidates[0].reason.find("UB overflow"), std::string::npos);
  EXPECT_NE(r.candidates[0].reason.find("needs"), std::string::npos);
  EXPECT_TRUE(r.candidates[1].ok);
  EXPECT_EQ(r.rejected_by_class.at("capacity"), 1);
}

// The class comes from the error's kind, not its text: a cube buffer overflow is capacity too.
TEST(SweepPrecheck, L0OverflowIsFiledUnderCapacity) {
  const auto hw = test::default_hw();
  const auto cfg = parse(R"({"op": "matmul", "shape": [1024, 4096, 1024], "dtype": "fp16",
    "candidates": {"tiles": [[128, 512, 64], [128, 64, 256]],
                   "constraints": {"prune_over_limits": false}}})");
  const SweepResult r = run_sweep(cfg, hw, {1, nullptr});
  EXPECT_EQ(r.candidates[0].reject_class, "capacity") << r.candidates[0].reason;
  EXPECT_NE(r.candidates[0].reason.find("L0A overflow"), std::string::npos)
      << r.candidates[0].reason;
  EXPECT_TRUE(r.candidates[1].ok) << r.candidates[1].reason;
  EXPECT_EQ(r.rejected_by_class.at("capacity"), 1);
  EXPECT_EQ(r.rejected_by_class.count("lowering"), 0u);
}

TEST(SweepPrecheck, LimitsAreFlaggedWhenNotPruned) {
  const auto hw = test::default_hw();
  const auto cfg = parse(R"({"op": "add", "shape": [64, 4096],
    "candidates": {"tiles": [[1, 32], [8, 2048]], "constraints": {"prune_over_limits": false}}})");
  const SweepResult r = run_sweep(cfg, hw, {1, nullptr});
  ASSERT_TRUE(r.candidates[0].ok) << r.candidates[0].reason;
  const auto f = r.candidates[0].flags();
  EXPECT_NE(std::find(f.begin(), f.end(), "over_limit"), f.end());
  EXPECT_NE(std::find(f.begin(), f.end(), "under_1kb"), f.end());  // 32 x 4 B = 128 B
  EXPECT_EQ(r.candidates[0].auto_tiles, 64 * 128);
  EXPECT_EQ(r.candidates[0].diag.auto_tiles, r.candidates[0].auto_tiles);  // same figure
  EXPECT_TRUE(r.candidates[1].flags().empty());
}

TEST(SweepPrecheck, TileOverShapeIsFlaggedWhenAllowed) {
  const auto hw = test::default_hw();
  const auto cfg = parse(R"({"op": "add", "shape": [16, 256],
    "candidates": {"tiles": [[1, 512], [1, 256]]}})");
  const SweepResult r = run_sweep(cfg, hw, {1, nullptr});
  ASSERT_TRUE(r.candidates[0].ok);
  EXPECT_EQ(r.candidates[0].tile_over_shape_dims, std::vector<int>{1});
  EXPECT_EQ(r.candidates[0].flags(), std::vector<std::string>{"tile_over_shape"});
}

// ---- evaluation ----

SweepConfig small_generated_softmax() {
  return parse(R"({"op": "softmax", "shape": [8, 1024], "dim": 1,
    "candidates": {"generate_tiles": {"last_dim": "pow2"}, "loop_counts": [1, 2]}})");
}

TEST(Sweep, IdenticalOutputForAnyThreadCount) {
  const auto hw = test::default_hw();
  const auto cfg = small_generated_softmax();
  const SweepResult one = run_sweep(cfg, hw, {1, nullptr});
  const SweepResult two = run_sweep(cfg, hw, {2, nullptr});
  const SweepResult all = run_sweep(cfg, hw, {0, nullptr});
  EXPECT_EQ(one.candidates.size(), 4u * 8u * 2u);
  EXPECT_GT(one.ranking.size(), 40u);
  EXPECT_EQ(sweep_json(cfg, hw, one).dump(), sweep_json(cfg, hw, two).dump());
  EXPECT_EQ(sweep_json(cfg, hw, one).dump(), sweep_json(cfg, hw, all).dump());
  EXPECT_EQ(sweep_csv(cfg, hw, one), sweep_csv(cfg, hw, two));
  EXPECT_EQ(sweep_svg(cfg, hw, one), sweep_svg(cfg, hw, two));
  EXPECT_EQ(sweep_table(cfg, hw, one, 0), sweep_table(cfg, hw, two, 0));
}

TEST(Sweep, ProgressCountsEveryCandidate) {
  const auto hw = test::default_hw();
  const auto cfg = small_generated_softmax();
  std::atomic<int64_t> done{0};
  const SweepResult r = run_sweep(cfg, hw, {2, &done});
  EXPECT_EQ(done.load(), static_cast<int64_t>(r.candidates.size()));
}

TEST(Sweep, RankingIsFastestFirstAndTheRecommendationIsTheFastest) {
  const auto hw = test::default_hw();
  const auto cfg = small_generated_softmax();
  const SweepResult r = run_sweep(cfg, hw);
  ASSERT_FALSE(r.ranking.empty());
  // By the default objective: kernel time, launch to end (what a board measures).
  EXPECT_EQ(cfg.objective, Objective::kKernelTime);
  for (size_t i = 1; i < r.ranking.size(); ++i)
    EXPECT_LE(r.candidates[r.ranking[i - 1]].kernel_time_us,
              r.candidates[r.ranking[i]].kernel_time_us);
  EXPECT_EQ(*r.recommended, r.ranking.front());
  EXPECT_NE(r.why.find(r.tie ? ", a tie with " : "% less time than "), std::string::npos) << r.why;
  // Each evaluated candidate carries the model's own figures.
  for (size_t i : r.ranking) {
    const auto& c = r.candidates[i];
    EXPECT_GT(c.gen_time_us, 0);
    EXPECT_GT(c.tasks, 0);
    EXPECT_GT(pipe_mean_us(c, "MTE2"), 0);
    EXPECT_GT(c.diag.ub_bytes, 0);
    EXPECT_GE(c.diag.reduction_segments, 1);
    EXPECT_FALSE(c.psg.empty());
  }
}

// The shipped loop sweeps name what grows: the GroupNorm program's loop 16 (ranked by
// kernel_time_us) loses to root builds before the first task and to scheduler threads whose
// work fills the span, not to "Wait Schedule" alone; the matmul's loop 128 to its copies.
TEST(Sweep, ZoneEvidenceNamesTheMechanismThatGrowsAlongShippedLoopSweeps) {
  auto candidate = [](const SweepResult& r, int64_t loop) {
    for (const auto& c : r.candidates)
      if (c.loop_count == loop) return c;
    ADD_FAILURE() << "no loop " << loop;
    return CandidateResult{};
  };
  SweepConfig cfg = load_sweep_config(
      test::source_path("configs/sweeps/program_groupnorm_128x524288_loops.json"));
  SweepResult r = run_sweep(cfg, load_hardware(cfg.hardware));
  CandidateResult c = candidate(r, 16);
  EXPECT_EQ(c.zone, Zone::kTooFragmented);
  EXPECT_NE(c.zone_evidence.find("root builds before the first task 72.200 us vs 41.160 (+31.040)"),
            std::string::npos)
      << c.zone_evidence;
  EXPECT_NE(c.zone_evidence.find("each scheduler thread's completions, resolves and dispatches "
                                 "take 90% of the span"),
            std::string::npos)
      << c.zone_evidence;
  EXPECT_NE(c.zone_evidence.find("roots 16 vs 8"), std::string::npos) << c.zone_evidence;
  cfg = load_sweep_config(test::source_path("configs/sweeps/rule2_matmul_16384_loops.json"));
  r = run_sweep(cfg, load_hardware(cfg.hardware));
  c = candidate(r, 128);
  EXPECT_EQ(c.zone, Zone::kSlower);
  EXPECT_NE(c.zone_evidence.find("MTE2 busy/core (copies in) grew most: 217.578 us vs 202.630"),
            std::string::npos)
      << c.zone_evidence;
}

TEST(Sweep, TheObjectiveRanksZonesAndExplains) {
  // The GroupNorm loop sweep: by gen_time loop 16 leads loop 8 by 7.3%; kernel_time_us adds the
  // launch and the root builds, which grow with the loop count, and brings them within 1.4% (a
  // tie), loop 16 still first.
  const auto hw = test::default_hw();
  SweepConfig cfg = load_sweep_config(
      test::source_path("configs/sweeps/rule2_groupnorm_16x64x256x256_loops.json"));
  for (const Objective o : {Objective::kGenTime, Objective::kKernelTime, Objective::kMte2}) {
    cfg.objective = o;
    const SweepResult r = run_sweep(cfg, hw);
    ASSERT_EQ(r.ranking.size(), 8u);
    for (size_t i = 1; i < r.ranking.size(); ++i)
      EXPECT_LE(objective_us(r.candidates[r.ranking[i - 1]], o),
                objective_us(r.candidates[r.ranking[i]], o));
    const auto& b = r.candidates[*r.recommended];
    if (o == Objective::kKernelTime) {
      EXPECT_EQ(b.loop_count, 16);
      EXPECT_EQ(r.candidates[r.ranking[1]].loop_count, 8);
      EXPECT_EQ(r.candidates[r.ranking[1]].zone, Zone::kSweetSpot);  // the tie
      EXPECT_DOUBLE_EQ(objective_us(b, o), b.kernel_time_us);
      EXPECT_NE(r.why.find(fmt::format("{:.3f} us kernel_time_us", b.kernel_time_us)),
                std::string::npos)
          << r.why;
    }
    // Many loops: the shortest MTE2 of the busiest core (64 at 234.3 us, 128 at 241.3 us since
    // norms are programs: which core runs the last row's tasks decides between the two).
    if (o == Objective::kMte2) {
      EXPECT_GE(b.loop_count, 64);
      EXPECT_EQ(sweep_json(cfg, hw, r)["sweep"]["objective"], "mte2_us");
    }
  }
  EXPECT_EQ(parse_error(R"({"op": "add", "shape": [8, 64], "dtype": "fp32", "tile": [1, 64],
                            "objective": "energy"})"),
            "test.json: objective: unknown objective 'energy' (known: gen_time_us, "
            "kernel_time_us, mte2_us, mte3_us, vec_us, cube_us, mte1_us)");
}

TEST(Binding, SharesByHandAndTheLargestBinds) {
  Hardware hw = test::default_hw();
  Metrics m;
  m.gen_time_us = 100;
  m.kernel_time_us = 120;
  m.launch_us = 2, m.handshake_us = 0.4, m.head_us = 17.6;  // 20 of 120: 1/6
  m.achieved_gm_gbps = hw.gm.hbm_bandwidth_gbps / 2;        // 50%
  m.pipes = {{"MTE2", 60, 90, 0}, {"V", 30, 40, 0}};        // busiest cores: 90%, 40%
  CoreMetrics c;
  c.wait_schedule_time_us = 5;
  m.per_core = {c, c};  // 2 of the AIV cores ran
  const auto uses = resource_uses(m, hw);
  ASSERT_EQ(uses.size(), 6u);
  EXPECT_EQ(uses[0].name, "MTE2");
  EXPECT_DOUBLE_EQ(uses[0].share, 0.9);
  EXPECT_EQ(uses[1].name, "HBM bandwidth");
  EXPECT_DOUBLE_EQ(uses[1].share, 0.5);
  EXPECT_EQ(uses[2].name, "V");
  EXPECT_NEAR(uses[3].share, 1.0 / 6.0, 1e-12);  // fixed costs
  EXPECT_DOUBLE_EQ(uses[4].share, 0.05);         // scheduler: 5 of 100 us
  EXPECT_EQ(uses[5].name, "idle cores");         // last, whatever its share: a lever
  EXPECT_DOUBLE_EQ(uses[5].used, static_cast<double>(hw.cores.aiv - 2));
  EXPECT_EQ(
      binding_text(uses),
      fmt::format("bound by MTE2 of the busiest core: 90.0 of 100.0 us (90%); then GM traffic "
                  "against HBM bandwidth: {:.1f} of {:.1f} GB/s (50%), V of the busiest "
                  "core: 40.0 of 100.0 us (40%); AIV cores that ran no task: {} of {} "
                  "cores ({:.0f}%)",
                  hw.gm.hbm_bandwidth_gbps / 2, hw.gm.hbm_bandwidth_gbps, hw.cores.aiv - 2,
                  hw.cores.aiv, 100.0 * (hw.cores.aiv - 2) / hw.cores.aiv));
  // More GM traffic than HBM can carry: L2 served part of it, so L2's bandwidth bounds it.
  m.achieved_gm_gbps = hw.gm.hbm_bandwidth_gbps * 1.5;
  bool l2 = false;
  for (const auto& u : resource_uses(m, hw))
    if (u.name == "L2 bandwidth") {
      l2 = true;
      EXPECT_DOUBLE_EQ(u.share, m.achieved_gm_gbps / hw.l2.bandwidth_gbps);
    }
  EXPECT_TRUE(l2);
}

// HBM and V both at 95% were "bound by HBM" (doubling HBM gained 2.7%): two resources over half
// used and within 5 points of each other are co-bound, with what relieving either alone can gain
// at most; the fixed costs (a share of kernel_time, not gen_time) pair with neither.
TEST(Binding, TwoResourcesWithinFivePointsAreCoBound) {
  Hardware hw = test::default_hw();
  Metrics m;
  m.gen_time_us = 100;
  m.kernel_time_us = 102;
  m.achieved_gm_gbps = hw.gm.hbm_bandwidth_gbps * 0.96;  // 96%
  m.pipes = {{"MTE2", 60, 70, 0}, {"V", 90, 94, 0}};     // busiest cores: 70%, 94%
  CoreMetrics c;
  m.per_core = std::vector<CoreMetrics>(static_cast<size_t>(hw.cores.aiv), c);
  const auto uses = resource_uses(m, hw);
  ASSERT_TRUE(co_bound(uses));
  const auto j = binding_json(uses);  // the JSON says it too, on both
  EXPECT_TRUE(j[0]["co_bound"].get<bool>() && j[1]["co_bound"].get<bool>());
  EXPECT_FALSE(j[2].contains("co_bound"));
  EXPECT_EQ(binding_text(uses),
            fmt::format("co-bound by GM traffic against HBM bandwidth: {:.1f} of {:.1f} GB/s "
                        "(96%) and V of the busiest core: 94.0 of 100.0 us (94%): within 5 points "
                        "of each other, relieving either alone gains at most 6% (the other's "
                        "floor); then MTE2 of the busiest core: 70.0 of 100.0 us (70%)",
                        hw.gm.hbm_bandwidth_gbps * 0.96, hw.gm.hbm_bandwidth_gbps));
  m.pipes = {{"MTE2", 60, 70, 0}, {"V", 80, 85, 0}};  // 96% against 85%: HBM binds alone
  EXPECT_FALSE(co_bound(resource_uses(m, hw)));
  EXPECT_EQ(binding_text(resource_uses(m, hw)).rfind("bound by GM traffic", 0), 0u);
  m.achieved_gm_gbps = hw.gm.hbm_bandwidth_gbps * 0.3;  // V 85% next to fixed costs 84%
  m.kernel_time_us = 625, m.launch_us = 525;
  const auto fixed = resource_uses(m, hw);
  ASSERT_EQ(fixed[1].name, "fixed costs");
  EXPECT_FALSE(co_bound(fixed));
}

TEST(Binding, TheSweepsRecommendationNamesWhatBoundsIt) {
  // The spmd softmax grid sweep's winner streams a 4096-wide row per block: the vector pipe of
  // its busiest core is busy for 89% of the span (91% before exp took pto-isa's rate).
  const auto hw = test::default_hw();
  const SweepConfig cfg = load_sweep_config(
      test::source_path("configs/sweeps/spmd_softmax_grid_subtile_4096x4096.json"));
  const SweepResult r = run_sweep(cfg, hw);
  const auto j = sweep_json(cfg, hw, r);
  EXPECT_EQ(j["recommended"]["binding"][0]["resource"], "V");
  EXPECT_GT(j["recommended"]["binding"][0]["share"].get<double>(), 0.85);
  EXPECT_NE(sweep_table(cfg, hw, r, 5, false).find("    bound by V of the busiest core"),
            std::string::npos);
}

TEST(Sweep, AutoAxisIsTheLoopCountWhenItVariesElseTheLongestTileSeries) {
  const auto hw = test::default_hw();
  auto cfg = parse(R"({"op": "softmax", "shape": [16, 2048], "dim": 1,
    "candidates": {"tiles": [[1, 2048]], "loop_counts": [1, 2, 4]}})");
  EXPECT_EQ(resolve_axis(cfg, expand_candidates(cfg, hw)).kind, SweepAxis::Kind::kLoopCount);
  cfg = parse(R"({"op": "softmax", "shape": [16, 2048], "dim": 1,
    "candidates": {"tiles": [[1, 512], [1, 1024], [1, 2048], [2, 512]]}})");
  const auto a = resolve_axis(cfg, expand_candidates(cfg, hw));
  EXPECT_EQ(a.kind, SweepAxis::Kind::kTileDim);
  EXPECT_EQ(a.dim, 1);
  const SweepResult r = run_sweep(cfg, hw);
  EXPECT_EQ(r.axis_label, "tile[1] (reduction axis)");
  // (2, 512) is alone on its axis (and not the best): no zone.
  EXPECT_EQ(r.candidates[3].zone, Zone::kNone);
  EXPECT_NE(r.candidates[0].zone, Zone::kNone);
}

// ---- outputs ----

std::vector<std::string> split_csv_line(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted) {
      if (c == '"' && i + 1 < line.size() && line[i + 1] == '"') {
        out.back() += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        out.back() += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      out.emplace_back();
    } else {
      out.back() += c;
    }
  }
  return out;
}

SweepConfig mixed_config() {
  return parse(R"({"op": "softmax", "shape": [16, 4096], "dim": 1,
    "candidates": {"tiles": [[1, 4096], [1, 1024], [1, 12], [1, 8], [2, 2048]],
                   "loop_counts": [1, 2]}})");
}

TEST(SweepReport, CsvHasOneRowPerCandidateRankedThenRejected) {
  const auto hw = test::default_hw();
  const auto cfg = mixed_config();
  const SweepResult r = run_sweep(cfg, hw);
  std::istringstream in(sweep_csv(cfg, hw, r));
  std::string line;
  std::getline(in, line);
  const auto header = split_csv_line(line);
  auto col = [&](const std::string& name) {
    const auto it = std::find(header.begin(), header.end(), name);
    EXPECT_NE(it, header.end()) << name;
    return static_cast<size_t>(it - header.begin());
  };
  const size_t status = col("status"), reason = col("reason"), gen = col("gen_time_us"),
               tile0 = col("tile0"), tile1 = col("tile1"), zone = col("zone"), flags = col("flags"),
               rec = col("recommended"), op = col("op"), shape = col("shape"), dtype = col("dtype"),
               hardware = col("hardware");
  // Every Metrics field is a column (the one writer's).
  for (const auto& f : metric_fields()) col(f.name);
  EXPECT_EQ(std::count(header.begin(), header.end(), "tile2"), 0);
  size_t rows = 0, recommended = 0;
  bool seen_rejected = false;
  double last = 0;
  while (std::getline(in, line)) {
    const auto f = split_csv_line(line);
    ASSERT_EQ(f.size(), header.size()) << line;
    ++rows;
    if (f[rec] == "1") ++recommended;
    if (f[status] == "ok") {
      EXPECT_FALSE(seen_rejected) << "evaluated rows come first";
      const double t = std::stod(f[gen]);
      EXPECT_GE(t, last);
      last = t;
      EXPECT_TRUE(f[reason].empty());
    } else {
      EXPECT_EQ(f[status], "rejected");
      seen_rejected = true;
      EXPECT_FALSE(f[reason].empty());
      EXPECT_TRUE(f[gen].empty());
    }
    EXPECT_EQ(f[op], "softmax");
    EXPECT_EQ(f[shape], "16x4096");
    EXPECT_EQ(f[dtype], "fp32");
    EXPECT_EQ(f[hardware], hw.name);
    EXPECT_GT(std::stoll(f[tile0]), 0);
    EXPECT_GT(std::stoll(f[tile1]), 0);
    (void)zone;
    (void)flags;
  }
  EXPECT_EQ(rows, r.candidates.size());
  EXPECT_EQ(recommended, 1u);
  EXPECT_TRUE(seen_rejected);
}

TEST(SweepReport, JsonHasCandidatesAndRecommended) {
  const auto hw = test::default_hw();
  const auto cfg = mixed_config();
  const SweepResult r = run_sweep(cfg, hw);
  const json j = json::parse(sweep_json(cfg, hw, r).dump());
  ASSERT_TRUE(j["candidates"].is_array());
  EXPECT_EQ(j["candidates"].size(), r.candidates.size());
  for (const auto& c : j["candidates"]) {
    for (const char* key :
         {"tile", "loop_count", "status", "reason", "gen_time_us", "flags", "zone", "metrics"})
      EXPECT_TRUE(c.contains(key)) << key << " in " << c.dump();
    if (c["status"] == "ok") {
      EXPECT_TRUE(c["reason"].is_null());
      EXPECT_TRUE(c["gen_time_us"].is_number());
      for (const char* key : {"breakdown", "psg", "pipes", "gm", "ub_bytes", "reduction_segments",
                              "tasks_per_core", "dominant_psg"})
        EXPECT_TRUE(c["metrics"].contains(key)) << key;
      for (const char* key :
           {"mte2_us", "vec_us", "mte3_us", "wait_schedule_us", "wait_predecessor_us"})
        EXPECT_TRUE(c["metrics"]["breakdown"].contains(key)) << key;
    } else {
      EXPECT_EQ(c["status"], "rejected");
      EXPECT_TRUE(c["reason"].is_string());
      EXPECT_TRUE(c["gen_time_us"].is_null());
      EXPECT_TRUE(c["metrics"].is_null());
    }
  }
  ASSERT_TRUE(j["recommended"].is_object());
  EXPECT_EQ(j["recommended"]["tile"], j["candidates"][0]["tile"]);
  EXPECT_EQ(j["recommended"]["loop_count"], j["candidates"][0]["loop_count"]);
  EXPECT_TRUE(j["recommended"]["why"].is_string());
  EXPECT_EQ(j["rejected_by_reason"]["alignment"], 2);  // (1, 12) at both loop counts
  EXPECT_EQ(j["rejected_by_reason"]["limits"], 2);     // (1, 8): auto_tiles 8192
  EXPECT_EQ(j["counts"]["candidates"], 10);
}

size_t count(const std::string& s, const std::string& needle) {
  size_t n = 0;
  for (size_t p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) ++n;
  return n;
}

TEST(SweepReport, SvgIsAWellFormedLabelledPlot) {
  const auto hw = test::default_hw();
  const auto cfg = parse(R"({"op": "groupnorm", "shape": [4, 16, 64, 256], "tile": [1, 8, 8, 256],
    "params": {"groups": 2}, "candidates": {"generate_loop_counts": {"from": 1, "to": 8},
    "constraints": {"prune_over_limits": false}}})");
  const SweepResult r = run_sweep(cfg, hw);
  const std::string svg = sweep_svg(cfg, hw, r);
  EXPECT_EQ(svg.rfind("<?xml", 0), 0u);
  EXPECT_EQ(count(svg, "<svg"), 1u);
  EXPECT_NE(svg.find("</svg>\n"), std::string::npos);
  EXPECT_EQ(count(svg, "<g"), count(svg, "</g>"));
  EXPECT_EQ(count(svg, "<text"), count(svg, "</text>"));
  EXPECT_NE(svg.find("id=\"x-label\""), std::string::npos);
  EXPECT_NE(svg.find("loop_count (log2 scale)"), std::string::npos);
  EXPECT_NE(svg.find("id=\"y-label\""), std::string::npos);
  EXPECT_NE(svg.find("modeled kernel_time_us"), std::string::npos);
  EXPECT_NE(svg.find("id=\"best\""), std::string::npos);
  EXPECT_GE(count(svg, "class=\"zone\""), 1u);
  EXPECT_NE(svg.find("sweet spot"), std::string::npos);
  EXPECT_EQ(svg.find("nan"), std::string::npos);
  EXPECT_EQ(svg.find("inf"), std::string::npos);
  // Tick labels: the powers of two on the log axis.
  for (const char* tick : {">1<", ">2<", ">4<", ">8<"})
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  // Every point but the marked best carries its time.
  for (size_t i : r.ranking) {
    const auto& c = r.candidates[i];
    if (c.index == *r.recommended) continue;
    EXPECT_NE(svg.find(fmt::format(">{:.1f}</text>", c.kernel_time_us)), std::string::npos)
        << "loop " << c.loop_count;
  }
}

// Example A: the recommended (1, 8192) is alone on its axis; the other two candidates are drawn
// labelled with their tiles, not as anonymous grey dots.
TEST(SweepReport, SvgLabelsFewOtherCandidates) {
  const auto hw = test::default_hw();
  const auto cfg =
      load_sweep_config(test::source_path("configs/sweeps/rule1_a_softmax_16x16384.json"));
  const std::string svg = sweep_svg(cfg, hw, run_sweep(cfg, hw));
  for (const char* label : {">(2, 4096)</text>", ">(4, 4096)</text>"})
    EXPECT_EQ(count(svg, label), 1u) << label;
}

TEST(SweepReport, SvgPlotPutsPointsInsideTheFrame) {
  Plot p;
  p.title = "t & <u>";
  p.x_label = "x";
  p.y_label = "y";
  p.series.push_back(
      {"s", "#000", true, 4, 1, {{1, 10, "", ""}, {4, 20, "", ""}, {64, 15, "", ""}}});
  p.bands.push_back({0.5, 2, "#0f0", "sweet spot"});
  p.mark = PlotMark{4, 20, "best"};
  const std::string svg = render_svg(p);
  EXPECT_NE(svg.find("t &amp; &lt;u&gt;"), std::string::npos);
  // Every circle centre lies inside the plot frame.
  for (size_t pos = svg.find("<circle cx=\""); pos != std::string::npos;
       pos = svg.find("<circle cx=\"", pos + 1)) {
    const double cx = std::stod(svg.substr(pos + 12));
    const size_t cy_pos = svg.find("cy=\"", pos);
    const double cy = std::stod(svg.substr(cy_pos + 4));
    if (cx > p.width - 230) continue;  // legend
    EXPECT_GE(cx, 90);
    EXPECT_LE(cx, p.width - 230);
    EXPECT_GE(cy, 64);
    EXPECT_LE(cy, p.height - 72);
  }
}

TEST(SweepReport, TableMarksTheRecommendationAndCountsRejections) {
  const auto hw = test::default_hw();
  const auto cfg = mixed_config();
  const SweepResult r = run_sweep(cfg, hw);
  const std::string t = sweep_table(cfg, hw, r);
  EXPECT_NE(t.find("\n*    1  "), std::string::npos) << t;
  EXPECT_NE(t.find("* recommended: "), std::string::npos);
  EXPECT_NE(t.find("rejected by the pre-check: 4 (alignment 2, limits 2)"), std::string::npos) << t;
}

size_t widest_line(const std::string& text) {
  size_t widest = 0, start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    widest = std::max(widest, end - start);
    start = end + 1;
  }
  return widest;
}

// The sweep on a few of its candidates whose table has the whole sweep's columns, each required
// one as wide (a column is as wide as its widest cell; the optional ones join while the table
// fits): for each axis (tile, loop count, grid, block, a program's other tiles, params) a
// candidate with the axis's widest value as the table prints it, and the two of the fewest
// sub-tiles that pass the pre-check, so that rows are evaluated. Among equals the fewest
// sub-tiles, then the first, win: a sweep's first candidates are often its costliest (its finest
// tiles: the first three of program_mul_sum_1000x8192 take 22 s of its 30). Each is evaluated
// once, then ranked as run_sweep ranks.
SweepResult table_sweep(const SweepConfig& cfg, const Hardware& hw) {
  const std::vector<Candidate> all = expand_candidates(cfg, hw);
  std::vector<int64_t> subtiles;
  for (const auto& c : all) subtiles.push_back(implied_subtiles(candidate_spec(cfg, c)));
  std::vector<size_t> by_cost(all.size());
  for (size_t i = 0; i < all.size(); ++i) by_cost[i] = i;
  std::stable_sort(by_cost.begin(), by_cost.end(),
                   [&](size_t a, size_t b) { return subtiles[a] < subtiles[b]; });
  std::map<size_t, CandidateResult> some;  // by position in `all`
  size_t evaluated = 0;
  for (size_t k = 0; k < by_cost.size() && evaluated < 2; ++k)
    if (CandidateResult r = evaluate_candidate(cfg, hw, all[by_cost[k]]); r.ok) {
      some.emplace(by_cost[k], std::move(r));
      ++evaluated;
    }
  const std::vector<std::function<std::string(const Candidate&)>> axes = {
      [](const Candidate& c) { return format_dims(c.tile); },
      [](const Candidate& c) { return fmt::format("{}", c.loop_count); },
      [](const Candidate& c) { return fmt::format("{}", c.grid); },
      [](const Candidate& c) { return format_dims(c.block); },
      [](const Candidate& c) { return named_tiles_text(c.named_tiles); },
      [](const Candidate& c) { return params_text(c.params); }};
  for (const auto& text : axes) {
    size_t widest = by_cost[0];
    for (size_t i : by_cost)
      if (text(all[i]).size() > text(all[widest]).size()) widest = i;
    if (!some.count(widest)) some.emplace(widest, evaluate_candidate(cfg, hw, all[widest]));
  }
  std::vector<Candidate> picked;
  std::vector<CandidateResult> results;
  for (auto& [i, r] : some) {
    r.index = picked.size();
    picked.push_back(all[i]);
    results.push_back(std::move(r));
  }
  return rank_sweep(cfg, picked, std::move(results));
}

// The default table fits a 120-column terminal; --wide adds the rest of the columns.
TEST(SweepReport, TableFitsOneHundredTwentyColumns) {
  TILESIM_EVERY_SHIPPED_CONFIG();
  const auto hw = test::default_hw();
  // The full-size program sweeps (up to ~200,000 tasks per candidate) print the same columns as
  // their small siblings: the CLI runs them.
  const std::set<std::string> heavy = {"program_attention_softmax_8x32x2048x2048.json",
                                       "program_rmsnorm_rope_32x2048x32x128.json",
                                       "program_swiglu_backward_16x1024x2048.json",
                                       "program_attention_1x32x4096x128.json",
                                       "program_attention_spmd_1x32x4096x128.json",
                                       "program_swiglu_backward_spmd_16x1024x2048.json"};
  for (const auto& entry :
       std::filesystem::directory_iterator(test::source_path("configs/sweeps"))) {
    if (heavy.count(entry.path().filename().string())) continue;
    const auto cfg = load_sweep_config(entry.path());
    // Every shipped sweep, each on a few of its candidates whose columns are the whole sweep's
    // (the flash attention sweeps have 729 candidates, the matmul sweep 90 of 1152 cube tasks).
    const SweepResult r = table_sweep(cfg, hw);
    const std::string narrow = sweep_table(cfg, hw, r, 0);
    EXPECT_LE(widest_line(narrow), 120u) << entry.path() << "\n" << narrow;
    // Example E is about the flag: it fits in the default table.
    if (entry.path().filename() == "rule1_e_amax_16x256x256_over.json") {
      EXPECT_NE(narrow.find("tile_over_shape "), std::string::npos) << narrow;
    }
    EXPECT_EQ(narrow.find("wpred_us"), std::string::npos);
    const std::string wide = sweep_table(cfg, hw, r, 0, true);
    for (const char* col : {"wpred_us", "contigB", "UB_KiB", "segs", "tasks/c", "flags"})
      EXPECT_NE(wide.find(col), std::string::npos) << col;
  }
}

// The recommendation is the sweet spot of its own axis even when it shares it with nothing: in
// example A, (1, 8192) is alone along tile[0] while (2, 4096) and (4, 4096) share theirs.
TEST(SweepReport, RecommendedIsAlwaysZonedSweetSpot) {
  const auto hw = test::default_hw();
  const auto cfg =
      load_sweep_config(test::source_path("configs/sweeps/rule1_a_softmax_16x16384.json"));
  const SweepResult r = run_sweep(cfg, hw);
  ASSERT_TRUE(r.recommended);
  const auto& b = r.candidates[*r.recommended];
  EXPECT_EQ(b.tile, (Dims{1, 8192}));
  EXPECT_EQ(b.zone, Zone::kSweetSpot);
  EXPECT_NE(b.zone_evidence.find("no other point on its axis"), std::string::npos);
  // "x% less time" is measured against the runner-up's time.
  const auto& r2 = r.candidates[*r.runner_up];
  EXPECT_FALSE(r.tie);
  EXPECT_NE(r.why.find(fmt::format("{:.1f}% less time than tile (2, 4096)",
                                   (1 - b.gen_time_us / r2.gen_time_us) * 100)),
            std::string::npos)
      << r.why;
  EXPECT_EQ(r.why.find("faster"), std::string::npos) << r.why;
}

// Within the zones tolerance the table and the why line say "tie"; a term is named only when it
// differs by more than the zones' noise thresholds.
TEST(SweepReport, TiesAreCalledTies) {
  const auto hw = test::default_hw();
  auto cfg = mixed_config();
  cfg.zones.tolerance = 100;  // every evaluated candidate within the tolerance of the best
  SweepResult r = run_sweep(cfg, hw);
  ASSERT_TRUE(r.runner_up);
  EXPECT_TRUE(r.tie);
  EXPECT_NE(r.why.find(", a tie with tile "), std::string::npos) << r.why;
  const std::string t = sweep_table(cfg, hw, r, 0);
  size_t ties = 0;
  for (size_t p = t.find("    tie "); p != std::string::npos; p = t.find("    tie ", p + 1)) ++ties;
  EXPECT_EQ(ties, r.ranking.size() - 1) << t;
  cfg.zones.evidence_rise = 1e9;  // no difference is above noise
  r = run_sweep(cfg, hw);
  EXPECT_EQ(r.why.find(" less "), std::string::npos) << r.why;
}

// ---- zones on synthetic inputs ----

ZonePoint point(double x, double t, double wait, double tasks, double avg, double sum) {
  ZonePoint p;
  p.x = x;
  p.gen_time_us = t;
  p.wait_schedule_us = wait;
  p.tasks_per_core = tasks;
  p.psg = {{"body", 1, sum, avg}};
  return p;
}

TEST(Zones, UCurveAlongLoopCount) {
  // Fewer loops: heavy tasks (avg_dur up); more loops: scheduling waits up.
  const std::vector<ZonePoint> pts = {
      point(1, 150, 1, 1, 100, 4800),   point(2, 120, 1, 2, 50, 4900),
      point(4, 101, 2, 4, 25, 4900),    point(8, 100, 3, 8, 12, 4900),
      point(16, 101, 4, 16, 6, 4900),   point(32, 115, 9, 32, 3, 4900),
      point(64, 160, 30, 64, 1.5, 4900)};
  const auto v = classify_zones(pts, Granularity::kFinerWithLargerX);
  const std::vector<Zone> want = {Zone::kTooCoarse,    Zone::kTooCoarse, Zone::kSweetSpot,
                                  Zone::kSweetSpot,    Zone::kSweetSpot, Zone::kTooFragmented,
                                  Zone::kTooFragmented};
  for (size_t i = 0; i < pts.size(); ++i) EXPECT_EQ(v[i].zone, want[i]) << "x = " << pts[i].x;
  EXPECT_NE(v[0].evidence.find("avg_dur 100.000 us vs 12.000"), std::string::npos) << v[0].evidence;
  EXPECT_NE(v[6].evidence.find("wait_schedule/core 30.000 us vs 3.000"), std::string::npos)
      << v[6].evidence;
  EXPECT_NE(v[3].evidence.find("fastest"), std::string::npos);
}

TEST(Zones, OrderOfInputDoesNotMatter) {
  std::vector<ZonePoint> pts = {point(64, 160, 30, 64, 1.5, 4900), point(1, 150, 1, 1, 100, 4800),
                                point(8, 100, 3, 8, 12, 4900)};
  const auto v = classify_zones(pts, Granularity::kFinerWithLargerX);
  EXPECT_EQ(v[0].zone, Zone::kTooFragmented);
  EXPECT_EQ(v[1].zone, Zone::kTooCoarse);
  EXPECT_EQ(v[2].zone, Zone::kSweetSpot);
}

TEST(Zones, TileAxisIsCoarserWithLargerTiles) {
  // A larger tile is a coarser task: its slow end is too coarse, the small-tile end fragmented.
  const std::vector<ZonePoint> pts = {point(16, 130, 14, 8, 2, 100), point(32, 100, 2, 4, 4, 100),
                                      point(64, 140, 2, 2, 9, 110)};
  const auto v = classify_zones(pts, Granularity::kCoarserWithLargerX);
  EXPECT_EQ(v[0].zone, Zone::kTooFragmented);
  EXPECT_EQ(v[1].zone, Zone::kSweetSpot);
  EXPECT_EQ(v[2].zone, Zone::kTooCoarse);
}

TEST(Zones, SlowerWithoutTheSidesEvidenceIsNoZone) {
  // Slower on the fine side but waits flat; slower on the coarse side but the PSG did not grow.
  const std::vector<ZonePoint> pts = {point(1, 130, 2, 1, 10, 100), point(2, 100, 2, 2, 10, 100),
                                      point(4, 130, 2, 4, 10, 100)};
  const auto v = classify_zones(pts, Granularity::kFinerWithLargerX);
  EXPECT_EQ(v[0].zone, Zone::kSlower);
  EXPECT_EQ(v[2].zone, Zone::kSlower);
  EXPECT_NE(v[2].evidence.find("did not rise"), std::string::npos);
}

TEST(Zones, AWaitRiseTooSmallToExplainTheLossIsNotFragmentation) {
  // Both are 20 us slower; one gained 2 us of scheduling waits per core (10%), one 12 us (60%).
  const std::vector<ZonePoint> pts = {point(1, 100, 1, 1, 10, 100), point(2, 120, 3, 2, 5, 100),
                                      point(4, 120.5, 13, 4, 2.5, 100)};
  const auto v = classify_zones(pts, Granularity::kFinerWithLargerX);
  EXPECT_EQ(v[1].zone, Zone::kSlower);
  EXPECT_NE(v[1].evidence.find("too little to explain the loss"), std::string::npos)
      << v[1].evidence;
  EXPECT_EQ(v[2].zone, Zone::kTooFragmented);
  EXPECT_NE(v[2].evidence.find("jumped"), std::string::npos) << v[2].evidence;
  ZoneOptions o;
  o.min_wait_share = 0.05;
  EXPECT_EQ(classify_zones(pts, Granularity::kFinerWithLargerX, o)[1].zone, Zone::kTooFragmented);
}

TEST(Zones, ToleranceDefinesTheSweetSpot) {
  const std::vector<ZonePoint> pts = {point(1, 103, 1, 1, 20, 100), point(2, 100, 1, 2, 10, 100),
                                      point(4, 101.5, 5, 4, 5, 100)};
  ZoneOptions o;
  o.tolerance = 0.02;
  auto v = classify_zones(pts, Granularity::kFinerWithLargerX, o);
  EXPECT_EQ(v[0].zone, Zone::kTooCoarse);
  EXPECT_EQ(v[2].zone, Zone::kSweetSpot);
  o.tolerance = 0.05;
  v = classify_zones(pts, Granularity::kFinerWithLargerX, o);
  EXPECT_EQ(v[0].zone, Zone::kSweetSpot);
  o.tolerance = 0.0;
  v = classify_zones(pts, Granularity::kFinerWithLargerX, o);
  EXPECT_EQ(v[2].zone, Zone::kTooFragmented);
}

TEST(Zones, DominantPsgIsComparedByName) {
  // The coarse point's dominant PSG is 'merge'; compared with 'merge' at the best, not 'body'.
  std::vector<ZonePoint> pts = {point(1, 200, 1, 1, 0, 0), point(2, 100, 1, 2, 0, 0)};
  pts[0].psg = {{"body", 1, 50, 50}, {"merge", 1, 150, 150}};
  pts[1].psg = {{"body", 2, 90, 45}, {"merge", 2, 20, 10}};
  const auto v = classify_zones(pts, Granularity::kFinerWithLargerX);
  EXPECT_EQ(v[0].zone, Zone::kTooCoarse);
  EXPECT_NE(v[0].evidence.find("'merge' avg_dur 150.000 us vs 10.000"), std::string::npos)
      << v[0].evidence;
}

// ../shared issue 48 "why along every axis": the evidence names the mechanism that grew.
TEST(Zones, FinerPointsNameTheRuntimeMechanismThatGrew) {
  // Loop 1 is best. Loop 2 lost 30 us, all root builds before the first task (the objective
  // counts them), waits flat; loop 4 lost 60 us to waits while each scheduler thread's work fills
  // 95% of the span; loop 8 to waits while the control AICPU builds later device tasks.
  std::vector<ZonePoint> pts = {point(1, 100, 2, 10, 10, 100), point(2, 130, 2, 10, 10, 100),
                                point(4, 160, 50, 20, 5, 100), point(8, 160, 50, 40, 2, 100)};
  for (auto& p : pts) p.span_us = p.gen_time_us, p.roots = static_cast<int64_t>(p.x);
  pts[0].head_build_us = 5;
  pts[1].head_build_us = 35;
  pts[2].head_build_us = pts[3].head_build_us = 5;
  pts[2].schedule_us = 152;
  pts[3].later_build_us = 120;
  pts[3].schedule_us = 40;
  const auto v = classify_zones(pts, Granularity::kFinerWithLargerX);
  EXPECT_EQ(v[1].zone, Zone::kTooFragmented);
  EXPECT_NE(v[1].evidence.find("root builds before the first task 35.000 us vs 5.000 (+30.000)"),
            std::string::npos)
      << v[1].evidence;
  EXPECT_NE(v[1].evidence.find("wait_schedule/core 2.000 us vs 2.000 at best (did not rise)"),
            std::string::npos)
      << v[1].evidence;
  EXPECT_NE(v[1].evidence.find("roots 2 vs 1"), std::string::npos) << v[1].evidence;
  EXPECT_EQ(v[2].zone, Zone::kTooFragmented);
  EXPECT_EQ(v[2].evidence.find("root builds"), std::string::npos) << v[2].evidence;
  EXPECT_NE(v[2].evidence.find("(jumped): each scheduler thread's completions, resolves and "
                               "dispatches take 95% of the span"),
            std::string::npos)
      << v[2].evidence;
  EXPECT_EQ(v[3].zone, Zone::kTooFragmented);
  EXPECT_NE(v[3].evidence.find("the control AICPU builds later device tasks for 75% of the span"),
            std::string::npos)
      << v[3].evidence;
}

TEST(Zones, ASlowerPointNamesTheFigureThatGrewMost) {
  std::vector<ZonePoint> pts = {point(1, 100, 2, 10, 10, 100), point(2, 110, 2, 10, 10, 100)};
  pts[0].per_core = {{"MTE2 busy/core (copies in)", 80}, {"V busy/core (vector work)", 20}};
  pts[1].per_core = {{"MTE2 busy/core (copies in)", 89}, {"V busy/core (vector work)", 21}};
  const auto v = classify_zones(pts, Granularity::kFinerWithLargerX);
  EXPECT_EQ(v[1].zone, Zone::kSlower);
  EXPECT_NE(v[1].evidence.find("; MTE2 busy/core (copies in) grew most: 89.000 us vs 80.000 at "
                               "best (+9.000)"),
            std::string::npos)
      << v[1].evidence;
}

TEST(Zones, OnePointHasNoZoneAndDuplicatesAreRejected) {
  auto v = classify_zones({point(4, 10, 1, 1, 1, 1)}, Granularity::kFinerWithLargerX);
  EXPECT_EQ(v[0].zone, Zone::kNone);
  EXPECT_THROW(classify_zones({point(4, 10, 1, 1, 1, 1), point(4, 11, 1, 1, 1, 1)},
                              Granularity::kFinerWithLargerX),
               InternalError);
  EXPECT_TRUE(classify_zones({}, Granularity::kFinerWithLargerX).empty());
}

// ---- the command line ----

using test::CmdResult;
using test::run_cli;

std::filesystem::path temp_dir() {
  const auto dir =
      std::filesystem::temp_directory_path() / ("tilesim_sweep_test_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(SweepCli, WritesTableCsvJsonAndSvg) {
  const auto dir = temp_dir();
  const auto csv = dir / "a.csv", js = dir / "a.json", svg = dir / "a.svg";
  const CmdResult r =
      run_cli("sweep " + test::source_path("configs/sweeps/rule1_a_softmax_16x16384.json") +
              " -j 2 --csv " + csv.string() + " --json " + js.string() + " --svg " + svg.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("tilesim sweep: softmax (16, 16384) fp32 dim 1"), std::string::npos);
  EXPECT_NE(r.out.find("* recommended: "), std::string::npos);
  std::ifstream jin(js);
  const json j = json::parse(jin);
  EXPECT_EQ(j["candidates"].size(), 3u);
  std::ifstream sin(svg);
  const std::string s((std::istreambuf_iterator<char>(sin)), std::istreambuf_iterator<char>());
  EXPECT_NE(s.find("</svg>"), std::string::npos);
  EXPECT_TRUE(std::filesystem::file_size(csv) > 100);
}

TEST(SweepCli, JsonToStdoutIsTheOnlyStdout) {
  const std::string cmd = std::string(TILESIM_BINARY) + " sweep " +
                          test::source_path("configs/sweeps/rule1_c_triplet_128x4096.json") +
                          " --json - 2>/dev/null";
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  ASSERT_EQ(pclose(p), 0);
  const json j = json::parse(out);
  EXPECT_EQ(j["candidates"].size(), 2u);
}

TEST(SweepCli, BadConfigIsOneLineWithExitCode2) {
  const auto path = temp_dir() / "bad.json";
  std::ofstream(path) << R"({"op": "softmax", "shape": [16, 64], "dim": 1,
    "candidates": {"tiles": [[1, 64]], "constraint": {}}})";
  const CmdResult r = run_cli("sweep " + path.string());
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_NE(r.out.find("candidates.constraint: unknown key"), std::string::npos) << r.out;
}

// ---- spmd sweeps: grid, block and sub-tile spaces, the SPMD zones ----

namespace spmd_cases {

std::vector<int64_t> grids_of(const std::vector<Candidate>& cands) {
  std::vector<int64_t> g;
  for (const auto& c : cands) g.push_back(c.grid);
  return g;
}

const std::string kSoftmax = R"("op": "softmax", "shape": [1024, 4096], "dim": 1)";

}  // namespace spmd_cases

// The per-block copy figure is the sub-tile's load, never a reduction's 4 B result write: amin
// over (4194304,) fp32 in 16384-element sub-tiles copies 64 KiB per step (else every reduction
// would be read as "tiny copies").
TEST(SpmdSweep, BlockCopyIsTheSubTileLoadNotTheResultWrite) {
  KernelSpec s;
  s.op = "amin";
  s.shape = {4194304};
  s.dims = {0};
  s.tile = {16384};
  s.partition = PartitionStyle::kSpmd;
  s.grid = 32;
  s.block = {131072};
  const Hardware hw = load_hardware(shipped_hardware_path("ascend910b4"));
  const RunOutcome r = run_kernel(s, hw);
  const SpmdFigures f = spmd_figures(r.kernel.graph, r.sim, r.metrics, hw, 32);
  EXPECT_EQ(f.copy_bytes, 16384 * 4);
  EXPECT_EQ(f.burst_bytes, 16384 * 4);
}

TEST(SpmdSweepSpace, LogScaleStopsBeforeItsBoundForAnyBound) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  const auto all = log_scale(1, kMax, 2);
  ASSERT_EQ(all.size(), 63u);  // 2^0 .. 2^62; 2^63 would overflow
  EXPECT_EQ(all.back(), int64_t{1} << 62);
  EXPECT_EQ(log_scale(kMax - 1, kMax, 2), (std::vector<int64_t>{kMax - 1}));
  EXPECT_EQ(log_scale(3, kMax, kMax), (std::vector<int64_t>{3}));
  EXPECT_EQ(log_scale(3, 100, 3), (std::vector<int64_t>{3, 9, 27, 81}));
  EXPECT_EQ(log_scale(5, 5, 2), (std::vector<int64_t>{5}));
  EXPECT_THROW(log_scale(1, 10, 1), InternalError);
  EXPECT_THROW(log_scale(0, 10, 2), InternalError);
}

TEST(SpmdSweepSpace, GeneratedGridsAddTheCoreCountItsMultiplesAndOneMore) {
  // add on ascend910b4: 40 AIV. Log scale 1..160 (8 values) plus 40, 41, 80, 81, 120, 121, 160.
  const auto cfg = load_sweep_config(test::source_path("configs/sweeps/spmd_add_grid_910b4.json"));
  const auto hw = load_hardware(cfg.hardware);
  ASSERT_EQ(hw.cores.aiv, 40);
  EXPECT_EQ(generate_grid_values(cfg, hw),
            (std::vector<int64_t>{1, 2, 4, 8, 16, 32, 40, 41, 64, 80, 81, 120, 121, 128, 160}));
  const auto cands = expand_candidates(cfg, hw);
  EXPECT_EQ(cands.size(), 15u);
  for (const auto& c : cands) EXPECT_EQ(c.tile, (Dims{8, 1024}));
  EXPECT_EQ(candidate_spec(cfg, cands[6]).grid, 40);
  EXPECT_EQ(candidate_spec(cfg, cands[6]).partition, PartitionStyle::kSpmd);
  // The softmax sweep: 8, 16, 32, 64 and 48, 49, 96 (97 is over `to`) times three sub-tiles.
  const auto sm = load_sweep_config(
      test::source_path("configs/sweeps/spmd_softmax_grid_subtile_4096x4096.json"));
  const auto b1 = load_hardware(sm.hardware);
  EXPECT_EQ(generate_grid_values(sm, b1), (std::vector<int64_t>{8, 16, 32, 48, 49, 64, 96}));
  EXPECT_EQ(expand_candidates(sm, b1).size(), 21u);
}

TEST(SpmdSweepSpace, CandidatesAreGridTimesBlockTimesTileDeduplicatedGridOutermost) {
  const auto hw = test::default_hw();
  const auto cfg = parse(R"({)" + spmd_cases::kSoftmax + R"(, "partition": {"style": "spmd"},
    "candidates": {"grids": [48, 8, 48], "blocks": [[64, 4096], [128, 4096], [64, 4096]],
                   "tiles": [[1, 1024], [1, 2048]]}})");
  const auto cands = expand_candidates(cfg, hw);
  ASSERT_EQ(cands.size(), 8u);  // 2 grids x 2 blocks x 2 tiles
  EXPECT_EQ(spmd_cases::grids_of(cands), (std::vector<int64_t>{48, 48, 48, 48, 8, 8, 8, 8}));
  EXPECT_EQ(cands[1].block, (Dims{64, 4096}));
  EXPECT_EQ(cands[1].tile, (Dims{1, 2048}));
  EXPECT_EQ(cands[2].block, (Dims{128, 4096}));
  const KernelSpec s = candidate_spec(cfg, cands[2]);
  EXPECT_EQ(s.grid, 48);
  EXPECT_EQ(s.block, (Dims{128, 4096}));
  EXPECT_EQ(s.tile, (Dims{1, 1024}));
  // Without a block space the block stays unset.
  const auto plain = parse(R"({)" + spmd_cases::kSoftmax + R"(, "tile": [1, 4096],
    "partition": {"style": "spmd", "grid": 24}})");
  const auto one = expand_candidates(plain, hw);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].grid, 24);
  EXPECT_TRUE(candidate_spec(plain, one[0]).block.empty());
}

TEST(SpmdSweepSpace, GeneratedBlocksArePowersOfTwoPerDimAndTheBound) {
  const auto cfg = parse(R"({)" + spmd_cases::kSoftmax + R"(, "tile": [1, 4096],
    "partition": {"style": "spmd"},
    "candidates": {"grids": [8], "generate_blocks": {"fixed": {"1": 4096}, "max": [48, 4096]}}})");
  const auto cands = expand_candidates(cfg, test::default_hw());
  std::vector<Dims> blocks;
  for (const auto& c : cands) blocks.push_back(c.block);
  EXPECT_EQ(blocks,
            (std::vector<Dims>{
                {1, 4096}, {2, 4096}, {4, 4096}, {8, 4096}, {16, 4096}, {32, 4096}, {48, 4096}}));
}

// A Triton author sweeps BLOCK alone: with no grid anywhere, each block's grid is
// cdiv(shape, block) per dim, multiplied; with no tile either, the block is its one tile. The
// partition's other keys (source) stay.
TEST(SpmdSweepSpace, ABlockSpaceWithNoGridDerivesEachGridAsTritonsCdiv) {
  const auto hw = test::default_hw();
  const auto cfg = parse(R"({)" + spmd_cases::kSoftmax + R"(,
    "partition": {"style": "spmd", "source": "triton"},
    "candidates": {"blocks": [[1, 4096], [3, 4096], [64, 2048]]}})");
  EXPECT_TRUE(cfg.grid_from_block);
  EXPECT_TRUE(cfg.tile_from_block);
  EXPECT_TRUE(cfg.base.triton);
  const auto cands = expand_candidates(cfg, hw);
  ASSERT_EQ(cands.size(), 3u);
  EXPECT_EQ(spmd_cases::grids_of(cands),
            (std::vector<int64_t>{1024, 342, 32}));  // 1024/3 up; 16 x 2
  EXPECT_EQ(cands[2].tile, (Dims{64, 2048}));
  const KernelSpec s = candidate_spec(cfg, cands[1]);
  EXPECT_EQ(s.grid, 342);
  EXPECT_EQ(s.block, (Dims{3, 4096}));
  EXPECT_TRUE(s.triton);
  // With a sub-tile the blocks are walked in it; a grid space keeps its own grids.
  const auto tiled = parse(R"({)" + spmd_cases::kSoftmax + R"(, "tile": [1, 1024],
    "partition": {"style": "spmd"}, "candidates": {"blocks": [[2, 4096]]}})");
  const auto one = expand_candidates(tiled, hw);
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].grid, 512);
  EXPECT_EQ(one[0].tile, (Dims{1, 1024}));
  const auto fixed = parse(R"({)" + spmd_cases::kSoftmax + R"(, "tile": [1, 1024],
    "partition": {"style": "spmd"}, "candidates": {"grids": [40], "blocks": [[2, 4096]]}})");
  EXPECT_FALSE(fixed.grid_from_block);
  EXPECT_EQ(expand_candidates(fixed, hw)[0].grid, 40);
  // partition.block with no grid and no space: the run config's rule (one block per region).
  const auto plain = parse(R"({)" + spmd_cases::kSoftmax + R"(, "tile": [1, 1024],
    "partition": {"style": "spmd", "block": [8, 4096]}})");
  EXPECT_EQ(expand_candidates(plain, hw)[0].grid, 128);
}

TEST(SpmdSweepSpace, HugeBoundsTerminateOrAreRefusedNamingTheLimit) {
  const auto hw = test::default_hw();
  // A log scale to INT64_MAX is 63 grids; the multiples of 48 up to it are refused.
  const auto cfg = parse(R"({)" + spmd_cases::kSoftmax + R"(, "tile": [1, 4096],
    "partition": {"style": "spmd"},
    "candidates": {"generate_grids": {"from": 1, "to": 9223372036854775807}}})");
  EXPECT_EQ(generate_grid_values(cfg, hw).size(), 63u);
  EXPECT_EQ(parse_error(R"({)" + spmd_cases::kSoftmax + R"(, "tile": [1, 4096],
    "partition": {"style": "spmd"},
    "candidates": {"generate_grids": {"from": 1, "to": 9223372036854775807,
                                      "include_cores": true}}})",
                        &hw),
            "test.json: candidates.generate_grids: the space is too large: 384307168202282324 "
            "grids (multiples of the core count, each + 1); the limit is 100000; narrow the "
            "space or raise it with --max-candidates (or constraints.max_candidates)");
  // Loop counts (pypto) terminate the same way.
  const auto loops = parse(R"({"op": "add", "shape": [16, 64], "tile": [1, 64],
    "candidates": {"generate_loop_counts": {"to": 9223372036854775807, "factor": 3}}})");
  EXPECT_EQ(expand_candidates(loops, hw).size(), 40u);  // 3^0 .. 3^39
  // An aligned last dim up to INT64_MAX is refused before anything is generated.
  EXPECT_EQ(parse_error(R"({"op": "add", "shape": [16, 64],
    "candidates": {"generate_tiles": {"max": [1, 9223372036854775807]}}})",
                        &hw),
            "test.json: candidates.generate_tiles: the space is too large: 1152921504606846975 "
            "aligned values in dim 1; the limit is 100000; narrow the space or raise it with "
            "--max-candidates (or constraints.max_candidates)");
  // The product of the axes is checked against the limit too.
  EXPECT_EQ(parse_error(R"({)" + spmd_cases::kSoftmax + R"(, "tile": [1, 4096],
    "partition": {"style": "spmd"},
    "candidates": {"grids": [1, 2, 3], "blocks": [[1, 4096], [2, 4096]],
                   "constraints": {"max_candidates": 5}}})",
                        &hw),
            "test.json: candidates: the space is too large: 6 candidates (grids x blocks x tiles "
            "x loop counts); the limit is 5; narrow the space or raise it with --max-candidates "
            "(or constraints.max_candidates)");
}

TEST(SpmdSweepSpace, ErrorsNameTheKeyAndWhatIsAllowed) {
  const std::string head = R"({)" + spmd_cases::kSoftmax + R"(, "tile": [1, 4096], )";
  EXPECT_EQ(parse_error(head + R"("partition": {"style": "spmd"},
    "candidates": {"grids": [8], "loop_counts": [1, 2]}})"),
            "test.json: candidates.loop_counts: applies to the pypto partition only: an spmd "
            "launch has no loop count (sweep its grids, blocks and sub-tiles)");
  EXPECT_EQ(parse_error(head + R"("partition": {"style": "spmd"},
    "candidates": {"grids": [8], "generate_loop_counts": {"to": 4}}})"),
            "test.json: candidates.generate_loop_counts: applies to the pypto partition only: an "
            "spmd launch has no loop count (sweep its grids, blocks and sub-tiles)");
  EXPECT_EQ(parse_error(head + R"("candidates": {"grids": [8]}})"),
            "test.json: candidates.grids: applies to the spmd partition only (partition is "
            "'pypto'; give \"partition\": {\"style\": \"spmd\"})");
  EXPECT_EQ(parse_error(head + R"("partition": {"style": "spmd", "grid": 48},
    "candidates": {"generate_grids": {"to": 96}}})"),
            "test.json: partition.grid: the grid comes from candidates.grids / "
            "candidates.generate_grids: give one or the other");
  EXPECT_EQ(parse_error(head + R"("partition": {"style": "spmd"}})"),
            "test.json: partition.grid: missing: give it, candidates.grids / "
            "candidates.generate_grids, or a block space (candidates.blocks / generate_blocks: "
            "each block's grid is then cdiv(shape, block))");
  EXPECT_EQ(parse_error(head + R"("partition": {"style": "spmd"},
    "candidates": {"generate_grids": {"from": 64, "to": 8}}})"),
            "test.json: candidates.generate_grids: impossible space: to = 8 is below from = 64");
  EXPECT_EQ(parse_error(head + R"("partition": {"style": "spmd"},
    "candidates": {"generate_grids": {"to": 8, "step": 2}}})")
                .rfind("test.json: candidates.generate_grids.step: ", 0),
            0u);
  EXPECT_EQ(parse_error(head + R"("candidates": {"axis": "grid"}})"),
            "test.json: candidates.axis: \"grid\" applies to the spmd partition only (partition "
            "is 'pypto')");
  EXPECT_EQ(parse_error(head + R"("partition": {"style": "spmd", "grid": 8},
    "candidates": {"axis": "loop_count"}})"),
            "test.json: candidates.axis: \"loop_count\" applies to the pypto partition only (an "
            "spmd sweep's axes: \"grid\" or \"tile:N\")");
  // The string form works when the space supplies the grid.
  const auto cfg = parse(head + R"("partition": "spmd", "candidates": {"grids": [4, 8]}})");
  EXPECT_EQ(cfg.base.partition, PartitionStyle::kSpmd);
  EXPECT_EQ(cfg.grids, (std::vector<int64_t>{4, 8}));
}

TEST(SpmdSweep, AutoAxisIsTheGridAndASubTileThatDoesNotFitIsACapacityRejection) {
  const auto hw = test::default_hw();
  const auto cfg = parse(R"({"op": "softmax", "shape": [64, 131072], "dim": 1,
    "partition": {"style": "spmd"},
    "candidates": {"grids": [8, 16], "tiles": [[1, 4096], [1, 65536]]}})");
  const auto cands = expand_candidates(cfg, hw);
  EXPECT_EQ(resolve_axis(cfg, cands).kind, SweepAxis::Kind::kGrid);
  const CandidateResult r = evaluate_candidate(cfg, hw, cands[1]);
  EXPECT_EQ(r.grid, 8);
  EXPECT_FALSE(r.ok);
  EXPECT_EQ(r.reject_class, "capacity");
  EXPECT_NE(r.reason.find("needs "), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find(" B, has "), std::string::npos) << r.reason;
  // Nothing varies in an elementwise spmd sweep: the grid is the axis, never a loop count.
  const auto add = parse(R"({"op": "add", "shape": [64, 4096], "tile": [1, 4096],
    "partition": {"style": "spmd", "grid": 8}})");
  EXPECT_EQ(resolve_axis(add, expand_candidates(add, hw)).kind, SweepAxis::Kind::kGrid);
  // One grid, several sub-tiles: the sub-tile dim is the axis.
  const auto one =
      parse(R"({)" + spmd_cases::kSoftmax + R"(, "partition": {"style": "spmd", "grid": 48},
    "candidates": {"tiles": [[1, 1024], [1, 4096]]}})");
  const SweepAxis a = resolve_axis(one, expand_candidates(one, hw));
  EXPECT_EQ(a.kind, SweepAxis::Kind::kTileDim);
  EXPECT_EQ(a.dim, 1);
}

// Softmax (16, 16384) split over blocks runs two launches of `grid` blocks each (64 (1, 4096)
// sub-tiles shared): a wave is counted within a launch, so 48 blocks are one full wave (each core
// runs one block per launch, two in all) and 64 blocks two waves with a 16-block tail.
TEST(SpmdSweep, WavesAreCountedWithinALaunch) {
  const auto hw = test::default_hw();
  const auto cfg = parse(R"({"op": "softmax", "shape": [16, 16384], "dim": 1,
    "tile": [1, 4096], "partition": {"style": "spmd"}, "candidates": {"grids": [48, 64]}})");
  const SweepResult res = run_sweep(cfg, hw, {1});
  ASSERT_EQ(res.candidates.size(), 2u);
  const auto& g48 = res.candidates[0].spmd;
  const auto& g64 = res.candidates[1].spmd;
  EXPECT_EQ(g48.waves, 1);
  EXPECT_EQ(g48.tail_blocks, 48);
  EXPECT_EQ(g48.tail_exposed_us, 0.0);
  EXPECT_EQ(g64.waves, 2);
  EXPECT_EQ(g64.tail_blocks, 16);
  EXPECT_EQ(g64.tail_exposed_us, 0.0);  // per-core totals mix the two launches
}

// Softmax (1024, 4096) on 48 AIV cores, whole rows per block: 24 blocks leave 24 cores idle,
// 48 fill one wave, 49 add a one-block second wave, 96 fill two waves.
TEST(SpmdSweep, ZonesReadTheLaunchFromThePerCoreMetrics) {
  const auto hw = test::default_hw();
  ASSERT_EQ(hw.cores.aiv, 48);
  const auto cfg = parse(R"({)" + spmd_cases::kSoftmax + R"(, "tile": [1, 4096],
    "partition": {"style": "spmd"}, "candidates": {"grids": [24, 48, 49, 96]}})");
  const SweepResult res = run_sweep(cfg, hw, {1});
  ASSERT_EQ(res.ranking.size(), 4u);
  EXPECT_EQ(res.axis_label, "grid");
  const auto& g24 = res.candidates[0];
  const auto& g48 = res.candidates[1];
  const auto& g49 = res.candidates[2];
  const auto& g96 = res.candidates[3];
  // The figures, by hand: waves = ceil(grid / 48); the tail wave's blocks; sub-tiles per block =
  // rows per block (1024 rows split evenly), one (1, 4096) sub-tile per row.
  EXPECT_EQ(g24.spmd.cores, 48);
  EXPECT_EQ(g24.spmd.cores_used, 24);
  EXPECT_EQ(g24.spmd.waves, 1);
  EXPECT_EQ(g24.spmd.tail_blocks, 24);
  EXPECT_DOUBLE_EQ(g24.spmd.tail_occupancy, 0.5);
  EXPECT_EQ(g48.spmd.waves, 1);
  EXPECT_DOUBLE_EQ(g48.spmd.tail_occupancy, 1.0);
  EXPECT_EQ(g49.spmd.waves, 2);
  EXPECT_EQ(g49.spmd.tail_blocks, 1);
  EXPECT_GT(g49.spmd.tail_exposed_us, 0.0);
  EXPECT_EQ(g96.spmd.waves, 2);
  EXPECT_EQ(g96.spmd.tail_blocks, 48);
  EXPECT_EQ(g96.spmd.tail_exposed_us, 0.0);
  EXPECT_EQ(g48.spmd.burst_bytes, 4096 * 4);
  EXPECT_DOUBLE_EQ(g96.spmd.blocks_per_core, 2.0);
  // The zones.
  EXPECT_EQ(g24.zone, Zone::kTooCoarse) << g24.zone_evidence;
  EXPECT_NE(g24.zone_evidence.find("24 of 48 cores idle (grid 24)"), std::string::npos)
      << g24.zone_evidence;
  EXPECT_EQ(g48.zone, Zone::kSweetSpot) << g48.zone_evidence;
  EXPECT_EQ(g49.zone, Zone::kTooCoarse) << g49.zone_evidence;
  EXPECT_NE(g49.zone_evidence.find("more blocks than the best (49 vs 48), "), std::string::npos)
      << g49.zone_evidence;
  EXPECT_NE(g49.zone_evidence.find("unbalanced waves, the last too small for the cores: 2 waves, "
                                   "tail wave 1/48 cores (2%)"),
            std::string::npos)
      << g49.zone_evidence;
  // 96 blocks of ~11 rows pay twice the fill, drain and starts of 48 blocks of ~21 rows.
  EXPECT_EQ(g96.zone, Zone::kTooFragmented) << g96.zone_evidence;
  EXPECT_NE(g96.zone_evidence.find("per-block overhead: core time"), std::string::npos)
      << g96.zone_evidence;
  ASSERT_TRUE(res.recommended);
  EXPECT_EQ(res.candidates[*res.recommended].grid, 48);
  EXPECT_NE(res.why.find("grid 48 on 48 cores: 1.00 blocks/core, 1 wave, tail wave 48/48 (100%)"),
            std::string::npos)
      << res.why;
}

TEST(SpmdZones, TinyCopiesAndBlockStartsAreTooFragmented) {
  auto point = [](double x, double t, int64_t burst, double overhead) {
    SpmdZonePoint p;
    p.x = x;
    p.gen_time_us = t;
    p.spmd.valid = true;
    p.spmd.grid = 48;
    p.spmd.cores = p.spmd.cores_used = p.spmd.tail_blocks = 48;
    p.spmd.waves = 1;
    p.spmd.tail_occupancy = p.spmd.utilisation = 1.0;
    p.spmd.burst_bytes = burst;
    p.spmd.block_overhead_share = overhead;
    p.flag_bytes = 1024;
    p.tiny_copies = burst < 1024;
    return p;
  };
  // A sub-tile axis (larger = coarser): 256 B bursts, then block starts at 20% of core time.
  const std::vector<SpmdZonePoint> pts = {point(64, 30, 256, 0.0), point(512, 20, 2048, 0.2),
                                          point(1024, 10, 4096, 0.0), point(2048, 10.1, 8192, 0.0)};
  const auto v = classify_spmd_zones(pts, Granularity::kCoarserWithLargerX);
  EXPECT_EQ(v[0].zone, Zone::kTooFragmented);
  EXPECT_NE(v[0].evidence.find("tiny copies: bursts of 256 B under the 1024 B flag"),
            std::string::npos)
      << v[0].evidence;
  EXPECT_EQ(v[1].zone, Zone::kTooFragmented);
  EXPECT_NE(v[1].evidence.find("block starts 20.0% of core time (over 10.0%"), std::string::npos)
      << v[1].evidence;
  EXPECT_EQ(v[2].zone, Zone::kSweetSpot);
  EXPECT_EQ(v[3].zone, Zone::kSweetSpot);
}

// A Triton block sweep (grid = cdiv(shape, BLOCK)): the grid and the block move together, one
// series; every candidate is zoned (each was its own series, zoned "-").
TEST(SpmdSweep, ABlockSweepWhoseGridFollowsTheBlockIsOneSeries) {
  const auto hw = test::default_hw();
  const auto cfg = parse(R"({"op": "amin", "shape": [4194304], "dtype": "fp32", "dim": 0,
    "tile": [16384], "partition": {"style": "spmd"}, "candidates": {"blocks": [[16384], [32768],
    [65536], [131072], [262144], [524288], [1048576], [4194304]]}})");
  const SweepResult res = run_sweep(cfg, hw, {1});
  EXPECT_TRUE(res.block_follows_grid);
  std::set<int> series;
  for (const auto& c : res.candidates) {
    ASSERT_TRUE(c.ok) << c.reason;
    EXPECT_NE(c.zone, Zone::kNone) << "grid " << c.grid;
    EXPECT_FALSE(c.zone_evidence.empty());
    series.insert(c.series);
  }
  EXPECT_EQ(series.size(), 1u);
  const std::string table = sweep_table(cfg, hw, res, 0);
  EXPECT_NE(table.find("zones along grid (sub-tile (16384), block cdiv(shape, grid))"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("grid 1 block (4194304)"), std::string::npos) << table;
  EXPECT_NE(table.find("too few blocks for the cores"), std::string::npos) << table;
}

TEST(SpmdSweep, ReportsShowTheGridNextToTheSubTile) {
  const auto hw = test::default_hw();
  const auto cfg = parse(R"({)" + spmd_cases::kSoftmax + R"(, "tile": [1, 4096],
    "partition": {"style": "spmd"}, "candidates": {"grids": [48, 49]}})");
  const SweepResult res = run_sweep(cfg, hw, {1});
  const std::string table = sweep_table(cfg, hw, res, 0);
  EXPECT_NE(table.find("sub-tile   grid"), std::string::npos) << table;
  EXPECT_NE(table.find("waves tail% sub/blk"), std::string::npos) << table;
  EXPECT_EQ(table.find(" loop "), std::string::npos) << table;
  EXPECT_NE(table.find("zones along grid (sub-tile (1, 4096))"), std::string::npos) << table;
  const std::string csv = sweep_csv(cfg, hw, res);
  EXPECT_NE(csv.find(",loop_count,grid,block,cores,cores_used,waves,tail_blocks,tail_occupancy,"),
            std::string::npos);
  EXPECT_NE(csv.find(",1,49,,48,48,2,1,0.020833,"), std::string::npos) << csv;
  const json j = sweep_json(cfg, hw, res);
  EXPECT_EQ(j["recommended"]["grid"], 48);
  EXPECT_TRUE(j["recommended"]["block"].is_null());
  EXPECT_EQ(j["candidates"][1]["grid"], 49);
  EXPECT_EQ(j["candidates"][1]["spmd"]["waves"], 2);
  EXPECT_EQ(j["candidates"][1]["spmd"]["tail_blocks"], 1);
}

// Add (1024, 4096) under grid 48 along the sub-tile: bursts under 1 KB are too fragmented, and a
// sub-tile of 3 x 128 KiB buffers does not fit UB. By hand: (1, 512) fp32 is one 2048 B copy (one
// burst); 1024 x 8 = 8192 sub-tiles over 48 blocks are 170 or 171 per block.
TEST(SpmdSweep, TinySubTileCopiesAreTooFragmentedAlongTheSubTileAxis) {
  const auto hw = test::default_hw();
  const auto cfg = parse(R"({"op": "add", "shape": [1024, 4096],
    "partition": {"style": "spmd", "grid": 48},
    "candidates": {"tiles": [[1, 64], [1, 128], [1, 512], [1, 4096], [8, 4096]]}})");
  const SweepResult res = run_sweep(cfg, hw, {1});
  EXPECT_EQ(res.axis_label, "sub-tile[1]");
  const auto& t64 = res.candidates[0];
  const auto& t512 = res.candidates[2];
  EXPECT_EQ(t64.spmd.burst_bytes, 256);
  EXPECT_EQ(t512.spmd.burst_bytes, 2048);
  EXPECT_EQ(t512.spmd.copy_bytes, 2048);
  EXPECT_EQ(t512.spmd.subtiles_max, 171);  // ceil(1024 * 8 / 48)
  EXPECT_EQ(t512.spmd.subtiles_min, 170);
  EXPECT_EQ(t64.zone, Zone::kTooFragmented) << t64.zone_evidence;
  EXPECT_NE(t64.zone_evidence.find("tiny copies: bursts of 256 B under the 1024 B flag"),
            std::string::npos)
      << t64.zone_evidence;
  const auto& big = res.candidates[4];
  EXPECT_FALSE(big.ok);
  EXPECT_EQ(big.reject_class, "capacity");
  EXPECT_NE(big.reason.find("needs 393216 B, has 196608 B"), std::string::npos) << big.reason;
  EXPECT_NE(sweep_table(cfg, hw, res, 0).find("grid 48 sub-tile (8, 4096): capacity: "),
            std::string::npos);
}

// The shipped add sweep on ascend910b4 (40 AIV): bandwidth-bound, so every grid that fills its
// waves ties; too few blocks idle cores, and a small last wave (41, 81, 121; 128 = 3 x 40 + 8) is
// an unbalanced wave.
TEST(SpmdSweep, ShippedAddGridSweepOn910b4) {
  const auto cfg = load_sweep_config(test::source_path("configs/sweeps/spmd_add_grid_910b4.json"));
  const auto hw = load_hardware(cfg.hardware);
  const SweepResult res = run_sweep(cfg, hw, {1});
  ASSERT_EQ(res.ranking.size(), 15u);
  std::map<int64_t, Zone> zone;
  std::map<int64_t, std::string> evidence;
  for (const auto& c : res.candidates) zone[c.grid] = c.zone, evidence[c.grid] = c.zone_evidence;
  for (int64_t g : {1, 2, 4, 8}) {
    EXPECT_EQ(zone[g], Zone::kTooCoarse) << g;
    EXPECT_NE(evidence[g].find(fmt::format("{} of 40 cores idle", 40 - g)), std::string::npos)
        << evidence[g];
  }
  // (128 blocks, a 8-block tail wave, is within the tolerance of the best: bandwidth-bound,
  // its tail streams at the HBM rate the full waves share.)
  for (int64_t g : {41, 81, 121}) {
    EXPECT_EQ(zone[g], Zone::kTooCoarse) << g;
    EXPECT_NE(evidence[g].find("unbalanced waves"), std::string::npos) << evidence[g];
  }
  for (int64_t g : {16, 32, 40, 64, 80, 120, 128, 160}) EXPECT_EQ(zone[g], Zone::kSweetSpot) << g;
  // By hand: an (8, 1024) fp32 sub-tile is one 32 KiB copy of 8 bursts of 4 KiB; 512 x 4 = 2048
  // sub-tiles over 40 blocks are 51 or 52 per block.
  const auto& g40 = res.candidates[6];
  ASSERT_EQ(g40.grid, 40);
  EXPECT_EQ(g40.spmd.copy_bytes, 32768);
  EXPECT_EQ(g40.spmd.burst_bytes, 4096);
  EXPECT_EQ(g40.spmd.subtiles_min, 51);
  EXPECT_EQ(g40.spmd.subtiles_max, 52);
  EXPECT_EQ(g40.spmd.waves, 1);
  EXPECT_DOUBLE_EQ(g40.spmd.tail_occupancy, 1.0);
}

}  // namespace
}  // namespace tilesim
