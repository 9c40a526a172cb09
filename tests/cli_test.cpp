// The tilesim binary: exit codes, one-line messages for bad input, and the one CLI convention
// (--json [FILE], --csv [FILE], -j/--jobs, --version, usage errors exit 2 with the usage line).
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace tilesim {
namespace {

using test::CmdResult;
using test::run_cli;

std::string write_temp(const std::string& name, const std::string& text) {
  const auto dir = std::filesystem::temp_directory_path() / "tilesim_cli_test";
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

void expect_one_line_error(const std::string& config_text, const std::string& needle) {
  const CmdResult r = run_cli("run " + write_temp("bad.json", config_text));
  EXPECT_NE(r.code, 0) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
  EXPECT_NE(r.out.find("tilesim: error: "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(needle), std::string::npos) << r.out;
}

TEST(Cli, BadInputExitsNonZeroWithOneLine) {
  expect_one_line_error(R"({"op": "add", "shape": [16, 64], )", "malformed JSON");
  expect_one_line_error(R"({"op": "addd", "shape": [16, 64], "tile": [1, 64]})",
                        "unknown op 'addd'");
  expect_one_line_error(R"({"op": "add", "shape": [16, 64], "tile": [64]})", "rank");
  expect_one_line_error(R"({"op": "add", "shape": [16, 64], "tile": [1, 12]})", "misaligned");
  expect_one_line_error(R"({"op": "add", "shape": [16, 65536], "tile": [1, 65536]})",
                        "bad.json: UB overflow");  // lowering errors name the config too
  expect_one_line_error(R"({"op": "add", "shape": [16, 64], "tile": [1, 64], "tiel": 1})",
                        "tiel: unknown key");
}

// Output is never lost silently: a write that fails is exit 2 naming the file (the disk full
// case is /dev/full); a failed write leaves the old file in place (the text goes to a
// temporary file that is renamed over it only when complete); a sweep refuses to write over its
// own config.
TEST(Cli, FailedWritesAreErrorsAndNeverReplaceAFileWithAPartialOne) {
  const std::string cfg = write_temp("sweep_cfg.json", R"({"op": "add", "shape": [16, 64],
      "dtype": "fp32", "candidates": {"tiles": [[1, 64], [2, 64]]}})");
  if (std::filesystem::exists("/dev/full")) {
    CmdResult r = run_cli("sweep " + cfg + " --csv /dev/full");
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_NE(r.out.find("tilesim: error: /dev/full: cannot write CSV: No space left on device"),
              std::string::npos)
        << r.out;
    r = run_cli("sweep " + cfg + " > /dev/full", false);
    EXPECT_EQ(r.code, 2) << r.out;
  }
  std::string before;
  std::getline(std::ifstream(cfg), before, '\0');
  CmdResult r = run_cli("sweep " + cfg + " --json " + cfg);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("--json " + cfg + ": is the command's own input file"), std::string::npos)
      << r.out;
  std::string after;
  std::getline(std::ifstream(cfg), after, '\0');
  EXPECT_EQ(after, before);
  const std::string out = write_temp("sweep_out.json", "old");
  r = run_cli("sweep " + cfg + " --json " + out);
  EXPECT_EQ(r.code, 0) << r.out;
  std::string text;
  std::getline(std::ifstream(out), text, '\0');
  EXPECT_EQ(nlohmann::json::parse(text)["candidates"].size(), 2u);
  for (const auto& e :
       std::filesystem::directory_iterator(std::filesystem::path(out).parent_path()))
    EXPECT_EQ(e.path().string().find(".tilesim-tmp-"), std::string::npos) << e.path();
}

TEST(Cli, RulesRejectsBadInputInOneLine) {
  for (const char* args : {"rules --hardware ascend910z9", "rules --only rule9"}) {
    const CmdResult r = run_cli(args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    EXPECT_NE(r.out.find(std::string(args).substr(std::string(args).rfind(' ') + 1)),
              std::string::npos)
        << r.out;
  }
}

// The examples only (the whole rulebook runs in tests/rules_test.cpp, in process).
TEST(Cli, RulesJsonHasAVerdictAndNumbersPerClaim) {
  const CmdResult r = run_cli("rules --only rule1.example --json", false);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j.at("results").size(), 1u);
  const auto& res = j["results"][0];
  EXPECT_EQ(res.at("hardware"), "ascend910b1");
  ASSERT_EQ(res.at("checks").size(), 5u);
  for (const auto& c : res["checks"]) {
    EXPECT_EQ(c.at("id").get<std::string>().rfind("rule1.example_", 0), 0u) << c.at("id");
    EXPECT_FALSE(c.at("numbers").get<std::string>().empty()) << c.at("id");
    EXPECT_TRUE(c.at("verdict") == "holds" || c.at("verdict") == "bends" ||
                c.at("verdict") == "fails");
  }
}

TEST(Cli, RulesCsvHasARowPerClaim) {
  const CmdResult r = run_cli("rules --only rule1.example --csv", false);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("hardware,id,verdict,claim,numbers,margin_pct,tie\n", 0), 0u) << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 6) << r.out;
  EXPECT_NE(r.out.find("\nascend910b1,rule1.example_"), std::string::npos) << r.out;
}

