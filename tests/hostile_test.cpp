// Issue 13's hostile inputs, each through the CLI as a user would give it: exit 2 with one line
// naming the file, nothing written or the old output intact. (Timing is in bench/, not here; each
// case is refused before any work, so the suite adds well under a second per case.)
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_support.hpp"
#include "tools/formats/output_file.hpp"

namespace tilesim {
namespace {

using test::CmdResult;
using test::run_cli;
using test::source_path;

std::string temp_dir() {
  static const std::string dir = [] {
    const auto d =
        std::filesystem::temp_directory_path() / ("tilesim_hostile_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    return d.string();
  }();
  return dir;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = temp_dir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Exit 2, one line "tilesim: error: <file>...", containing `needle`.
void expect_refused(const std::string& args, const std::string& file, const std::string& needle) {
  const CmdResult r = run_cli(args);
  EXPECT_EQ(r.code, 2) << args << "\n" << r.out;
  EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << args << "\n" << r.out;
  EXPECT_EQ(r.out.rfind("tilesim: error: ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find(file), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(needle), std::string::npos) << args << "\n" << r.out;
}

// Each command (args, the input its output names) is refused with `needle` and leaves the input
// byte-identical.
void expect_each_refused_intact(const std::vector<std::pair<std::string, std::string>>& cases,
                                const std::string& needle) {
  for (const auto& [args, input] : cases) {
    const std::string before = read_file(input);
    expect_refused(args, input, needle);
    EXPECT_EQ(read_file(input), before) << args;
  }
}

// JSON nested 60,000 deep (a 120 KB file) once segfaulted every command.
TEST(Hostile, DeepNestingIsRefusedByEveryLoader) {
  const std::string deep = std::string(60000, '[') + std::string(60000, ']');
  const std::string obj = R"({"a": )" + deep + "}";
  const std::string f = write_temp("deep.json", obj);
  const std::string g = write_temp("deep_graph.json", "[" + deep + "]");
  const std::string needle = "nests deeper than 64 levels";
  expect_refused("run " + f, f, needle);
  expect_refused("sweep " + f, f, needle);
  expect_refused("calibrate " + f, f, needle);
  expect_refused("validate " + f, f, needle);
  expect_refused("replay " + g, g, needle);
  expect_refused("run " + source_path("configs/examples/add_pypto.json") + " --hardware " + f, f,
                 needle);
  const std::string t =
      write_temp("deep_trace.json", R"({"traceEvents": [{"args": )" + deep + "}]}");
  expect_refused("analyze " + t, t, needle);
}

TEST(Hostile, DuplicateKeysHugeLiteralsAndDirectoriesAreInputErrors) {
  const std::string dup = write_temp("dup.json", R"({"op": "add", "op": "relu"})");
  expect_refused("run " + dup, dup, "key \"op\" appears twice");
  const std::string dup_graph =
      write_temp("dup_graph.json",
                 R"([{"taskId": 1, "taskId": 2, "funcName": "f", "coreType": "AIV", "execTime": 1,)"
                 R"( "remainingPredecessors": 0, "successors": []}])");
  expect_refused("replay " + dup_graph, dup_graph, "key \"taskId\" appears twice");
  const std::string big = write_temp("big.json", R"({"op": "add", "shape": [1e999], "tile": [8]})");
  expect_refused("run " + big, big, "out of range");
  const std::string big_graph = write_temp(
      "big_graph.json", R"([{"taskId": 1, "funcName": "f", "coreType": "AIV", "execTime": 1e999,)"
                        R"( "remainingPredecessors": 0, "successors": []}])");
  expect_refused("replay " + big_graph, big_graph, "execTime: out of range: 1e999");
  expect_refused("run " + temp_dir(), temp_dir(), "not a regular file");
  expect_refused("replay " + temp_dir(), temp_dir(), "not a regular file");
  expect_refused("analyze " + temp_dir(), temp_dir(), "not a regular file");
}

// execTime beyond 1e12 cycles once gave negative waits, -inf/nan, or a false "cycle".
TEST(Hostile, ReplayRefusesHugeExecTimes) {
  for (const std::string t : {"1e300", "1.7976931348623157e308", "18446744073709551616"}) {
    const std::string g = write_temp(
        "exec.json", R"([{"taskId": 1, "funcName": "f", "coreType": "AIV", "execTime": )" + t +
                         R"(, "remainingPredecessors": 0, "successors": []}])");
    expect_refused("replay " + g, g, "execTime: out of range");
  }
}

// A huge shape with a tiny tile, for every family and the spmd launch: refused before anything
// is allocated, with the figures and the option that raises the limit.
TEST(Hostile, HugeWorkIsRefusedWithTheFiguresForEveryFamily) {
  const std::vector<std::string> configs = {
      R"({"op": "add", "shape": [65536, 65536], "tile": [1, 8]})",
      R"({"op": "add", "shape": [65536, 65536], "tile": [1, 8], "partition": {"style": "spmd", "grid": 48}})",
      R"({"op": "sum", "shape": [65536, 65536], "dim": 1, "tile": [1, 8]})",
      R"({"op": "sum", "shape": [65536, 65536], "dim": 1, "tile": [1, 8], "partition": {"style": "spmd", "grid": 48}})",
      R"({"op": "softmax", "shape": [65536, 65536], "dim": 1, "tile": [1, 8]})",
      R"({"op": "softmax", "shape": [65536, 65536], "dim": 1, "tile": [1, 8], "partition": {"style": "spmd", "grid": 48}})",
      R"({"op": "matmul", "shape": [65536, 65536, 65536], "dtype": "fp16", "tile": [16, 16, 16]})",
      R"({"op": "groupnorm", "shape": [64, 64, 256, 256], "dim": [1, 2, 3], "tile": [1, 1, 1, 8], "params": {"groups": 8}})",
  };
  for (size_t i = 0; i < configs.size(); ++i) {
    const std::string f = write_temp("huge_" + std::to_string(i) + ".json", configs[i]);
    expect_refused("run " + f, f, "; the limit is 1.68e+07; raise it with --max-tasks");
  }
  // The same limit, lowered by --max-tasks, refuses a small run (and names the option).
  expect_refused("run " + source_path("configs/examples/add_pypto.json") + " --max-tasks 10",
                 "add_pypto.json", "the limit is 10; raise it with --max-tasks");
  const std::string g = source_path("configs/pypto/example_graph.json");
  expect_refused("replay " + g + " --max-tasks 3", g, "the limit is 3; raise it with --max-tasks");
  // Shape and tile (2^32, 2^32, 8) once divided by zero.
  const std::string z = write_temp(
      "zero.json",
      R"({"op": "relu", "shape": [4294967296, 4294967296, 8], "tile": [4294967296, 4294967296, 8]})");
  expect_refused("run " + z, z, "more than any device holds");
  const std::string loops = write_temp(
      "loops.json",
      R"({"op": "add", "shape": [4096, 4096], "tile": [16, 1024], "loop_count": 1000000000})");
  expect_refused("run " + loops, loops, "loop_count 1000000000");
}

TEST(Hostile, UnprunedAndUnboundedSweepSpacesAreRefused) {
  const std::string f = write_temp("space.json", R"({"op": "add", "shape": [16, 64],
    "candidates": {"generate_tiles": {"max": [1, 9223372036854775807]}}})");
  expect_refused("sweep " + f, f, "raise it with --max-candidates");
  const std::string g = write_temp("space_grid.json", R"({"op": "add", "shape": [4096, 4096],
    "tile": [8, 1024], "partition": {"style": "spmd"},
    "candidates": {"generate_grids": {"from": 1, "to": 9223372036854775807, "include_cores": true}}})");
  expect_refused("sweep " + g, g, "the space is too large");
  // --max-candidates lowers (or raises) the config's limit.
  const std::string s = source_path("configs/sweeps/rule1_a_softmax_16x16384.json");
  expect_refused("sweep " + s + " --max-candidates 2", s, "the limit is 2");
}

// Every command writing files refuses an output that is one of its inputs, and leaves it intact.
TEST(Hostile, AnOutputThatIsAnInputIsRefused) {
  const std::string run =
      write_temp("in_run.json", read_file(source_path("configs/examples/add_pypto.json")));
  const std::string sweep = write_temp(
      "in_sweep.json", read_file(source_path("configs/sweeps/rule1_a_softmax_16x16384.json")));
  const std::string graph =
      write_temp("in_graph.json", read_file(source_path("configs/pypto/example_graph.json")));
  const std::string trace =
      write_temp("in_trace.json", read_file(source_path("configs/pypto/example_swimlane.json")));
  const std::string meas = source_path("configs/measurements/a2_calibration.json");
  const std::string data = source_path("configs/validation/a2_matmul_6144.json");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"run " + run + " --json " + run, run},
      {"run " + run + " --trace " + run, run},
      {"run " + run + " --export-graph " + run, run},
      {"sweep " + sweep + " --csv " + sweep, sweep},
      {"replay " + graph + " --trace " + graph, graph},
      {"replay " + graph + " --json " + graph, graph},
      {"analyze " + trace + " --json " + trace, trace},
      {"analyze " + trace + " --graph " + graph + " --json " + graph, graph},
      {"calibrate " + meas + " -o " + meas, meas},
      {"validate " + data + " --csv " + data, data},
  };
  expect_each_refused_intact(cases, "is the command's own input file");
}

// ../shared/hostile-t3 out_svg_over_program, out_json_over_base_hardware,
// out_calibrate_json_over_config_file, out_calibrate_o_over_config_file,
// out_validate_csv_over_point_config, csv_output_over_mapped_config: the protected file reached
// through another input (a sweep's program, a hardware file's base, a measurement's or a validation
// point's config_file, a mapping's run config) was replaced with exit 0.
TEST(Hostile, AnOutputOverAnInputReachedIndirectlyIsRefused) {
  const std::string k =
      write_temp("ind_k.json", R"({"op": "add", "shape": [64, 64], "tile": [8, 64],
                                    "partition": {"style": "spmd", "grid": 8}})");
  const std::string p = write_temp("ind_p.json", R"({"program": "t",
    "inputs": [{"name": "x", "shape": [4, 64], "dtype": "fp32"}], "outputs": ["y"],
    "body": [{"set_vec_tile_shapes": [1, 64]}, {"op": "exp", "inputs": ["x"], "out": "y"}]})");
  const std::string sweep = write_temp(
      "ind_s.json", R"({"program": "ind_p.json", "candidates": {"tiles": [[1, 64], [2, 64]]}})");
  const std::string hb = write_temp("ind_hb.json", R"({"name": "hb", "base": "ascend910b1"})");
  write_temp("ind_h.json", R"({"name": "h", "base": "ind_hb.json"})");
  const std::string c = write_temp(
      "ind_c.json",
      R"({"op": "add", "shape": [4096, 4096], "tile": [8, 1024], "hardware": "ind_h.json"})");
  const std::string m = write_temp("ind_m.json", R"({"hardware": "ascend910b1",
    "free": ["vector.issue_cycles"], "measurements": [{"id": "a", "config_file": "ind_k.json",
    "metric": "kernel_time_us", "measured": 10.0}]})");
  const std::string d = write_temp("ind_d.json", R"({"hardware": "ascend910b1", "sweeps": [
    {"name": "a", "points": [{"x": 1, "measured": 1.0, "mapping": "m", "config_file": "ind_k.json"},
                             {"x": 2, "measured": 2.0, "mapping": "m", "config_file": "ind_k.json"}]}]})");
  const std::string csv = write_temp("ind_p.csv", "Op Name,Task Duration(us)\nrelu_kernel,1.5\n");
  const std::string relu = write_temp("ind_relu.json", R"({"op": "relu", "shape": [12, 8192],
    "dtype": "fp16", "tile": [1, 8192], "partition": {"style": "ascendc", "cores": 20},
    "hardware": "ascend910b4"})");
  const std::string map = write_temp("ind_map.json", R"({"hardware": "ascend910b4", "kernels": [
    {"id": "relu_b1", "match": {"Op Name": "relu_kernel"}, "mapping": "m",
     "config_file": "ind_relu.json", "sweep": "relu", "x": 1}]})");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"sweep " + sweep + " -q --svg " + p, p},
      {"run " + c + " --json " + hb, hb},
      {"calibrate " + m + " -j 1 --json " + k, k},
      {"calibrate " + m + " -j 1 -o " + k, k},
      {"validate " + d + " -q --csv " + k, k},
      {"measurements from-msprof " + csv + " --map " + map + " -q -o " + relu, relu},
  };
  expect_each_refused_intact(cases, "is one of the command's input files (read as ");
}

