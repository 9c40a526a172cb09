#pragma once
// The `tilesim rules` report: the verdict table (one row per claim, with the deciding numbers) and
// the measured thresholds, for one hardware description or several side by side (the first is
// the reference; the others say how each verdict and threshold moves).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/analyses/rules.hpp"

namespace tilesim {

// The rulebook checked on each named hardware (files or shipped names; the first is the base of
// the comparison): what `tilesim rules [--compare]` and tilesim.rules() present.
// Each hardware file or shipped name, with the what-ifs `settings` ("key=value", --set) over it.
std::vector<RulesResult> check_rules_on(const std::vector<std::string>& hardware,
                                        const RulesOptions& options,
                                        const std::vector<std::string>& settings = {});
std::string format_rules(const std::vector<RulesResult>& results);
nlohmann::json rules_json(const std::vector<RulesResult>& results);
// The verdict table: one row per (hardware, claim) with its verdict and deciding numbers.
std::string rules_csv(const std::vector<RulesResult>& results);

}  // namespace tilesim