TEST(Cli, CalibrateCsvHasARowPerMeasurement) {
  const std::string file = write_temp("m.json", R"({"measurements": [{"id": "a", "config":
    {"op": "copy_in", "shape": [96, 256], "dtype": "fp16", "tile": [8, 64],
     "partition": {"style": "ascendc", "cores": 48}, "buffer_count": 1},
    "metric": "mte2_time_us", "measured": 10, "source": "hand, x"}]})");
  const CmdResult r =
      run_cli("calibrate " + file + " --free dma.read.issue_cycles --max-iter 2 -j 1 --csv", false);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.rfind("id,metric,source,weight,measured,before,after,error_before_pct,"
                        "error_after_pct,hardware\na,mte2_time_us,\"hand, x\",1,10.000000,",
                        0),
            0u)
      << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << r.out;
  // The JSON carries each run's Metrics record; the rows compare with its fields.
  const CmdResult j = run_cli(
      "calibrate " + file + " --free dma.read.issue_cycles --max-iter 2 -j 1 --json", false);
  ASSERT_EQ(j.code, 0) << j.out;
  const auto doc = nlohmann::json::parse(j.out);
  ASSERT_EQ(doc.at("run_metrics").size(), 1u);
  for (const char* side : {"before", "after"})
    EXPECT_EQ(doc["rows"][0].at(side), doc["run_metrics"][0].at(side).at("breakdown").at("mte2_us"))
        << side;
}

TEST(Cli, RunPrintsJsonWithTheDocumentedFields) {
  const CmdResult r =
      run_cli("run " + test::source_path("configs/examples/add_pypto.json") + " --json --loop 4");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j.at("gen_time_us").get<double>(), 0);
  EXPECT_EQ(j.at("candidate").at("loop_count"), 4);
  EXPECT_FALSE(j.at("per_core").empty());
  for (const char* key : {"execute_task_num", "core_total_work_time_us", "total_wait_time_us",
                          "wait_schedule_time_us", "wait_predecessor_time_us"})
    EXPECT_TRUE(j["per_core"][0].contains(key)) << key;
  EXPECT_TRUE(j.at("psg").is_array());
  EXPECT_TRUE(j.at("pipes").contains("MTE2"));
  EXPECT_EQ(j.at("tilesim_version"), TILESIM_VERSION);
}

TEST(Cli, VersionAndHelpExitZero) {
  for (const char* args : {"--version", "run --version", "sweep --version"}) {
    const CmdResult r = run_cli(args);
    EXPECT_EQ(r.code, 0) << args << ": " << r.out;
    // The version, then the commit it was built from (git describe; "unknown" outside git).
    const std::string head = std::string("tilesim ") + TILESIM_VERSION + " (commit ";
    EXPECT_EQ(r.out.substr(0, head.size()), head) << args;
    EXPECT_EQ(r.out.substr(r.out.size() - 2), ")\n") << args;
    EXPECT_GT(r.out.size(), head.size() + 3) << args;
  }
  EXPECT_EQ(run_cli("calibrate --help").code, 0);
}

