#pragma once
// "Did you mean": the known name a misspelt one is a few edits away from (Levenshtein distance).
// Hardware keys (model/hardware.cpp) and the CLI's commands and options use it.

#include <cstddef>
#include <string>
#include <vector>

namespace tilesim {

size_t edit_distance(const std::string& a, const std::string& b);
// The name of `names` closest to `word` within `max_distance` edits (the first on a tie), or "".
std::string nearest_name(const std::string& word, const std::vector<std::string>& names,
                         size_t max_distance);

}  // namespace tilesim
