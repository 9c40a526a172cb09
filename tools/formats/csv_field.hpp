#pragma once
// One CSV field: quoted (with doubled quotes) only when it holds a comma, quote or newline.

#include <string>

namespace tilesim {

inline std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

}  // namespace tilesim