// Every usage error: exit 2, the error, then the command's usage line.
TEST(Cli, UsageErrorsExitTwoWithTheUsageLine) {
  const std::string cfg = test::source_path("configs/examples/add_pypto.json");
  const std::pair<std::string, std::string> cases[] = {
      {"run", "Usage: tilesim run [OPTIONS] config"},
      {"run " + cfg + " --bogus", "Usage: tilesim run [OPTIONS] config"},
      {"run " + cfg + " --loop x", "'x' is not an integer >= 1"},
      // A typo away from a command or an option: the hint names it.
      {"swep " + cfg,
       "tilesim: error: unknown command 'swep', did you mean 'sweep'? (commands: "
       "run, replay, analyze, sweep, calibrate, rules, validate, measurements, "
       "merge, trace-pypto, trace-triton)"},
      {"run " + cfg + " --tiles 1,64",
       "tilesim: error: unknown option '--tiles', did you mean "
       "'--tile'?"},
      {"sweep " + cfg + " --objectiv kernel_time_us", "did you mean '--objective'?"},
      {"sweep " + cfg + " --top 99999999999999999999999999",
       "'99999999999999999999999999' is not an integer >= 0"},
      {"calibrate " + cfg + " --fd-step 1e309", "'1e309' is not a finite number in (0, 0.5]"},
      {"calibrate " + cfg + " --fd-step nan", "'nan' is not a finite number in (0, 0.5]"},
      {"sweep", "Usage: tilesim sweep [OPTIONS] config"},
      {"rules -j -1", "Usage: tilesim rules [OPTIONS]"},
      {"calibrate", "Usage: tilesim calibrate [OPTIONS] measurements"},
      {"replay", "Usage: tilesim replay [OPTIONS] graph"},
      {"analyze", "Usage: tilesim analyze [OPTIONS] trace"},
      {"", "Usage: tilesim [OPTIONS] SUBCOMMAND"},
  };
  for (const auto& [args, needle] : cases) {
    const CmdResult r = run_cli(args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
    EXPECT_EQ(r.out.rfind("tilesim: error: ", 0), 0u) << args << ": " << r.out;
    EXPECT_NE(r.out.find(needle), std::string::npos) << args << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 2) << args << ": " << r.out;
  }
}

// --json FILE writes the file and keeps the table on stdout; --json alone prints only the JSON.
TEST(Cli, JsonTakesAnOptionalFile) {
  const std::string cfg = test::source_path("configs/examples/add_pypto.json");
  const std::string file = write_temp("run.json", "");
  const CmdResult to_file = run_cli("run " + cfg + " --json " + file, false);
  ASSERT_EQ(to_file.code, 0) << to_file.out;
  EXPECT_EQ(to_file.out.rfind("tilesim run: ", 0), 0u) << to_file.out;
  EXPECT_NE(to_file.out.find("JSON written to " + file), std::string::npos) << to_file.out;
  std::ifstream in(file);
  const auto from_file = nlohmann::json::parse(in);
  const CmdResult to_stdout = run_cli("run --json " + cfg, false);
  ASSERT_EQ(to_stdout.code, 0) << to_stdout.out;
  EXPECT_EQ(nlohmann::json::parse(to_stdout.out), from_file);
  EXPECT_EQ(from_file.at("tilesim_version"), TILESIM_VERSION);
}

TEST(Cli, SweepJsonAndCsvGoToStdoutWithoutAFile) {
  const std::string cfg = test::source_path("configs/sweeps/rule1_a_softmax_16x16384.json");
  const CmdResult j = run_cli("sweep " + cfg + " -j 1 --json", false);
  ASSERT_EQ(j.code, 0) << j.out;
  const auto doc = nlohmann::json::parse(j.out);
  EXPECT_EQ(doc.at("tilesim_version"), TILESIM_VERSION);
  EXPECT_EQ(doc.at("candidates").size(), 3u);
  const CmdResult c = run_cli("sweep " + cfg + " --jobs 1 --csv", false);
  ASSERT_EQ(c.code, 0) << c.out;
  EXPECT_EQ(c.out.rfind("op,shape,dtype,hardware,rank,index,tile0,tile1,loop_count,", 0), 0u)
      << c.out;
  EXPECT_EQ(std::count(c.out.begin(), c.out.end(), '\n'), 4) << c.out;
  EXPECT_NE(c.out.find("\nsoftmax,16x16384,fp32,ascend910b1,1,0,1,8192,1,ok,"), std::string::npos)
      << c.out;
}

