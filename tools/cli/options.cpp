#include "tools/cli/options.hpp"
#include "tools/formats/output_file.hpp"

#include <cmath>
#include <fstream>
#include <iostream>
#include <optional>

#include <fmt/format.h>

#include "kernels/spec/kernel_spec.hpp"
#include "model/error.hpp"
#include "tools/formats/option_values.hpp"
#include "tools/formats/version.hpp"

namespace tilesim {

CLI::Validator integer_at_least(int64_t min) {
  return integer_in(min, std::numeric_limits<int64_t>::max());
}

CLI::Validator integer_in(int64_t min, int64_t max) {
  return CLI::Validator(
      [min, max](std::string& text) { return integer_option_error(text, min, max); },
      max == std::numeric_limits<int64_t>::max() ? fmt::format("INT>={}", min)
                                                 : fmt::format("INT in [{}, {}]", min, max));
}

CLI::Validator positive_finite(double at_most) {
  return CLI::Validator(
      [at_most](std::string& text) { return number_option_error(text, 0, at_most); },
      std::isinf(at_most) ? std::string("NUMBER>0") : fmt::format("NUMBER in (0, {}]", at_most));
}

CLI::Option* add_quiet_option(CLI::App* cmd, bool& quiet) {
  return cmd->add_flag("-q,--quiet", quiet,
                       "nothing on stdout but an output sent there with '-' (errors still on "
                       "stderr)");
}

CLI::Option* add_set_option(CLI::App* cmd, std::vector<std::string>& settings) {
  return cmd
      ->add_option("--set", settings,
                   "a hardware what-if: this parameter at this value (repeatable; the keys are "
                   "in docs/hardware.md)")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);
}

CLI::Option* add_max_tasks_option(CLI::App* cmd) {
  return cmd
      ->add_option_function<int64_t>(
          "--max-tasks", [](const int64_t& n) { set_max_tasks(n); },
          fmt::format("the most tasks a kernel or graph may imply (default {}; each takes ~350 B)",
                      kDefaultMaxTasks))
      ->check(integer_at_least(1));
}

namespace {

// One path spelled two ways ("o.out", "./o.out"): the same file once it exists, else the same
// normalised absolute path.
bool same_output(const std::string& a, const std::string& b) {
  std::error_code ec;
  if (std::filesystem::exists(a, ec) && std::filesystem::exists(b, ec))
    return std::filesystem::equivalent(a, b, ec);
  return std::filesystem::absolute(a, ec).lexically_normal() ==
         std::filesystem::absolute(b, ec).lexically_normal();
}

}  // namespace

void check_outputs_not_inputs(const std::vector<std::pair<std::string, std::string>>& outputs,
                              const std::vector<std::filesystem::path>& inputs) {
  for (const auto& [option, path] : outputs)
    if (!path.empty() && path != "-")
      for (const auto& input : inputs)
        if (!input.empty()) check_not_an_input(path, option, input);
  // Two outputs, one destination: one of them would be lost (or, on stdout, both unreadable).
  for (size_t i = 0; i < outputs.size(); ++i)
    for (size_t j = 0; j < i; ++j) {
      const auto& [first, a] = outputs[j];
      const auto& [second, b] = outputs[i];
      if (a.empty() || b.empty()) continue;
      if (a == "-" && b == "-")
        throw Error(fmt::format("{} -: {} also writes to standard output (give one of them a file)",
                                second, first));
      if (a != "-" && b != "-" && same_output(a, b))
        throw Error(
            fmt::format("{} {}: is also {}'s output (one file per output)", second, b, first));
    }
}

CLI::Validator not_empty(const std::string& what) {
  return CLI::Validator(
      [what](std::string& text) -> std::string {
        return text.empty() ? "an empty " + what + " (give one, or leave the option out)" : "";
      },
      "");
}

CLI::Option* add_json_option(CLI::App* cmd, std::string& path) {
  return cmd
      ->add_option("--json", path,
                   "write the result as JSON to FILE (to stdout when no FILE is given)")
      ->expected(0, 1)
      ->default_str("-")
      ->type_name("[FILE]")
      ->check(not_empty("file name"));
}

CLI::Option* add_csv_option(CLI::App* cmd, std::string& path, const std::string& what) {
  return cmd
      ->add_option("--csv", path,
                   "write " + what + " as CSV to FILE (to stdout when no FILE is given)")
      ->expected(0, 1)
      ->default_str("-")
      ->type_name("[FILE]")
      ->check(not_empty("file name"));
}

CLI::Option* add_jobs_option(CLI::App* cmd, int& jobs) {
  return cmd->add_option("-j,--jobs", jobs, "worker threads (default 0: every core)")
      ->check(integer_at_least(0));
}

CLI::Option* add_hardware_option(CLI::App* cmd, std::string& hardware, const std::string& what) {
  return cmd->add_option("--hardware", hardware, what)->check(not_empty("hardware name"));
}

void write_output(const std::string& path, const std::string& text, const char* what) {
  if (path == "-") {
    std::cout << text;
    std::cout.flush();
    if (!std::cout) throw Error(std::string("standard output: cannot write ") + what);
    return;
  }
  write_file_atomically(
      path, [&](std::ostream& out) { out << text; }, what);
}

void write_json(const std::string& path, nlohmann::json j) {
  write_output(path, with_version(std::move(j)).dump(2) + "\n", "JSON");
}

}  // namespace tilesim
