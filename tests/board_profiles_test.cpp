// Board profiles in: the RFC 4180 CSV reader, msprof's op_summary, the mapping file, the
// conversion to measurements (calibrate) and validation datasets (validate), swimlanes to
// measurements, and `analyze --compare`. Figures are hand-counted from the shipped samples in
// configs/measurements/board/.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "model/error.hpp"
#include "tools/calibration/board_compare.hpp"
#include "tools/calibration/board_measurements.hpp"
#include "tools/calibration/measurements.hpp"
#include "tools/calibration/msprof_map.hpp"
#include "tools/calibration/validation_dataset.hpp"
#include "tools/formats/csv_reader.hpp"
#include "tools/formats/msprof_op_summary.hpp"
#include "tools/formats/run_config.hpp"
#include "tools/reports/board_compare_report.hpp"

#include "test_support.hpp"

namespace tilesim {
namespace {

using test::CmdResult;
using test::error_of;
using test::run_cli;
using test::source_path;

const std::string kBoard = "configs/measurements/board/";

std::filesystem::path temp_dir() {
  const auto dir = std::filesystem::temp_directory_path() / "tilesim_board_profiles_test";
  std::filesystem::create_directories(dir);
  return dir;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = temp_dir() / name;
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

std::string read_text(const std::string& path) {
  std::string s;
  std::getline(std::ifstream(path), s, '\0');
  return s;
}

// ---------------------------------------------------------------------------------------------
// CSV reader

TEST(CsvReader, QuotedFieldsCrlfBomAndEmptyLines) {
  const CsvTable t = parse_csv(
      "\xEF\xBB\xBF"
      "a,b,c\r\n"
      "1,\"x, y\",\"say \"\"hi\"\"\"\r\n"
      "\n"
      "2,\"two\nlines\",\r\n"
      "3,,last",
      "t.csv");
  ASSERT_EQ(t.header, (std::vector<std::string>{"a", "b", "c"}));
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.rows[0].fields, (std::vector<std::string>{"1", "x, y", "say \"hi\""}));
  EXPECT_EQ(t.rows[0].line, 2);
  EXPECT_EQ(t.rows[1].fields, (std::vector<std::string>{"2", "two\nlines", ""}));
  EXPECT_EQ(t.rows[1].line, 4);  // line 3 is empty
  EXPECT_EQ(t.rows[2].fields, (std::vector<std::string>{"3", "", "last"}));
  EXPECT_EQ(t.rows[2].line, 6);  // the quoted line break counts
  EXPECT_EQ(t.column("c"), 2);
  EXPECT_EQ(t.column("d"), -1);
}

// ../shared/hostile-t3 csv_cr_line_ends and csv_utf16: CR-only line ends made the header and the
// rows one line ("no column ... in the header"); a UTF-16 file failed on "line 3" with its header
// shown as NUL-interleaved bytes. A lone CR ends a line; UTF-16 is named as such.
TEST(CsvReader, LoneCrLineEndsAreReadAndUtf16IsNamed) {
  const CsvTable t = parse_csv("a,b\r1,\"x\ry\"\r\r2,3\r", "t.csv");
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.rows[0].fields, (std::vector<std::string>{"1", "x\ry"}));
  EXPECT_EQ(t.rows[1].fields, (std::vector<std::string>{"2", "3"}));
  EXPECT_EQ(t.rows[1].line, 5);  // the quoted CR and the empty line count
  for (const std::string bom : {"\xFF\xFE", "\xFE\xFF"})
    EXPECT_EQ(error_of([&] { parse_csv(bom + std::string("a\0,\0b\0", 7), "u.csv"); }),
              "u.csv: the file is UTF-16 (it starts with a UTF-16 byte-order mark); msprof writes "
              "UTF-8 (convert it: iconv -f UTF-16 -t UTF-8)");
  EXPECT_EQ(error_of([&] { parse_csv(std::string("a\0,\0b\0\n", 7), "u.csv"); }),
            "u.csv: line 1: a NUL byte in the header: the file is UTF-16 or binary, not the UTF-8 "
            "text msprof writes");
}

TEST(CsvReader, MalformedInputIsOneLineNamingFileLineAndColumn) {
  const auto err = [](const std::string& text, CsvLimits limits = {}) {
    return error_of([&] { parse_csv(text, "p.csv", limits); });
  };
  EXPECT_EQ(err(""), "p.csv: empty file (a CSV file starts with its header line)");
  EXPECT_EQ(err("\n\n"), "p.csv: empty file (a CSV file starts with its header line)");
  EXPECT_EQ(err("a,b,c\n1,2\n"),
            "p.csv: line 2, column 3 (c): the record has 2 fields, the header 3");
  EXPECT_EQ(err("a,b\n1,2,3\n"), "p.csv: line 2, column 3: the record has 3 fields, the header 2");
  EXPECT_EQ(err("a,b\n1,\"open\n2,3\n"),
            "p.csv: line 2, column 2 (b): a quoted field is never closed (no closing '\"')");
  EXPECT_EQ(err("a,b\n1,\"x\"y\n"),
            "p.csv: line 2, column 2 (b): text after the closing quote of a quoted field (a "
            "quote inside a field is written \"\")");
  EXPECT_EQ(err("a,b\n1,x\"y\n"),
            "p.csv: line 2, column 2 (b): a quote inside an unquoted field (quote the whole field "
            "and write the quote \"\")");
  EXPECT_EQ(err("a,a\n"), "p.csv: line 1, column 2 (a): 'a' appears twice in the header");
  // Text from the file is shown on one line: control characters escaped.
  EXPECT_EQ(err("\"a\nb\",c\n1,x\"\n"),
            "p.csv: line 3, column 2 (c): a quote inside an unquoted field (quote the whole field "
            "and write the quote \"\")");
  EXPECT_EQ(err("\"a\nb\",c\n\"x\"y,1\n"),
            "p.csv: line 3, column 1 (a\\nb): text after the closing quote of a quoted field (a "
            "quote inside a field is written \"\")");
  CsvLimits small;
  small.max_field_bytes = 4;
  small.max_rows = 2;
  small.max_columns = 3;
  EXPECT_EQ(err("a,b\n1,12345\n", small),
            "p.csv: line 2, column 2 (b): a field over 4 bytes (the limit)");
  EXPECT_EQ(err("a\n1\n2\n3\n", small),
            "p.csv: line 4: more than 2 records (the limit for one file)");
  EXPECT_EQ(err("a,b,c,d\n", small),
            "p.csv: line 1, column 4: more than 3 fields in a record (the limit)");
}

// Every text over the characters that matter (separators, quotes, line ends) either parses into
// records of the header's width or is one Error: never a crash or a half-read table (the
// sanitizer build runs this too).
TEST(CsvReader, AnyTextParsesOrIsOneError) {
  const std::string alphabet = "a,\"\n\r ";
  uint64_t state = 12345;
  int parsed = 0, refused = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text;
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const size_t n = (state >> 33) % 24;
    for (size_t k = 0; k < n; ++k) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      text += alphabet[(state >> 33) % alphabet.size()];
    }
    try {
      const CsvTable t = parse_csv(text, "f.csv");
      for (const auto& r : t.rows) ASSERT_EQ(r.fields.size(), t.header.size()) << text;
      ++parsed;
    } catch (const Error& e) {
      ASSERT_EQ(std::string(e.what()).find('\n'), std::string::npos) << e.what();
      ++refused;
    }
  }
  EXPECT_GT(parsed, 100);
  EXPECT_GT(refused, 100);
}