// A config without "tile" runs with --tile (and --loop); without either it fails naming both.
TEST(Cli, RunTakesTheTileFromTheCommandLineWhenTheConfigHasNone) {
  const std::string cfg = write_temp("no_tile.json", R"({"op": "add", "shape": [16, 4096]})");
  const CmdResult r = run_cli("run " + cfg + " --tile 1,4096 --loop 4 --json", false);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j.at("candidate").at("tile"), nlohmann::json::array({1, 4096}));
  EXPECT_EQ(j.at("candidate").at("loop_count"), 4);
  const CmdResult same = run_cli(
      "run " +
          write_temp("with_tile.json", R"({"op": "add", "shape": [16, 4096], "tile": [1, 4096]})") +
          " --loop 4 --json",
      false);
  ASSERT_EQ(same.code, 0) << same.out;
  EXPECT_EQ(nlohmann::json::parse(same.out).at("gen_time_us"), j.at("gen_time_us"));

  const CmdResult missing = run_cli("run " + cfg + " --loop 4");
  EXPECT_EQ(missing.code, 2) << missing.out;
  EXPECT_EQ(missing.out,
            "tilesim: error: " + cfg + ": tile: missing (give it in the config or with --tile)\n");
}

TEST(Cli, TraceIsAChromeEventArray) {
  const std::string trace = write_temp("trace.json", "");
  const CmdResult r =
      run_cli("run " + test::source_path("configs/examples/add_pypto.json") + " --trace " + trace);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(trace);
  const auto j = nlohmann::json::parse(in);
  ASSERT_TRUE(j.is_array());
  int complete = 0, aicpu = 0, pipe_samples = 0, busy_samples = 0;
  for (const auto& e : j) {
    if (e.at("ph") == "X") {
      ++complete;
      EXPECT_GE(e.at("dur").get<double>(), 0);
      if (e.at("pid") == 3) ++aicpu;
    }
    // Per-pipe tracks: each core's counter holds each pipe's busy share (%) of its task.
    if (e.at("ph") == "C") {
      ++pipe_samples;
      EXPECT_NE(e.at("name").get<std::string>().find(" pipes"), std::string::npos);
      double sum = 0;
      for (const char* pipe : {"MTE2", "V", "MTE3"}) {
        const double v = e.at("args").at(pipe).get<double>();
        EXPECT_GE(v, 0);
        EXPECT_LE(v, 100);
        sum += v;
      }
      if (sum > 0) ++busy_samples;
    }
  }
  EXPECT_GT(complete, 0);
  EXPECT_GT(aicpu, 0);
  EXPECT_GT(busy_samples, 0);
  EXPECT_GE(pipe_samples, busy_samples);
}

// -q on every command: nothing on stdout, the work done (the file written, the exit code kept).
TEST(Cli, QuietIsOnEveryCommandAndLeavesStdoutEmpty) {
  const std::string cfg = test::source_path("configs/examples/add_pypto.json");
  const std::string sweep = test::source_path("configs/sweeps/rule1_a_softmax_16x16384.json");
  const std::string trace = write_temp("quiet_trace.json", "");
  const std::string json = write_temp("quiet.json", "");
  ASSERT_EQ(run_cli("run " + cfg + " --trace " + trace).code, 0);
  const std::string cases[] = {
      "run " + cfg + " -q --json " + json,
      "sweep " + sweep + " -j 1 -q",
      "rules --only rule1.example_a -j 1 -q",
      "analyze " + trace + " -q",
      "validate " + test::source_path("configs/validation/a2_matmul_6144.json") + " -j 1 -q",
  };
  for (const auto& args : cases) {
    const CmdResult r = run_cli(args, /*with_stderr=*/false);
    EXPECT_TRUE(r.code == 0 || args.rfind("validate", 0) == 0) << args << ": " << r.out;
    EXPECT_EQ(r.out, "") << args;
  }
  std::ifstream in(json);
  EXPECT_GT(nlohmann::json::parse(in).at("gen_time_us").get<double>(), 0);
  // Each command lists it in its help.
  for (const char* cmd :
       {"run", "replay", "analyze", "sweep", "merge", "calibrate", "rules", "validate",
        "measurements from-msprof", "measurements from-swimlane", "trace-pypto"})
    EXPECT_NE(run_cli(std::string(cmd) + " --help").out.find("-q,--quiet"), std::string::npos)
        << cmd;
}

