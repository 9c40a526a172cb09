#pragma once
// The rulebook's claims in the rulebook's own language: `tilesim rules --lang zh` states every
// claim (and rules 4 and 5's reasons) in Chinese, in the report, the JSON and the chapters. The
// figures are the run's, whatever the language.

#include <string>
#include <vector>

#include "tools/analyses/rules.hpp"

namespace tilesim {

// "en" (the claims as the checks state them) or "zh"; throws tilesim::Error naming the languages
// for any other.
void check_rules_lang(const std::string& lang);
// Restates each claim (and, where the table has one, its reason) in `lang`.
void localize_rules(std::vector<RulesResult>& results, const std::string& lang);

}  // namespace tilesim
