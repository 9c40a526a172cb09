#pragma once
// The options every command spells the same way (--json [FILE], --csv [FILE], -j/--jobs N,
// --hardware) and where their output goes. An output path "-" means stdout.

#include <CLI/CLI.hpp>
#include <filesystem>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tilesim {

// --json [FILE]: FILE, or "-" (stdout) when given without one; empty when not given.
CLI::Option* add_json_option(CLI::App* cmd, std::string& path);
// --csv [FILE]: as --json, for the command's table as CSV.
CLI::Option* add_csv_option(CLI::App* cmd, std::string& path, const std::string& what);
// -j/--jobs N: worker threads (0, the default: every core).
CLI::Option* add_jobs_option(CLI::App* cmd, int& jobs);
// -q/--quiet: nothing on stdout but what an output option sends there ("-"); errors and
// warnings still go to stderr. Every command has it.
CLI::Option* add_quiet_option(CLI::App* cmd, bool& quiet);
// --set KEY=VALUE (repeatable): a hardware what-if over --hardware (or the config's hardware).
CLI::Option* add_set_option(CLI::App* cmd, std::vector<std::string>& settings);
// --hardware FILE|NAME.
CLI::Option* add_hardware_option(CLI::App* cmd, std::string& hardware, const std::string& what);

// Refuses an empty value ("--json ''"): "an empty <what> (...)".
CLI::Validator not_empty(const std::string& what);
// An integer of at least `min`, or from `min` to `max` (CLI11's number checks print a 300-digit
// range for "x"). The checks are tools/formats/option_values.hpp's, which Python shares.
CLI::Validator integer_at_least(int64_t min);
CLI::Validator integer_in(int64_t min, int64_t max);
// A finite number > 0 and at most `at_most` (no nan, no inf, nothing beyond double range).
CLI::Validator positive_finite(double at_most = std::numeric_limits<double>::infinity());

// --max-tasks N: the most tasks (sub-tiles) a kernel, or tasks a replayed graph, may imply
// before any work is allocated (default kernels/spec/kernel_spec.hpp kDefaultMaxTasks);
// process-wide.
CLI::Option* add_max_tasks_option(CLI::App* cmd);

// Refuses, before any work, an output (option, path; "" not given, "-" stdout) that is one of the
// command's input files, or two outputs to one file (however spelled) or both to stdout.
void check_outputs_not_inputs(const std::vector<std::pair<std::string, std::string>>& outputs,
                              const std::vector<std::filesystem::path>& inputs);

// Writes text to `path` ("-": stdout); `what` names the output in the error.
void write_output(const std::string& path, const std::string& text, const char* what);
// A JSON result, stamped with the tilesim version, to `path` ("-": stdout).
void write_json(const std::string& path, nlohmann::json j);

}  // namespace tilesim