// --set KEY=VALUE: a hardware what-if, checked as a hardware file's entry is, named in the result.
TEST(Cli, SetIsAHardwareWhatIfCheckedLikeAFileEntry) {
  const std::string cfg = test::source_path("configs/examples/add_pypto.json");
  const auto gen = [&](const std::string& extra) {
    const CmdResult r = run_cli("run " + cfg + " --json" + extra, false);
    EXPECT_EQ(r.code, 0) << extra << ": " << r.out;
    return nlohmann::json::parse(r.out);
  };
  const auto base = gen("");
  const auto slow = gen(" --set gm.hbm_bandwidth_gbps=200 --set l2.bandwidth_gbps=400");
  EXPECT_GT(slow["gen_time_us"].get<double>(), 1.5 * base["gen_time_us"].get<double>());
  EXPECT_EQ(slow["hardware"],
            "ascend910b1 (what-if: gm.hbm_bandwidth_gbps=200, l2.bandwidth_gbps=400)");
  // A sweep carries the set hardware in its job (so shards and their merge agree).
  const std::string sweep = test::source_path("configs/sweeps/rule1_a_softmax_16x16384.json");
  const CmdResult s =
      run_cli("sweep " + sweep + " -j 1 --json --set gm.hbm_bandwidth_gbps=200", false);
  ASSERT_EQ(s.code, 0) << s.out;
  EXPECT_EQ(nlohmann::json::parse(s.out)["sweep"]["hardware"],
            "ascend910b1 (what-if: gm.hbm_bandwidth_gbps=200)");
  const std::pair<std::string, std::string> bad[] = {
      {"--set gm.hbm_bandwith_gbps=400",
       "tilesim: error: --set: parameters.gm.hbm_bandwith_gbps: unknown key; did you mean "
       "gm.hbm_bandwidth_gbps? (every key is listed in docs/hardware.md)\n"},
      {"--set gm.hbm_bandwidth_gbps=-4",
       "tilesim: error: --set: parameters.gm.hbm_bandwidth_gbps.value: out of range: -4 (allowed "
       "1 to 1000000 GB/s)\n"},
      {"--set cores.aiv=2.5",
       "tilesim: error: --set: parameters.cores.aiv.value: expected an integer (1 to 1024 cores), "
       "got 2.5\n"},
      {"--set gm.hbm_bandwidth_gbps=fast",
       "tilesim: error: --set gm.hbm_bandwidth_gbps=fast: 'fast' is not a number\n"},
      {"--set cores.aiv=4 --set cores.aiv=8",
       "tilesim: error: --set cores.aiv=8: cores.aiv is set twice\n"},
      {"--set x",
       "tilesim: error: --set x: expected KEY=VALUE (a hardware parameter of docs/hardware.md and "
       "its value, e.g. gm.hbm_bandwidth_gbps=800)\n"},
  };
  for (const auto& [extra, message] : bad) {
    const CmdResult r = run_cli("run " + cfg + " " + extra);
    EXPECT_EQ(r.code, 2) << extra;
    EXPECT_EQ(r.out, message) << extra;
  }
}

// One rule for --svg (a file) and -o (a file for another tilesim command): validate's folder of
// plots is --svg-dir, and --svg there says so.
TEST(Cli, SvgIsOneFileAndValidateTakesAFolderAsSvgDir) {
  const CmdResult r = run_cli("validate --svg plots/");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out,
            "tilesim: error: --svg plots/: --svg is one file in every command, and validate draws "
            "one plot per sweep: give the folder with --svg-dir DIR\n");
  for (const char* cmd : {"sweep", "merge", "calibrate", "measurements from-msprof"}) {
    const std::string help = run_cli(std::string(cmd) + " --help").out;
    const size_t at = help.find("-o,--output");
    ASSERT_NE(at, std::string::npos) << cmd;
    const std::string line = help.substr(at, help.find('\n', at) - at);
    EXPECT_NE(line.find(", for "), std::string::npos) << cmd << ": " << line;
    EXPECT_NE(line.find("tilesim "), std::string::npos) << cmd << ": " << line;
  }
}

