#pragma once
// docs/reference/configs.md: every key of every config kind tilesim reads (run, sweep, tile
// program, validation dataset, measurements, msprof mapping, hardware file), with its type,
// default and a one-line doc. Numeric defaults are read from the structs the readers fill
// (KernelSpec, ZoneOptions, SweepConstraints, ...), so they cannot drift from the code; the key
// sets are checked against the readers themselves by scripts/reference_docs.py (ctest
// reference_docs), which gives each object an unknown key and compares the reader's "allowed:"
// list with this table.

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tilesim {

struct ConfigKey {
  std::string name;
  std::string type;
  std::string fallback;  // the default ("required", or what applies when the key is left out)
  std::string doc;
};

// One JSON object of a config kind: `path` is where it sits ("" the top level; "a.b" a member;
// "a[]" an element of the array a; "a.*" any member of the object a).
struct ConfigObject {
  std::string kind;  // run, run-program, sweep, program, validation, measurements, msprof-map,
                     // hardware
  std::string path;
  std::string what;
  std::vector<ConfigKey> keys;
};

const std::vector<ConfigObject>& config_objects();

std::string config_reference_markdown();
// The objects with their key names, for the reference_docs check.
nlohmann::json config_objects_json();

// The JSON Schema (draft 7) of a config file kind, from the same table: "run" (a built-in op's or
// a tile program's run config), "sweep" (either's), "program", "validation", "measurements",
// "msprof-map", "hardware". Keys outside the table are refused, as the readers refuse them;
// values are checked for their JSON type (the readers check ranges and meaning).
std::vector<std::string> schema_kinds();
nlohmann::json config_schema(const std::string& kind);

}  // namespace tilesim