// Whether process `pid` has a handler installed for `sig` (the SigCgt mask in /proc/PID/status).
bool catches(pid_t pid, int sig) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("SigCgt:", 0) == 0)
      return (std::stoull(line.substr(7), nullptr, 16) >> (sig - 1)) & 1;
  return false;
}

// SIGINT and SIGTERM stop a sweep between candidates: exit 128 + signal, one line, the old output
// kept. The sweep (every aligned tile of a 4096 x 4096 add, on one thread) runs for seconds, so
// the signal comes while it runs.
TEST(Hostile, SignalsStopASweepAndKeepTheOldOutput) {
  const std::string cfg = write_temp("long_sweep.json", R"({"op": "add", "shape": [4096, 4096],
    "dtype": "fp32", "candidates": {"generate_tiles": {"max": [64, 4096]}}})");
  const std::string out = write_temp("old.csv", "old\n");
  for (const int sig : {SIGINT, SIGTERM}) {
    const std::string err = temp_dir() + "/sweep_err.txt";
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      if (!std::freopen(err.c_str(), "w", stderr) || !std::freopen("/dev/null", "w", stdout))
        _exit(99);
      execl(TILESIM_BINARY, TILESIM_BINARY, "sweep", cfg.c_str(), "-q", "-j", "1", "--csv",
            out.c_str(), static_cast<char*>(nullptr));
      _exit(98);
    }
    // Signal once the sweep catches it (its handlers are installed: the bit in /proc's SigCgt),
    // not after a fixed delay: a loaded machine (or a sanitizer build) can take longer to start.
    for (int i = 0; i < 6000 && !catches(pid, sig); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    kill(pid, sig);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 128 + sig);
    const std::string text = read_file(err);
    EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 1) << text;
    EXPECT_NE(text.find(sig == SIGINT ? "stopped by SIGINT" : "stopped by SIGTERM"),
              std::string::npos)
        << text;
    EXPECT_EQ(read_file(out), "old\n");
  }
}