// The issue's softmax on the 910B4: grid 32 wins by a hair with 8 of 40 cores idle; the answer says
// it is HBM-bound and that filling the idle cores (grid 40) is noise, with the figures.
TEST(Cli, TheRecommendationNamesWhatBindsItAndTheNextLeverQuantified) {
  const std::string cfg = write_temp("softmax_910b4.json", R"({"op": "softmax",
    "shape": [4096, 8192], "dtype": "fp32", "dim": 1, "tile": [1, 8192],
    "hardware": "ascend910b4", "partition": {"style": "spmd"},
    "candidates": {"grids": [16, 32, 40, 64]}})");
  const CmdResult r = run_cli("sweep " + cfg + " -j 1 --json", false);
  ASSERT_EQ(r.code, 0) << r.out;
  const auto rec = nlohmann::json::parse(r.out).at("recommended");
  EXPECT_EQ(rec.at("grid"), 32);
  EXPECT_EQ(rec.at("binding").at(0).at("resource"), "HBM bandwidth");
  EXPECT_EQ(
      rec.at("next_lever"),
      "next lever: the 8 idle cores: grid 40 sub-tile (1, 8192) uses 8 of them at 426.479 us, "
      "+0.0% (within the 2.0% tie tolerance: noise)");
  // No idle cores: the binding resource's headroom and what lowers its floor.
  const CmdResult full = run_cli(
      "sweep " + test::source_path("configs/sweeps/spmd_softmax_grid_subtile_4096x4096.json") +
          " -j 1 --json",
      false);
  ASSERT_EQ(full.code, 0) << full.out;
  EXPECT_EQ(nlohmann::json::parse(full.out)["recommended"]["next_lever"],
            "next lever: V is 89% used: overlap can gain at most the other 11% (5.135 us of "
            "48.400); below that only less vector work (a cheaper op mix, fewer repeats) helps");
}

// --svg-map: the time over two swept axes, one cell per pair (the fastest there), the
// recommendation outlined; a sweep along one axis is refused before it runs.
TEST(Cli, SvgMapIsAHeatMapOverTwoSweptAxes) {
  const std::string map = write_temp("map.svg", "");
  const CmdResult r = run_cli(
      "sweep " + test::source_path("configs/sweeps/spmd_softmax_grid_subtile_4096x4096.json") +
      " -j 1 -q --svg-map " + map);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(map);
  const std::string svg((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  // 7 grids x 3 sub-tile widths.
  size_t cells = 0;
  for (size_t at = svg.find("class=\"cell\""); at != std::string::npos;
       at = svg.find("class=\"cell\"", at + 1))
    ++cells;
  EXPECT_EQ(cells, 21u);
  EXPECT_NE(svg.find("kernel_time_us by sub-tile[1] and grid"), std::string::npos);
  EXPECT_NE(svg.find("<title>sub-tile[1] 4096, grid 48: 50.4 us (grid 48 sub-tile (1, 4096))"),
            std::string::npos);
  EXPECT_NE(svg.find("<g id=\"best\">"), std::string::npos);
  const CmdResult one = run_cli(
      "sweep " + test::source_path("configs/sweeps/rule2_groupnorm_16x64x256x256_loops.json") +
      " --svg-map " + map);
  EXPECT_EQ(one.code, 2);
  EXPECT_EQ(one.out,
            "tilesim: error: --svg-map: a heat map needs two swept axes (a tile dim and the loop "
            "count or grid, or two tile dims); in this sweep only loop count varies (use --svg "
            "for one axis)\n");
}

// ../shared/hostile-t3 cli_empty_*, cli_json_and_csv_both_stdout, out_same_path_*: an empty
// option value is refused (not ignored), and two outputs to one file, however spelled, or both
// to stdout are refused before any work.
TEST(Cli, EmptyValuesAndTwoOutputsToOnePlaceAreRefused) {
  const std::string cfg = test::source_path("configs/examples/add_pypto.json");
  const std::string sweep = test::source_path("configs/sweeps/rule1_a_softmax_16x16384.json");
  const std::string dir = std::filesystem::path(write_temp("o.keep", "")).parent_path().string();
  const std::string o = dir + "/o.out";
  std::filesystem::remove(o);
  const std::pair<std::string, std::string> cases[] = {
      {"run " + cfg + " --hardware ''", "--hardware: an empty hardware name"},
      {"run " + cfg + " --json ''", "--json: an empty value (give one, or leave the option out)"},
      {"run " + cfg + " --tile ''", "--tile: an empty tile"},
      {"sweep " + sweep + " --json - --csv -",
       "tilesim: error: --json -: --csv also writes to standard output (give one of them a "
       "file)\n"},
      {"sweep " + sweep + " -q --json " + o + " --csv " + o,
       "tilesim: error: --json " + o + ": is also --csv's output (one file per output)\n"},
      {"run " + cfg + " --json " + o + " --trace " + o, "is also --json's output"},
      {"run " + cfg + " --export-graph " + o + " --trace " + dir + "/./o.out",
       "is also --trace's output"},
  };
  for (const auto& [args, needle] : cases) {
    const CmdResult r = run_cli(args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
    EXPECT_NE(r.out.find(needle), std::string::npos) << args << ": " << r.out;
    EXPECT_FALSE(std::filesystem::exists(o)) << args;
  }
}

// ../shared/hostile-t3 prog_cli_loop_without_loop, psw_loops_without_loop, spmd_grid_u64max,
// spmd_sweep_grids_u64max: a loop count for a program without a loop is refused (it changed
// nothing), and 2^64 - 1 is named as written, not as -1.
TEST(Cli, LoopCountsWithoutALoopAndUnsignedValuesAreRefusedAsWritten) {
  const std::string program = R"({"program": {"program": "t",
    "inputs": [{"name": "x", "shape": [4, 64], "dtype": "fp32"}], "outputs": ["y"],
    "body": [{"set_vec_tile_shapes": [1, 64]}, {"op": "exp", "inputs": ["x"], "out": "y"}]})";
  const std::string run = write_temp("no_loop.json", program + "}");
  CmdResult r = run_cli("run " + run + " --loop 4");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out,
            "tilesim: error: --loop 4: program 't' has no loop, so a loop count changes nothing "
            "(add a {\"loop\": ...} region to the program)\n");
  const std::string sweep =
      write_temp("no_loop_sweep.json", program + R"(, "candidates": {"loop_counts": [1, 2]}})");
  r = run_cli("sweep " + sweep);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "tilesim: error: " + sweep +
                       ": candidates.loop_counts: program 't' has no loop, so its loop counts "
                       "would be one candidate many times (add a {\"loop\": ...} region)\n");
  const std::string grid = write_temp("u64.json", R"({"op": "add", "shape": [64, 64],
    "tile": [8, 64], "partition": {"style": "spmd", "grid": 18446744073709551615}})");
  r = run_cli("run " + grid);
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out, "tilesim: error: " + grid +
                       ": partition.grid: out of range: 18446744073709551615 (allowed >= 1)\n");
}

