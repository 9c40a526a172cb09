#include "tools/formats/text_append.hpp"

namespace tilesim {

std::string wrap(const std::string& text, size_t first_used, size_t indent, size_t width) {
  std::string out, line;
  size_t used = first_used;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find(' ', pos);
    if (end == std::string::npos) end = text.size();
    const std::string word = text.substr(pos, end - pos);
    pos = end + 1;
    if (!line.empty() && used + 1 + word.size() > width) {
      out += line + "\n" + std::string(indent, ' ');
      line.clear();
      used = indent;
    }
    used += (line.empty() ? 0 : 1) + word.size();
    line += (line.empty() ? "" : " ") + word;
  }
  return out + line;
}

}  // namespace tilesim