// ../shared/hostile-t3 out_through_symlink and out_dev_stdout_redirected: an output named by a
// symlink replaced the link (the target kept its old text), and `--json /dev/stdout > out.txt`
// replaced /dev/stdout with a regular file. A link is written through, and a link into
// /proc/self/fd is the open descriptor.
TEST(Hostile, OutputsGoThroughLinksAndToOpenDescriptors) {
  const std::string cfg =
      write_temp("link_run.json", R"({"op": "add", "shape": [64, 64], "tile": [8, 64]})");
  const std::string target = write_temp("link_target.json", "OLD\n");
  const std::string link = temp_dir() + "/link.json";
  std::filesystem::remove(link);
  std::filesystem::create_symlink("link_target.json", link);
  CmdResult r = run_cli("run " + cfg + " -q --json " + link);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(std::filesystem::is_symlink(link));
  EXPECT_EQ(read_file(target).rfind("{\n", 0), 0u) << read_file(target);
  const std::string out = temp_dir() + "/stdout.txt";
  const bool stdout_is_link = std::filesystem::is_symlink("/dev/stdout");
  r = run_cli("run " + cfg + " --json /dev/stdout > " + out);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(std::filesystem::is_symlink("/dev/stdout"), stdout_is_link);
  const std::string text = read_file(out);
  EXPECT_EQ(text.rfind("{\n", 0), 0u) << text.substr(0, 200);  // the JSON, then the table
  EXPECT_NE(text.find("\n}\n"), std::string::npos);
  EXPECT_NE(text.find("JSON written to /dev/stdout"), std::string::npos);
  r = run_cli("run " + cfg + " -q --json /proc/self/fd/1 > " + out);
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_GT(nlohmann::json::parse(read_file(out))["tasks"].get<int>(), 0);
  const std::string loop = temp_dir() + "/loop_a.json";
  std::filesystem::remove(loop);
  std::filesystem::remove(temp_dir() + "/loop_b.json");
  std::filesystem::create_symlink("loop_b.json", loop);
  std::filesystem::create_symlink("loop_a.json", temp_dir() + "/loop_b.json");
  expect_refused("run " + cfg + " --json " + loop, loop,
                 ": more than 40 symbolic links lead from it (a loop of links?)");
}