// ../shared/hostile-t3 swim_lane_control_chars, graph_funcname_control_chars: names read from
// input files are printed with their control characters escaped (no forged rows, no terminal
// escape sequences).
TEST(Cli, NamesFromInputsArePrintedWithControlCharactersEscaped) {
  const std::string trace = write_temp("lanes.json", R"j([{"ph": "M", "name": "thread_name",
    "pid": 1, "tid": 100, "args": {"name": "AIV_0\n\u001b[31mFORGED 1 2 3"}},
    {"ph": "X", "cat": "event", "name": "0-0-0-0-0(a)", "pid": 1, "tid": 100, "ts": 10,
     "dur": 1, "args": {"taskId": 0, "seqNo": 0}}])j");
  const CmdResult r = run_cli("analyze " + trace, false);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("  AIV_0\\n\\x1b[31mFORGED 1 2 3 "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\x1b'), std::string::npos);
}

// ../shared/hostile-t4 analyze_set_ignored_cycles: --set clock_mhz=1000 was accepted and dropped
// (the trace's clock stayed the hardware's). A what-if goes with --compare only.
TEST(Cli, AnalyzeRefusesSetWithoutCompare) {
  const std::string trace = test::source_path("configs/pypto/example_swimlane.json");
  const CmdResult r = run_cli("analyze " + trace + " --time-unit cycles --set clock_mhz=1000");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("error: --set clock_mhz=1000: --set applies to analyze --compare only"),
            std::string::npos)
      << r.out;
}

// ../shared/hostile-t3 swim_taskid_float, swim_seqno_wraps: a fractional task id, or a seqNo that
// would wrap the 64-bit id (seqNo << 32 | taskId), is one error naming the event, not a silent
// match with another task.
TEST(Cli, SwimlaneIdsThatAreNoIdsAreRefusedNamingTheEvent) {
  const std::pair<std::string, std::string> cases[] = {
      {R"j({"taskId": 1.5})j", "event 0: args.taskId: expected an integer, got 1.5"},
      {R"j({"taskId": 5, "seqNo": 4294967296})j",
       "event 0: args.seqNo: 4294967296 does not fit the task id's upper 32 bits (0 to "
       "2147483647)"},
  };
  for (const auto& [args, message] : cases) {
    const std::string trace = write_temp(
        "ids.json",
        R"j([{"ph": "X", "name": "t", "pid": 1, "tid": 0, "ts": 0, "dur": 1, "args": )j" + args +
            "}]");
    const CmdResult r = run_cli("analyze " + trace);
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_EQ(r.out, "tilesim: error: " + trace + ": " + message + "\n");
  }
}

