#include "tools/cli/options.hpp"
#include "tools/formats/output_file.hpp"

#include <cmath>
#include <fstream>
#include <iostream>

#include "model/error.hpp"
#include "tools/reports/version.hpp"

namespace tilesim {

CLI::Validator integer_at_least(int64_t min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        size_t used = 0;
        int64_t v = 0;
        try {
          v = std::stoll(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != text.size() || v < min)
          return "'" + text + "' is not an integer >= " + std::to_string(min);
        return "";
      },
      "INT>=" + std::to_string(min));
}

CLI::Validator positive_finite() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        size_t used = 0;
        double v = 0;
        try {
          v = std::stod(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != text.size() || !std::isfinite(v) || v <= 0)
          return "'" + text + "' is not a finite number > 0";
        return "";
      },
      "NUMBER>0");
}

CLI::Option* add_json_option(CLI::App* cmd, std::string& path) {
  return cmd
      ->add_option("--json", path,
                   "write the result as JSON to FILE (to stdout when no FILE is given)")
      ->expected(0, 1)
      ->default_str("-")
      ->type_name("[FILE]");
}

CLI::Option* add_csv_option(CLI::App* cmd, std::string& path, const std::string& what) {
  return cmd
      ->add_option("--csv", path,
                   "write " + what + " as CSV to FILE (to stdout when no FILE is given)")
      ->expected(0, 1)
      ->default_str("-")
      ->type_name("[FILE]");
}

CLI::Option* add_jobs_option(CLI::App* cmd, int& jobs) {
  return cmd->add_option("-j,--jobs", jobs, "worker threads (default 0: every core)")
      ->check(integer_at_least(0));
}

CLI::Option* add_hardware_option(CLI::App* cmd, std::string& hardware, const std::string& what) {
  return cmd->add_option("--hardware", hardware, what);
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
  j["tilesim_version"] = tilesim_version();
  write_output(path, j.dump(2) + "\n", "JSON");
}

}  // namespace tilesim
