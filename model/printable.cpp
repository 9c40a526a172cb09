#include "model/printable.hpp"

#include <fmt/format.h>

#include <iterator>

namespace tilesim {

std::string printable(std::string_view text, size_t max_bytes) {
  const size_t n = max_bytes > 0 && text.size() > max_bytes ? max_bytes : text.size();
  std::string out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    const char* escape = c == '\n' ? "n" : c == '\r' ? "r" : c == '\t' ? "t" : nullptr;
    if (escape)
      fmt::format_to(std::back_inserter(out), "\\{}", escape);
    else if (c < 0x20 || c == 0x7f)
      fmt::format_to(std::back_inserter(out), "\\x{:02x}", c);
    else
      out.push_back(static_cast<char>(c));
  }
  if (n < text.size()) out.append("...");
  return out;
}

}  // namespace tilesim
