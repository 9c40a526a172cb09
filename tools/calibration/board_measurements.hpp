#pragma once
// Board profiles turned into measurements: msprof op_summary rows (through a mapping file that
// says which run config each kernel is) and PyPTO swimlanes (with the run config they are a run
// of) become figures with their provenance, written as a measurements file for `tilesim
// calibrate` (tools/calibration/measurements.hpp) or a validation dataset for `tilesim validate`
// (tools/calibration/validation_dataset.hpp). Nothing is dropped silently: rows no kernel of the
// mapping matches are listed, a kernel that matches no row or a row two kernels match is an
// error, and a figure that is not a measurement (not collected, or 0) is listed with why.

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/spec/kernel_spec.hpp"
#include "tools/calibration/msprof_map.hpp"
#include "tools/formats/msprof_op_summary.hpp"
#include "tools/formats/swimlane.hpp"

namespace tilesim {

// One measured figure: the median over the launches (rows, or swimlane files) that have it.
struct BoardFigure {
  std::string metric;  // a calibrate metric (calibration_metrics())
  double value = 0;
  int64_t samples = 0;
  double min = 0, max = 0;
};

// A measured kernel: the run it is, and its figures.
struct BoardKernel {
  std::string id;
  std::string source;                 // where the figures come from (files, lines, rows)
  std::string mapping;                // why the run config is the measured kernel
  nlohmann::json config;              // inline run config, or null
  std::filesystem::path config_file;  // else the run config file
  std::string sweep;
  nlohmann::json x;  // null: the kernel's position in its sweep
  std::vector<BoardFigure> figures;
  std::vector<std::string> left_out;  // "<metric>: why it is not a measurement"
};

struct UnmappedRows {
  std::string file;
  int64_t first_line = 0;
  std::string op_name, task_type;
  int64_t rows = 0;
};

struct BoardMeasurements {
  std::string description;
  std::string hardware_named;      // as the input named it ("" = default)
  std::filesystem::path hardware;  // resolved
  std::vector<BoardKernel> kernels;
  std::vector<UnmappedRows> unmapped;
  int64_t rows = 0;  // rows read (msprof)
};

// The pipe figures an msprof row carries, as calibrate metrics (task_duration_us first).
const std::vector<std::string>& msprof_metrics();
// The figures a swimlane gives (gen_time_us first); wait_schedule_time_us only with a graph.
const std::vector<std::string>& swimlane_metrics();

// The median of `v` (the mean of the middle two for an even count); NaN when empty.
double median(std::vector<double> v);

// Every row of `files` matched to the kernels of `map`, figures per kernel.
BoardMeasurements measurements_from_msprof(const std::vector<MsprofFile>& files,
                                           const MsprofMap& map);

// One run config measured by one or more swimlanes of it (repeats): the median of each figure.
BoardMeasurements measurements_from_swimlanes(const std::vector<std::string>& swimlane_files,
                                              const std::vector<SwimlaneAnalysis>& analyses,
                                              const std::filesystem::path& run_config,
                                              const std::string& id);

// Refuses a row whose collected input dtype or element count ("Input Data Types", "Input Shapes",
// first input) is not the run's (the first tensor of the spec), so a launch is never scored
// against a run of another size or type; `where` names the mapping in the message.
void check_row_against_spec(const MsprofFile& f, const MsprofRow& row, const KernelSpec& spec,
                            const std::string& where);

// Keeps only `metrics` (empty: every figure); fails naming an unknown metric.
void select_metrics(BoardMeasurements& m, const std::vector<std::string>& metrics);

// The measurements file (calibrate's schema) for writing at `output` (config_file and hardware
// paths relative to its folder). Fails when there is no figure at all.
nlohmann::json measurements_file_json(const BoardMeasurements& m,
                                      const std::filesystem::path& output);
// The validation dataset (validate's schema): one sweep per (sweep, metric), one point per
// kernel.
nlohmann::json validation_dataset_json(const BoardMeasurements& m,
                                       const std::filesystem::path& output);

}  // namespace tilesim