TEST(CsvReader, FilesThatAreNotRegularOrTooLargeAreRefusedBeforeReading) {
  EXPECT_EQ(error_of([] { load_csv(temp_dir()); }),
            temp_dir().string() + ": not a regular file (a CSV file is expected)");
  EXPECT_EQ(error_of([] { load_csv(temp_dir() / "missing.csv"); }),
            (temp_dir() / "missing.csv").string() + ": no such file");
  const std::string big = write_temp("big.csv", "a\n" + std::string(98, '1') + "\n");
  CsvLimits limits;
  limits.max_bytes = 100;
  EXPECT_EQ(error_of([&] { load_csv(big, limits); }),
            big + ": 101 bytes, over the 100 bytes a CSV file may have (the limit)");
}

// ---------------------------------------------------------------------------------------------
// msprof op_summary

TEST(MsprofOpSummary, ReadsTheSampleTimesRatiosAndTabs) {
  const MsprofFile f = load_msprof_op_summary(source_path(kBoard + "relu_op_summary.csv"));
  ASSERT_EQ(f.rows.size(), 13u);
  const MsprofRow& warm = f.rows[0];
  EXPECT_EQ(warm.line, 2);
  EXPECT_EQ(f.text(warm, "Op Name"), "relu_kernel");
  EXPECT_EQ(f.text(warm, "Task Start Time(us)"), "1784177144514943.500");  // tab trimmed
  EXPECT_EQ(f.text(warm, "Input Shapes"), "1,12,256,32");                  // quoted
  EXPECT_DOUBLE_EQ(warm.duration_us, 9.68);
  EXPECT_DOUBLE_EQ(warm.block_dim, 20);   // "Block Num" (CANN 8.5+)
  EXPECT_DOUBLE_EQ(warm.mte2_us, 2.445);  // aiv_mte2_time(us)
  // Batch 2 rows leave the times 0 with ratios: ratio x aiv_time(us).
  const MsprofRow& b2 = f.rows[8];
  EXPECT_EQ(b2.line, 10);
  EXPECT_DOUBLE_EQ(b2.vec_us, 0.29 * 0.95);
  EXPECT_DOUBLE_EQ(b2.mte3_us, 0.17 * 0.95);
  EXPECT_EQ(b2.cube_us, 0);  // the AIC figures are 0.0: idle
  // The AI_CPU MemSet row has N/A PMU figures: none.
  const MsprofRow& memset = f.rows[7];
  EXPECT_EQ(f.text(memset, "Op Name"), "MemSet");
  EXPECT_TRUE(std::isnan(memset.vec_us));
  EXPECT_EQ(memset.block_dim, 1);
}

