#pragma once
// The rulebook's unwritten chapters, derived from the model's runs: rule 4 (two-phase pipelines:
// a loss's per-sample phase, then its batch reduction) and rule 5 (fusion and numerical
// stability). Each claim's verdict and threshold come from sweeps of kernels written for it,
// every form at its best tile; nothing but the claim is written in.

#include <vector>

#include "tools/analyses/rule_cases.hpp"

namespace tilesim {

std::vector<RuleCheck> check_rule4(Cases& cases);
std::vector<RuleCheck> check_rule5(Cases& cases);

}  // namespace tilesim
