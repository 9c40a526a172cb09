#pragma once
// The `tilesim rules` report: the verdict table (one row per claim, with the deciding numbers) and
// the measured thresholds, for one hardware description or several side by side (the first is
// the reference; the others say how each verdict and threshold moves).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/analyses/rules.hpp"

namespace tilesim {

std::string format_rules(const std::vector<RulesResult>& results);
nlohmann::json rules_json(const std::vector<RulesResult>& results);
// The verdict table: one row per (hardware, claim) with its verdict and deciding numbers.
std::string rules_csv(const std::vector<RulesResult>& results);

}  // namespace tilesim