TEST(MsprofOpSummary, BadColumnsAndFiguresNameTheLineAndColumn) {
  const std::string head = "Op Name,Task Type,Task Duration(us),aiv_vec_time(us)\n";
  const auto err = [](const std::string& text) {
    return error_of([&] { msprof_from_csv(parse_csv(text, "o.csv")); });
  };
  EXPECT_EQ(err("Op Name,Task Type\nk,AI_CORE\n"),
            "o.csv: line 1: no column 'Task Duration(us)' in the header (an msprof "
            "op_summary CSV has 'Op Name' and 'Task Duration(us)')");
  EXPECT_EQ(err(head + "k,AI_CORE,abc,1\n"),
            "o.csv: line 2, column 3 (Task Duration(us)): expected a number, got 'abc'");
  EXPECT_EQ(err(head + "k,AI_CORE,N/A,1\n"),
            "o.csv: line 2, column 3 (Task Duration(us)): expected a number of microseconds, got "
            "'N/A'");
  EXPECT_EQ(err(head + "k,AI_CORE,0,1\n"),
            "o.csv: line 2, column 3 (Task Duration(us)): expected a duration > 0 us, got 0");
  EXPECT_EQ(err(head + "k,AI_CORE,2,-1\n"),
            "o.csv: line 2, column 4 (aiv_vec_time(us)): expected a number >= 0, got '-1'");
  EXPECT_EQ(err(head + "k,AI_CORE,2,1e999\n"),
            "o.csv: line 2, column 4 (aiv_vec_time(us)): expected a number, got '1e999'");
  EXPECT_EQ(err(head + ",AI_CORE,2,1\n"),
            "o.csv: line 2, column 1 (Op Name): the op name is empty");
  // ../shared/hostile-t3 csv_duration_1e308: 1e308 was imported, and the median of two of them
  // written as null. A figure is bounded as the measurements file it goes to bounds it.
  EXPECT_EQ(err(head + "k,AI_CORE,1e308,1\n"),
            "o.csv: line 2, column 3 (Task Duration(us)): 1e308 is out of range (at most 1e+15, "
            "what a measurement holds)");
}

// ---------------------------------------------------------------------------------------------
// Mapping and conversion

BoardMeasurements sample_measurements() {
  const MsprofMap map = load_msprof_map(source_path(kBoard + "relu_msprof_map.json"));
  return measurements_from_msprof(
      {load_msprof_op_summary(source_path(kBoard + "relu_op_summary.csv"))}, map);
}

const BoardFigure* figure(const BoardKernel& k, const std::string& metric) {
  for (const auto& f : k.figures)
    if (f.metric == metric) return &f;
  return nullptr;
}