// ../shared/hostile-t3 out_partial_update_full_fs: on a full disk the CSV was replaced before the
// JSON failed. A command's outputs are all written first and renamed only when all succeeded. The
// disk fills here by a file-size limit: the CSV fits under it, the JSON does not.
TEST(Hostile, AFailedCommandLeavesEveryOldOutput) {
  const std::string cfg = source_path("configs/sweeps/rule2_matmul_16384_loops.json");
  const std::string csv = write_temp("full.csv", "OLD\n");
  const std::string json = write_temp("full.json", "OLD\n");
  // 64 blocks of 512 B: the sweep's CSV is ~3 KB, its JSON ~200 KB.
  const CmdResult r =
      run_cli("sweep " + cfg + " -q -j 1 --csv " + csv + " --json " + json + "; true", false);
  ASSERT_EQ(r.code, 0);
  const std::string sh = "sh -c \"trap '' XFSZ; ulimit -f 16; exec " + std::string(TILESIM_BINARY) +
                         " sweep " + cfg + " -q -j 1 --csv " + csv + " --json " + json + "\" 2>&1";
  std::filesystem::remove(csv);
  std::filesystem::remove(json);
  std::ofstream(csv) << "OLD\n";
  std::ofstream(json) << "OLD\n";
  FILE* p = popen(sh.c_str(), "r");
  ASSERT_NE(p, nullptr);
  std::string text;
  for (int ch; (ch = fgetc(p)) != EOF;) text += static_cast<char>(ch);
  const int status = pclose(p);
  EXPECT_EQ(WEXITSTATUS(status), 2) << text;
  EXPECT_EQ(text, "tilesim: error: " + json + ": cannot write JSON: File too large\n");
  EXPECT_TRUE(read_file(csv) == "OLD\n");
  EXPECT_TRUE(read_file(json) == "OLD\n");
  for (const auto& e : std::filesystem::directory_iterator(temp_dir()))
    EXPECT_EQ(e.path().string().find(".tilesim-tmp-"), std::string::npos) << e.path();
}

