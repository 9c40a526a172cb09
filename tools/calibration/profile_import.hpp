#pragma once
// Board profiles in, as `tilesim measurements from-msprof / from-swimlane` and
// tilesim.measurements_from_msprof / _from_swimlane run it: the files read, the measurements
// built and described, the inputs named (so no output replaces one).
//
// Each profile format is a ProfileReader: its name, the inputs it takes, and the function that
// reads them. The CLI makes one `measurements from-<name>` subcommand per reader and Python's
// bindings call a reader by name (import_profile), both from the one list profile_readers().
// A built-in reader is a function returning its ProfileReader (in its own file) and its entry in
// the list in profile_import.cpp (an explicit list: a static library drops a file nothing
// calls). A reader linked into a program from outside this library (a test, a plug-in) registers
// itself with one line, and is then listed, a CLI subcommand of that program and callable by name:
//   static const bool registered = register_profile_reader(toy_reader());

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/calibration/board_measurements.hpp"

namespace tilesim {

struct ProfileImport {
  BoardMeasurements measurements;
  std::vector<std::string> inputs;    // every file read
  std::vector<std::string> warnings;  // the swimlane analyses', each naming its file
};

// One input of a reader, as the CLI spells it and Python passes it (by `name`).
struct ProfileOption {
  enum Kind {
    kFiles,     // the profile files, one or more: the positional `name...`
    kValue,     // --name VALUE
    kHardware,  // --hardware FILE|NAME (name "hardware"), checked as every command's
  };
  ProfileOption(Kind kind_, std::string name_, std::string help_, bool required_ = false,
                std::vector<std::string> allowed_ = {}, std::string fallback_ = "")
      : kind(kind_),
        name(std::move(name_)),
        help(std::move(help_)),
        required(required_),
        allowed(std::move(allowed_)),
        fallback(std::move(fallback_)) {}

  Kind kind;
  std::string name;  // "csv", "map", "time-unit"
  std::string help;  // the CLI's help text
  bool required;
  std::vector<std::string> allowed;  // the values the CLI allows (empty: any)
  std::string fallback;              // the value when not given
};

// What a reader is given: per option name, its values (every file of kFiles, one value of the
// others, the fallback when not given).
struct ProfileInputs {
  std::map<std::string, std::vector<std::string>> values;

  const std::vector<std::string>& files(const std::string& name) const;
  const std::string& value(const std::string& name) const;  // "" when it has none
};

struct ProfileReader {
  std::string name;                    // `tilesim measurements from-<name>`; import_profile's name
  std::string help;                    // the subcommand's one line
  std::vector<ProfileOption> options;  // in the order the CLI lists them
  std::function<ProfileImport(const ProfileInputs&)> read;
};

// Every reader: the built-ins, then those registered, in registration order.
std::vector<ProfileReader> profile_readers();
std::optional<ProfileReader> find_profile_reader(const std::string& name);
// Adds a reader after those there are (a name taken, or no read function, is an InternalError);
// returns true, for a static initialiser.
bool register_profile_reader(ProfileReader reader);
// Runs the reader `name` (an unknown one is an Error listing the readers) on `inputs`, keyed by
// its option names (a name it does not take is an Error; an option not given takes its fallback,
// a required one must be given).
ProfileImport import_profile(const std::string& name, ProfileInputs inputs);

// op_summary CSVs with the mapping file naming each kernel's run config.
ProfileImport import_msprof(const std::vector<std::string>& csvs, const std::string& map);

// Swimlanes (repeats) of one run config; `graph` (may be empty) splits the wait; time_unit "us",
// "ns" or "cycles" (the clock of `hardware`, else the config's); `id` defaults to the config's
// file name.
ProfileImport import_swimlanes(const std::vector<std::string>& traces, const std::string& config,
                               const std::string& graph, const std::string& time_unit,
                               const std::string& hardware, const std::string& id);

// The file to write at `output`: a measurements file (as_ "calibrate") or a validation dataset
// ("validate"), keeping only `metrics` (empty: every figure).
nlohmann::json imported_file_json(BoardMeasurements& m, const std::string& as_,
                                  const std::vector<std::string>& metrics,
                                  const std::string& output);

}  // namespace tilesim