TEST(MsprofMeasurements, MediansPerKernelAndUnmappedRowsListed) {
  const BoardMeasurements m = sample_measurements();
  EXPECT_EQ(m.rows, 13);
  ASSERT_EQ(m.kernels.size(), 2u);
  const BoardKernel& b1 = m.kernels[0];
  EXPECT_EQ(b1.id, "relu_b1");
  // Six launches after the warm-up: 1.94 1.92 1.96 1.94 1.98 1.90 -> median (1.94 + 1.94) / 2.
  const BoardFigure* d1 = figure(b1, "task_duration_us");
  ASSERT_TRUE(d1);
  EXPECT_DOUBLE_EQ(d1->value, 1.94);
  EXPECT_EQ(d1->samples, 6);
  EXPECT_DOUBLE_EQ(d1->min, 1.9);
  EXPECT_DOUBLE_EQ(d1->max, 1.98);
  // aiv_vec_time(us) 0.151 0.149 0.153 0.151 0.155 0.148 -> 0.151.
  EXPECT_DOUBLE_EQ(figure(b1, "vec_time_us")->value, 0.151);
  EXPECT_EQ(figure(b1, "cube_time_us"), nullptr);
  EXPECT_EQ(b1.left_out,
            (std::vector<std::string>{
                "cube_time_us: measured 0 (calibrate and validate compare positive times)"}));
  EXPECT_EQ(b1.source,
            "msprof op_summary " + source_path(kBoard + "relu_op_summary.csv") +
                " lines 3-8 (6 rows): 6 launches of Op Name 'relu_kernel' after 1 warm-up, median");
  // Batch 2: 2.16 2.14 2.18 2.16 2.20 -> 2.16; vec = 0.29 x aiv_time (0.95 0.94 0.96 0.95 0.97).
  const BoardKernel& b2 = m.kernels[1];
  EXPECT_DOUBLE_EQ(figure(b2, "task_duration_us")->value, 2.16);
  EXPECT_DOUBLE_EQ(figure(b2, "vec_time_us")->value, 0.2755);
  ASSERT_EQ(m.unmapped.size(), 1u);
  EXPECT_EQ(m.unmapped[0].op_name, "MemSet");
  EXPECT_EQ(m.unmapped[0].task_type, "AI_CPU");
  EXPECT_EQ(m.unmapped[0].first_line, 9);
  EXPECT_EQ(m.unmapped[0].rows, 1);
}

// Issue 50: a kernel id from the mapping file (and a file name) reached the terminal raw: a
// newline in an id forged a line of the summary.
TEST(MsprofMeasurements, TheSummaryEscapesNamesFromItsInputs) {
  BoardMeasurements m = sample_measurements();
  m.kernels[0].id = "relu\nFORGED\x1b[2J";
  m.unmapped[0].file = "a\rb.csv";
  const std::string s = board_measurements_summary(m);
  EXPECT_NE(s.find("relu\\nFORGED\\x1b[2J: msprof"), std::string::npos) << s;
  EXPECT_NE(s.find("a\\rb.csv: 1 row"), std::string::npos) << s;
  EXPECT_EQ(s.find('\x1b'), std::string::npos);
  EXPECT_EQ(s.find('\r'), std::string::npos);
}