// ../shared/hostile-t3 sig_term_run_mid_write and sig_term_replay_mid_write: SIGTERM while a trace
// was written left a truncated temporary, or one output new and the other old. The signal lands
// here in the middle of the second file (a child process, so the test's own handlers stay).
TEST(Hostile, AStopSignalMidWriteLeavesNoTemporaryAndEveryOldOutput) {
  const std::string a = write_temp("sig_a.json", "OLD\n"), b = write_temp("sig_b.json", "OLD\n");
  const std::string err = temp_dir() + "/sig_err.txt";
  for (const bool after_commit : {false, true}) {
    const pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      if (!std::freopen(err.c_str(), "w", stderr)) _exit(99);
      remove_temporaries_on_stop_signals();
      OutputTransaction outputs;
      write_file_atomically(
          a, [](std::ostream& out) { out << "NEW\n"; }, "a");
      write_file_atomically(
          b,
          [&](std::ostream& out) {
            out << "NE" << std::flush;
            if (!after_commit) raise(SIGTERM);
            out << "W\n";
          },
          "b");
      outputs.commit();
      raise(SIGTERM);
      _exit(97);
    }
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);
    EXPECT_EQ(read_file(err), after_commit
                                  ? "tilesim: stopped by SIGTERM after its outputs were written\n"
                                  : "tilesim: stopped by SIGTERM; no output file written (old "
                                    "outputs kept)\n");
    EXPECT_EQ(read_file(a), after_commit ? "NEW\n" : "OLD\n");
    EXPECT_EQ(read_file(b), after_commit ? "NEW\n" : "OLD\n");
    for (const auto& e : std::filesystem::directory_iterator(temp_dir()))
      EXPECT_EQ(e.path().string().find(".tilesim-tmp-"), std::string::npos) << e.path();
  }
}

// ---- ../shared/hostile-t4 (issue 50): names, verdicts, forged results, memory ----

// names_program_name_raw_escape, names_hardware_name_raw_escape, names_error_line_raw_newline: a
// name from an input (a program's, a hardware file's, an op in an error) reached the terminal raw:
// a newline forged a line, ESC[2J cleared the screen. Printed escaped, errors on one line.
TEST(Hostile, NamesFromInputsNeverReachTheTerminalRaw) {
  const std::string forged = R"(n\n\u001b[2JFORGED)";
  const std::string shown = R"(n\n\x1b[2JFORGED)";
  const std::string p = write_temp("name_p.json", R"({"program": ")" + forged + R"(",
    "inputs": [{"name": "x", "shape": [16, 1024], "dtype": "fp32"}], "outputs": ["y"],
    "body": [{"set_vec_tile_shapes": [1, 1024]}, {"op": "exp", "inputs": ["x"], "out": "y"}]})");
  write_temp("name_h.json", R"({"name": ")" + forged + R"(", "base": "ascend910b1"})");
  const std::string s = write_temp("name_s.json", R"({"op": "add", "shape": [64, 1024],
    "hardware": "name_h.json", "description": ")" + forged +
                                                      R"(",
    "candidates": {"tiles": [[8, 1024], [16, 1024]]}})");
  for (const std::string& args : {"run " + p, "sweep " + s + " -j 1"}) {
    const CmdResult r = run_cli(args);
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << args;
    EXPECT_NE(r.out.find(shown), std::string::npos) << r.out;
  }
  const std::string c = write_temp(
      "name_c.json", R"({"op": ")" + forged + R"(", "shape": [64, 64], "tile": [8, 64]})");
  expect_refused("run " + c, c, "op: unknown op '" + shown + "'");
}

