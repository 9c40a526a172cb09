#pragma once
// docs/hardware.md, rendered from the parameter table (model/hardware.cpp) and the shipped hardware
// files, so the reference cannot drift from the code: tests/hardware_test.cpp fails when the
// checked-in file differs from what hardware_doc prints.

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace tilesim {

// Markdown: the file format, the shipped files (base and what each sets), then per part of the
// machine one table of key, type, unit, allowed range, doc, and the default file's value and
// source. `defaults` is the default file merged with its bases (merged_hardware_json).
std::string hardware_doc_markdown(
    const std::string& default_name, const nlohmann::ordered_json& defaults,
    const std::vector<std::pair<std::string, nlohmann::json>>& shipped);

// The same, for the shipped files under default_config_dir().
std::string shipped_hardware_doc();

}  // namespace tilesim