TEST(MsprofMeasurements, MappingMistakesAreErrorsNeverGuesses) {
  const std::string csv = source_path(kBoard + "relu_op_summary.csv");
  const MsprofFile f = load_msprof_op_summary(csv);
  const std::string cfg = source_path(kBoard + "relu_910b4_b1.json");
  const auto map_of = [&](const std::string& kernels) {
    const std::string path =
        write_temp("map.json", R"({"hardware": "ascend910b4", "kernels": )" + kernels + "}");
    std::ofstream(temp_dir() / "b1.json") << read_text(cfg);
    return load_msprof_map(path);
  };
  const auto err = [&](const std::string& kernels) {
    return error_of([&] { measurements_from_msprof({f}, map_of(kernels)); });
  };
  const std::string map = (temp_dir() / "map.json").string();
  // Matches no row.
  EXPECT_EQ(err(R"([{"id": "k", "match": {"Op Name": "gelu"}, "mapping": "m",
                    "config_file": "b1.json"}])"),
            map + ": kernels[0] (k): match: matches no row of " + csv);
  // Both kernels match line 2.
  EXPECT_EQ(err(R"([{"id": "a", "match": {"Op Name": "relu_kernel"}, "mapping": "m",
                    "config_file": "b1.json"},
                   {"id": "b", "match": {"Op Name": "relu_kernel", "Stream ID": "46"},
                    "mapping": "m", "config_file": "b1.json"}])"),
            csv + ": line 2: matched by two kernels of the mapping: " + map +
                ": kernels[0] (a) and " + map + ": kernels[1] (b)");
  // A column the CSV lacks.
  EXPECT_EQ(err(R"([{"id": "k", "match": {"Op Name": "relu_kernel", "Stream": "46"},
                    "mapping": "m", "config_file": "b1.json"}])"),
            map + ": kernels[0] (k): match: no column 'Stream' in " + csv +
                " (its header names the columns)");
  // The batch-2 rows are not the batch-1 config: 196608 elements, not 98304.
  EXPECT_EQ(err(R"([{"id": "k", "match": {"Op Name": "relu_kernel"}, "mapping": "m",
                    "config_file": "b1.json"}])"),
            csv +
                ": line 10, column 15 (Input Shapes): the first input [2,12,256,32] has 196608 "
                "elements, the mapped run config's first tensor 98304 (" +
                map + ": kernels[0] (k))");
  // fp32 config, fp16 rows.
  EXPECT_EQ(err(R"([{"id": "k", "match": {"Op Name": "relu_kernel", "Input Shapes": "1,12,256,32"},
                    "mapping": "m", "config": {"op": "relu", "shape": [12, 8192],
                    "tile": [1, 8192]}}])"),
            csv +
                ": line 2, column 16 (Input Data Types): 'DT_FLOAT16' is fp16, the mapped run "
                "config's dtype is fp32 (" +
                map + ": kernels[0] (k))");
  EXPECT_EQ(err(R"([{"id": "k", "match": {"Op Name": "relu_kernel", "Input Shapes": "1,12,256,32"},
                    "skip_first": 7, "mapping": "m", "config_file": "b1.json"}])"),
            map + ": kernels[0] (k): skip_first: 7 leaves no launch of the 7 matched");
  // The mapping file's own checks.
  EXPECT_EQ(error_of([&] {
              map_of(R"([{"id": "k", "match": {"OP Type": "Relu"}, "mapping": "m",
                          "config_file": "b1.json"}])");
            }),
            map +
                ": kernels[0] (k).match.Op Name: missing (every kernel is matched by its op name "
                "at least)");
  EXPECT_EQ(error_of([&] {
              map_of(R"([{"id": "k", "match": {"Op Name": "r"}, "mapping": "m",
                          "config_file": "b1.json", "tile": 1}])");
            }).find(map + ": kernels[0] (k).tile: unknown key (allowed: id, match, csv"),
            0u);
}

TEST(MsprofMeasurements, WritesFilesCalibrateAndValidateRead) {
  BoardMeasurements m = sample_measurements();
  const auto out = temp_dir() / "sub" / "m.json";
  std::filesystem::create_directories(out.parent_path());
  const nlohmann::json j = measurements_file_json(m, out);
  EXPECT_EQ(j["hardware"], "ascend910b4");
  EXPECT_EQ(j["measurements"].size(), 8u);  // 2 kernels x (task, vec, mte2, mte3)
  const MeasurementSet set = measurements_from_json(j, out);
  EXPECT_EQ(set.runs.size(), 2u);
  EXPECT_EQ(set.measurements[0].id, "relu_b1.task_duration_us");
  EXPECT_DOUBLE_EQ(set.measurements[0].measured, 1.94);
  select_metrics(m, {"task_duration_us"});
  const nlohmann::json v = validation_dataset_json(m, out);
  const ValidationDataset ds = validation_dataset_from_json(v, out);
  ASSERT_EQ(ds.sweeps.size(), 1u);
  EXPECT_EQ(ds.sweeps[0].name, "relu");
  ASSERT_EQ(ds.sweeps[0].points.size(), 2u);
  EXPECT_EQ(ds.sweeps[0].points[1].x, 2);
  EXPECT_DOUBLE_EQ(ds.sweeps[0].points[1].measured, 2.16);
  EXPECT_EQ(
      error_of([&] { select_metrics(m, {"cycles"}); }).find("--metric cycles: unknown metric"), 0u);
  select_metrics(m, {"gen_time_us"});
  EXPECT_EQ(error_of([&] { measurements_file_json(m, out); }),
            "no measurement: no kernel has a figure for the metrics asked for");
}

