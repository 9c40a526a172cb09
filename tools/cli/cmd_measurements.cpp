// tilesim measurements from-msprof CSV... --map MAP [-o FILE] [--as calibrate|validate]
//                                         [--metric M]...
// tilesim measurements from-swimlane TRACE... --config RUN [--graph G] [--time-unit u]
//                                            [--hardware H] [--id ID] [-o FILE] [--as ...]
// Board profiles in: msprof op_summary CSVs (with a mapping file naming the run config of each
// kernel) or PyPTO swimlanes (of one run config) become a measurements file for `calibrate`, or
// a validation dataset for `validate` (--as validate). Each `from-<name>` is a profile reader of
// tools/calibration/profile_import.hpp, with the inputs it declares: a new reader is a new
// subcommand here without a line of this file.
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "model/error.hpp"
#include "model/hardware.hpp"
#include "tools/calibration/board_measurements.hpp"
#include "tools/calibration/profile_import.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/options.hpp"
#include "tools/formats/output_file.hpp"
#include "tools/formats/pypto_graph.hpp"
#include "tools/formats/run_config.hpp"
#include "tools/formats/swimlane.hpp"
#include "tools/formats/version.hpp"
#include "tools/reports/board_compare_report.hpp"

namespace tilesim {

namespace {

struct OutputArgs {
  std::string output = "-";
  std::string as = "calibrate";
  std::vector<std::string> metrics;
  bool quiet = false;
};

void add_output_options(CLI::App* cmd, OutputArgs& o) {
  cmd->add_option("-o,--output", o.output,
                  "write the measurements file, for tilesim calibrate or validate (default -: "
                  "stdout, the summary on stderr)")
      ->check(not_empty("file name"));
  add_quiet_option(cmd, o.quiet);
  cmd->add_option("--as", o.as,
                  "calibrate: a measurements file (tilesim calibrate); validate: a validation "
                  "dataset (tilesim validate), one sweep per (sweep, metric)")
      ->check(CLI::IsMember({"calibrate", "validate"}));
  cmd->add_option("--metric", o.metrics,
                  "keep only this metric (repeatable; default: every figure the profile has)");
}

// Writes the file and the summary; the inputs are never overwritten.
int write_measurements(ProfileImport& in, const OutputArgs& o, const std::string& command) {
  for (const auto& w : in.warnings) std::cerr << "tilesim: warning: " << w << "\n";
  if (o.output != "-")
    for (const auto& f : in.inputs) check_not_an_input(o.output, "-o", f);
  BoardMeasurements& m = in.measurements;
  const nlohmann::json j = imported_file_json(m, o.as, o.metrics, o.output);
  std::ostream& text = o.output == "-" ? std::cerr : std::cout;
  std::string s = fmt::format("tilesim measurements {}:", command);
  for (const auto& f : in.inputs) s += " " + f;
  s += "\n" + board_measurements_summary(m);
  if (!o.quiet) text << s;
  write_output(o.output, j.dump(2) + "\n", "measurements file");
  size_t n = 0;
  for (const auto& k : m.kernels) n += k.figures.size();
  if (o.output != "-" && !o.quiet)
    text << fmt::format("\n  {} measurements of {} kernels written to {} ({})\n", n,
                        m.kernels.size(), o.output,
                        o.as == "validate" ? "a validation dataset" : "a measurements file");
  if (!m.unmapped.empty())
    std::cerr << fmt::format(
        "tilesim: warning: {} row(s) match no kernel of the mapping and are not measurements "
        "(listed above)\n",
        [&] {
          int64_t r = 0;
          for (const auto& u : m.unmapped) r += u.rows;
          return r;
        }());
  return 0;
}

// One reader's subcommand: what CLI11 parses into, per option name.
struct ReaderArgs {
  ProfileReader reader;
  CLI::App* cmd = nullptr;
  std::map<std::string, std::vector<std::string>> files;  // kFiles
  std::map<std::string, std::string> values;              // the others
  OutputArgs out;
};

// `from-<name>`: the reader's inputs as it declares them, then the output options.
void add_reader_command(CLI::App* parent, ReaderArgs& a) {
  a.cmd = parent->add_subcommand("from-" + a.reader.name, a.reader.help);
  for (const ProfileOption& o : a.reader.options) {
    CLI::Option* opt = nullptr;
    if (o.kind == ProfileOption::kFiles) {
      opt = a.cmd->add_option(o.name, a.files[o.name], o.help);
    } else {
      std::string& value = a.values[o.name] = o.fallback;
      opt = o.kind == ProfileOption::kHardware ? add_hardware_option(a.cmd, value, o.help)
                                               : a.cmd->add_option("--" + o.name, value, o.help);
    }
    if (o.required) opt->required();
    if (!o.allowed.empty()) opt->check(CLI::IsMember(o.allowed));
  }
  add_output_options(a.cmd, a.out);
  a.cmd->set_version_flag("--version", std::string("tilesim ") + tilesim_version());
}

int from_reader(const ReaderArgs& a) {
  ProfileInputs inputs;
  for (const auto& [name, files] : a.files) inputs.values[name] = files;
  for (const auto& [name, value] : a.values) inputs.values[name] = {value};
  ProfileImport in = import_profile(a.reader.name, std::move(inputs));
  return write_measurements(in, a.out, a.cmd->get_name());
}

}  // namespace

CommandAction add_measurements_command(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "measurements",
      "board profiles in: msprof op_summary CSVs or PyPTO swimlanes to measurements");
  cmd->require_subcommand(1);
  // One subcommand per profile reader (tools/calibration/profile_import.hpp), in its order. The
  // vector is never resized: CLI11 holds references into its elements.
  const std::vector<ProfileReader> all = profile_readers();
  auto readers = std::make_shared<std::vector<ReaderArgs>>(all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    (*readers)[i].reader = all[i];
    add_reader_command(cmd, (*readers)[i]);
  }
  return [readers]() {
    for (const ReaderArgs& a : *readers)
      if (*a.cmd) return from_reader(a);
    return -1;
  };
}

}  // namespace tilesim