// sweep_all_rejected_exit1_silent: exit 1 with nothing on stderr (with -q, nothing anywhere).
// sweep_objective_zero_for_all: cube_us of an add is 0 for every candidate, and the first listed
// "won" a tie of zeros.
TEST(Hostile, ASweepVerdictIsNeverSilentNorATieOfZeros) {
  const std::string s = write_temp("all_refused.json", R"({"op": "add", "shape": [4096, 4096],
    "candidates": {"tiles": [[4096, 4096]], "constraints": {"prune_over_limits": false}}})");
  CmdResult r = run_cli("sweep " + s + " -q");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "tilesim: " + s +
                       ": every candidate was refused (1 of them: capacity 1); --csv lists each "
                       "reason\n");
  const std::string z = write_temp("zero_objective.json", R"({"op": "add", "shape": [64, 1024],
    "objective": "cube_us", "candidates": {"tiles": [[8, 1024], [16, 1024]]}})");
  expect_refused("sweep " + z + " -j 1", z,
                 ": objective cube_us is 0 for every candidate (2 evaluated): the kernel has no "
                 "cube work to rank by");
}

// crash_loader_abort_on_large_json: a 145 MB trace given as a run config aborted (SIGABRT) under a
// 1 GB limit, or printed a 144 MB error line. Bounded and sniffed before parsing; a message quotes
// no document whole.
TEST(Hostile, ALargeOrWrongDocumentIsRefusedBeforeItIsParsed) {
  const std::string t = write_temp("trace_as_config.json", "[" + std::string(100, ' ') + "]");
  for (const std::string cmd : {"run", "sweep", "validate"})
    expect_refused(cmd + " " + t, t, "is not a ");
  expect_refused("run " + t, t,
                 ": 102 bytes is not a run config (expected a JSON object, got an array)");
  const std::string big = write_temp("big_config.json", "{}");
  std::filesystem::resize_file(big, (uint64_t{64} << 20) + 1);  // sparse
  expect_refused("run " + big, big,
                 ": 67 MB (67108865 bytes) is more than a run config holds (at most 64 MiB)");
  std::filesystem::remove(big);
  std::string items;
  for (int i = 0; i < 1000; ++i) items += std::to_string(i) + ", ";
  const std::string wide =
      write_temp("wide.json", R"({"op": "add", "shape": [)" + items + R"(1], "tile": [8]})");
  const CmdResult r = run_cli("run " + wide);
  EXPECT_EQ(r.code, 2);
  EXPECT_LT(r.out.size(), 400u) << r.out;
}

// mem_bad_alloc_internal_error: a valid program of 2^21 tile tasks under a memory limit ended in
// "internal error: std::bad_alloc" (exit 3, which means a bug). Running out is exit 2, one line.
TEST(Hostile, RunningOutOfMemoryIsAnInputErrorNotABug) {
#ifdef __SANITIZE_ADDRESS__
  GTEST_SKIP() << "an address-space limit does not apply under ASan's shadow memory";
#endif
  const std::string p = write_temp("oom.json", R"({"program": "t",
    "inputs": [{"name": "x", "shape": [1, 16777216], "dtype": "fp32"}], "outputs": ["y"],
    "body": [{"set_vec_tile_shapes": [1, 8]},
             {"op": "sum", "inputs": ["x"], "out": "y", "dim": -1, "keepdim": true, "merge": "tree"}]})");
  const CmdResult capped =
      test::run_command("prlimit --as=402653184 " + std::string(TILESIM_BINARY) + " run " + p);
  EXPECT_EQ(capped.code, 2) << capped.out;
  EXPECT_EQ(capped.out.rfind("tilesim: error: out of memory: ", 0), 0u) << capped.out;
  EXPECT_EQ(std::count(capped.out.begin(), capped.out.end(), '\n'), 1) << capped.out;
}

}  // namespace
}  // namespace tilesim