// ---------------------------------------------------------------------------------------------
// The CLI: round trips and one-line errors

TEST(BoardProfilesCli, FromMsprofRoundTripsThroughCalibrateAndValidate) {
  const std::string out = (temp_dir() / "relu_measurements.json").string();
  CmdResult r = run_cli("measurements from-msprof " + source_path(kBoard + "relu_op_summary.csv") +
                        " --map " + source_path(kBoard + "relu_msprof_map.json") + " -o " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("1 of 13 rows match no kernel of the mapping"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("tilesim: warning: 1 row(s) match no kernel"), std::string::npos) << r.out;
  r = run_cli("calibrate " + out + " --free kernel.vector_launch_us -j 1");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("relu_b2.mte3_time_us"), std::string::npos) << r.out;
  const std::string ds = (temp_dir() / "relu_dataset.json").string();
  r = run_cli("measurements from-msprof " + source_path(kBoard + "relu_op_summary.csv") +
              " --map " + source_path(kBoard + "relu_msprof_map.json") +
              " --as validate --metric task_duration_us -o " + ds);
  ASSERT_EQ(r.code, 0) << r.out;
  r = run_cli("validate " + ds + " -j 1");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("relu "), std::string::npos) << r.out;
  // The output never replaces an input.
  const std::string csv_copy =
      write_temp("csv_copy.csv", read_text(source_path(kBoard + "relu_op_summary.csv")));
  r = run_cli("measurements from-msprof " + csv_copy + " --map " +
              source_path(kBoard + "relu_msprof_map.json") + " -o " + csv_copy);
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("-o " + csv_copy + ": is the command's own input file"), std::string::npos)
      << r.out;
}

// A simulated run's own trace read back as a board swimlane: every figure is the model's, so
// calibrate's errors and analyze --compare's differences are 0 up to the trace's timestamps,
// written to 0.1 ns (under 0.01% on these ~1 us figures).
TEST(BoardProfilesCli, SwimlaneOfASimulatedRunMeasuresExactlyTheModel) {
  const std::string cfg = source_path(kBoard + "add_pypto_16x4096.json");
  const std::string trace = (temp_dir() / "add_trace.json").string();
  CmdResult r = run_cli("run " + cfg + " --trace " + trace);
  ASSERT_EQ(r.code, 0) << r.out;
  const std::string out = (temp_dir() / "add_swimlane_measurements.json").string();
  r = run_cli("measurements from-swimlane " + trace + " --config " + cfg + " -o " + out);
  ASSERT_EQ(r.code, 0) << r.out;
  const MeasurementSet set = load_measurements(out);
  ASSERT_EQ(set.measurements.size(), 5u);  // no graph: no wait_schedule_time_us
  // A pypto kernel has no launch term: the fit is degenerate, its rows are what is checked.
  r = run_cli("calibrate " + out +
              " --free kernel.vector_launch_us -j 1 --json --allow-degenerate");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["rows"].size(), 5u);
  for (const auto& row : j["rows"])
    EXPECT_NEAR(row["error_before_pct"].get<double>(), 0, 0.01) << row.dump();
  r = run_cli("analyze " + trace + " --compare " + cfg + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  const auto c = nlohmann::json::parse(r.out);
  int compared = 0;
  for (const auto& row : c["rows"])
    if (!row["diff_pct"].is_null()) {
      EXPECT_NEAR(row["diff_pct"].get<double>(), 0, 0.01) << row.dump();
      ++compared;
    }
  EXPECT_EQ(compared, 7);  // end to end, cores, busy mean/max, tasks mean/max, wait
}