// ../shared/hostile-t3 out_json_over_program (and the base hardware, a point's or a
// measurement's config_file, a mapping's run config): an output never replaces a file the command
// read, however it was reached; the input stays intact.
TEST(Cli, AnOutputNeverReplacesAnIndirectInput) {
  const std::string program = write_temp("indirect_p.json", R"({"program": "t",
    "inputs": [{"name": "x", "shape": [4, 64], "dtype": "fp32"}], "outputs": ["y"],
    "body": [{"set_vec_tile_shapes": [1, 64]}, {"op": "exp", "inputs": ["x"], "out": "y"}]})");
  const std::string config = write_temp("indirect_c.json", R"({"program": "indirect_p.json"})");
  std::ifstream before_in(program);
  const std::string before((std::istreambuf_iterator<char>(before_in)),
                           std::istreambuf_iterator<char>());
  for (const char* option : {"--json", "--trace"}) {
    const CmdResult r = run_cli("run " + config + " " + option + " " + program);
    EXPECT_EQ(r.code, 2) << option << ": " << r.out;
    EXPECT_NE(r.out.find(program + ": is one of the command's input files (read as "),
              std::string::npos)
        << r.out;
    std::ifstream after_in(program);
    EXPECT_EQ(
        std::string((std::istreambuf_iterator<char>(after_in)), std::istreambuf_iterator<char>()),
        before)
        << option;
  }
}

// ../shared/hostile-t3 cli_free_nan_bounds, val_measured_denormal, csv_same_file_twice.
TEST(Cli, NonFiniteBoundsDenormalTimesAndACsvGivenTwiceAreRefused) {
  const std::string m = test::source_path("configs/measurements/a2_calibration.json");
  CmdResult r = run_cli("calibrate " + m + " --free vector.issue_cycles:nan:inf");
  EXPECT_EQ(r.code, 2);
  EXPECT_EQ(r.out,
            "tilesim: error: --free vector.issue_cycles:nan:inf: min 'nan' is not a finite "
            "number\n");
  const std::string cfg = test::source_path("configs/examples/add_pypto.json");
  const std::string d = write_temp("denormal.json", R"({"hardware": "ascend910b1",
    "sweeps": [{"name": "s", "metric": "task_duration_us", "points": [
      {"x": 1, "measured": 5e-324, "config_file": ")" + cfg +
                                                        R"("},
      {"x": 2, "measured": 1.0, "config_file": ")" + cfg +
                                                        R"("}]}]})");
  r = run_cli("validate " + d);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("sweeps[0].points[0].measured: 5e-324 is below 1e-09, no time in any unit "
                       "the metrics use"),
            std::string::npos)
      << r.out;
  const std::string board = test::source_path("configs/measurements/board/");
  r = run_cli("measurements from-msprof " + board + "relu_op_summary.csv " + board +
              "relu_op_summary.csv --map " + board + "relu_msprof_map.json");
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("relu_op_summary.csv: given twice"), std::string::npos) << r.out;
}

// A run's candidate says the preload depth of a kernel that pipelines across its tasks
// (partition.preload), and nothing of it otherwise.
TEST(Cli, TheCandidateNamesItsPreloadDepth) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("tilesim_preload_" + std::to_string(::getpid()) + ".json");
  const auto write = [&](int preload) {
    std::ofstream(path) << R"({"op": "add", "shape": [4096, 4096], "dtype": "fp32",
      "tile": [1, 4096], "hardware": "ascend910b1",
      "partition": {"style": "spmd", "grid": 48, "preload": )"
                        << preload << "}}";
  };
  write(2);
  const auto on = run_cli("run " + path.string() + " --json");
  ASSERT_EQ(on.code, 0) << on.out;
  EXPECT_EQ(nlohmann::json::parse(on.out)["candidate"]["preload"], 2);
  write(0);
  const auto off = run_cli("run " + path.string() + " --json");
  ASSERT_EQ(off.code, 0) << off.out;
  EXPECT_FALSE(nlohmann::json::parse(off.out)["candidate"].contains("preload"));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace tilesim