TEST(BoardProfilesCli, CompareWithTheSampleSwimlaneAndOpSummary) {
  // The sample swimlane: 8 tasks, starts 100.00 .. 100.95, durations summing to 9.06 us, the last
  // ending at 100.95 + 1.18: gen_time 2.13 us, busy 1.1325 us per core, one task each.
  CmdResult r = run_cli("analyze " + source_path(kBoard + "add_pypto_16x4096_swimlane.json") +
                        " --compare " + source_path(kBoard + "add_pypto_16x4096.json") + " --json");
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  std::map<std::string, nlohmann::json> rows;
  for (const auto& row : j["rows"]) rows[row["metric"]] = row;
  EXPECT_NEAR(rows["end_to_end_us"]["board"].get<double>(), 2.13, 1e-9);
  EXPECT_NEAR(rows["busy_us_mean"]["board"].get<double>(), 1.1325, 1e-9);
  EXPECT_NEAR(rows["busy_us_max"]["board"].get<double>(), 1.21, 1e-9);
  EXPECT_EQ(rows["tasks_per_core_max"]["board"], 1.0);
  EXPECT_TRUE(rows["vec_us"]["board"].is_null());
  const double sim = rows["end_to_end_us"]["simulated"].get<double>();
  EXPECT_NEAR(rows["end_to_end_us"]["diff_pct"].get<double>(), (sim - 2.13) / 2.13 * 100, 1e-9);
  // The op_summary: the batch-1 launches after the warm-up; pipes per core, no lanes.
  r = run_cli("analyze " + source_path(kBoard + "relu_op_summary.csv") + " --compare " +
              source_path(kBoard + "relu_910b4_b1.json") +
              " --match 'Input Shapes=1,12,256,32' --skip-first 1 --json");
  ASSERT_EQ(r.code, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  rows.clear();
  for (const auto& row : j["rows"]) rows[row["metric"]] = row;
  EXPECT_DOUBLE_EQ(rows["end_to_end_us"]["board"].get<double>(), 1.94);
  EXPECT_DOUBLE_EQ(rows["cores"]["board"].get<double>(), 20);
  EXPECT_DOUBLE_EQ(rows["vec_us"]["board"].get<double>(), 0.151);
  EXPECT_TRUE(rows["busy_us_mean"]["board"].is_null());
  r = run_cli("analyze " + source_path(kBoard + "relu_op_summary.csv") + " --compare " +
              source_path(kBoard + "relu_910b4_b1.json"));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.out.find("relu_op_summary.csv: 2 kernels (Op Name: relu_kernel, MemSet); name the "
                       "one to compare with --op-name"),
            std::string::npos)
      << r.out;
}

TEST(BoardProfilesCli, MalformedCsvIsOneLineExit2) {
  const std::string map = source_path(kBoard + "relu_msprof_map.json");
  const auto expect_error = [&](const std::string& csv, const std::string& message) {
    const CmdResult r = run_cli("measurements from-msprof " + csv + " --map " + map + " -o " +
                                (temp_dir() / "never.json").string());
    EXPECT_EQ(r.code, 2) << r.out;
    EXPECT_EQ(r.out, "tilesim: error: " + message + "\n");
  };
  const std::string head = "Op Name,Task Duration(us)\n";
  std::string f = write_temp("missing_col.csv", "Op Name,Task Type\nrelu_kernel,AI_CORE\n");
  expect_error(f, f + ": line 1: no column 'Task Duration(us)' in the header (an msprof "
                      "op_summary CSV has 'Op Name' and 'Task Duration(us)')");
  f = write_temp("nan.csv", head + "relu_kernel,1.5\nrelu_kernel,fast\n");
  expect_error(f, f + ": line 3, column 2 (Task Duration(us)): expected a number, got 'fast'");
  f = write_temp("ragged.csv", head + "relu_kernel,1.5,7\n");
  expect_error(f, f + ": line 2, column 3: the record has 3 fields, the header 2");
  f = write_temp("quote.csv", head + "\"relu_kernel,1.5\n");
  expect_error(f, f + ": line 2, column 1 (Op Name): a quoted field is never closed (no closing "
                      "'\"')");
  f = write_temp("empty.csv", "");
  expect_error(f, f + ": empty file (a CSV file starts with its header line)");
  expect_error(temp_dir().string(),
               temp_dir().string() + ": not a regular file (a CSV file is expected)");
  // Over 512 MiB: refused from its size, before a byte is read (a sparse file costs nothing).
  f = (temp_dir() / "huge.csv").string();
  std::ofstream(f).close();
  std::filesystem::resize_file(f, (uintmax_t{512} << 20) + 1);
  expect_error(f, f + ": 536870913 bytes, over the 536870912 bytes a CSV file may have (the "
                      "limit)");
  std::filesystem::remove(f);
}

}  // namespace
}  // namespace tilesim
