#include "tools/reports/svg_heat_map.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "tools/formats/text_append.hpp"
#include "tools/reports/svg_plot.hpp"

namespace tilesim {

namespace {

// Green (best) through yellow to red (worst), t in [0, 1].
std::string ramp(double t) {
  t = std::clamp(t, 0.0, 1.0);
  const double r = t < 0.5 ? 80 + 350 * t : 255;
  const double g = t < 0.5 ? 190 : 190 - 260 * (t - 0.5);
  const double b = t < 0.5 ? 110 - 100 * t : 60 - 40 * (t - 0.5);
  return fmt::format("#{:02x}{:02x}{:02x}", static_cast<int>(std::clamp(r, 0.0, 255.0)),
                     static_cast<int>(std::clamp(g, 0.0, 255.0)),
                     static_cast<int>(std::clamp(b, 0.0, 255.0)));
}

std::string cell_text(double v) {
  return v >= 1000 ? fmt::format("{:.0f}", v) : fmt::format("{:.3g}", v);
}

}  // namespace

nlohmann::json heat_map_json(const HeatMap& m) {
  nlohmann::json values = nlohmann::json::array();
  for (const auto& row : m.values) {
    nlohmann::json r = nlohmann::json::array();
    for (const double v : row)
      r.push_back(std::isnan(v) ? nlohmann::json(nullptr) : nlohmann::json(v));
    values.push_back(r);
  }
  return {
      {"title", m.title},
      {"subtitle", m.subtitle},
      {"x_label", m.x_label},
      {"y_label", m.y_label},
      {"value_label", m.value_label},
      {"xs", m.xs},
      {"ys", m.ys},
      {"values", values},
      {"notes", m.notes},
      {"mark", m.mark ? nlohmann::json({m.mark->first, m.mark->second}) : nlohmann::json(nullptr)},
      {"mark_label", m.mark_label}};
}

std::string render_heat_map_svg(const HeatMap& m) {
  const double left = 110, top = 70, right = 40, bottom = 90;
  const double cw = std::max(46.0, std::min(90.0, 900.0 / std::max<size_t>(1, m.xs.size())));
  const double ch = std::max(24.0, std::min(44.0, 520.0 / std::max<size_t>(1, m.ys.size())));
  const double pw = cw * static_cast<double>(m.xs.size());
  const double ph = ch * static_cast<double>(m.ys.size());
  // Wide enough for the title and subtitle lines (about 7 px a character at 12-17 px).
  const double text = 7.5 * static_cast<double>(std::max(m.title.size(), m.subtitle.size()));
  const double width = std::max(left + pw + right, left + text), height = top + ph + bottom;
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const auto& row : m.values)
    for (double v : row)
      if (std::isfinite(v) && v > 0) lo = std::min(lo, v), hi = std::max(hi, v);
  const double span = std::isfinite(lo) && hi > lo ? std::log(hi / lo) : 1;
  std::string s = svg_open(width, height, left, m.title, m.subtitle);
  append(s, "<g id=\"cells\" font-size=\"11\" text-anchor=\"middle\">\n");
  for (size_t r = 0; r < m.ys.size(); ++r)
    for (size_t c = 0; c < m.xs.size(); ++c) {
      const double v = r < m.values.size() && c < m.values[r].size()
                           ? m.values[r][c]
                           : std::numeric_limits<double>::quiet_NaN();
      const double x = left + cw * static_cast<double>(c);
      const double y = top + ph - ch * static_cast<double>(r + 1);  // row 0 at the bottom
      const bool has = std::isfinite(v) && v > 0;
      const std::string note =
          r < m.notes.size() && c < m.notes[r].size() ? m.notes[r][c] : std::string();
      append(s,
             "<rect class=\"cell\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
             "fill=\"{}\" stroke=\"white\"><title>{} {}, {} {}: {}{}</title></rect>\n",
             x, y, cw, ch, has ? ramp(std::log(v / lo) / span) : "#eeeeee", svg_escape(m.x_label),
             svg_escape(m.xs[c]), svg_escape(m.y_label), svg_escape(m.ys[r]),
             has ? cell_text(v) + " " + svg_escape(m.value_label) : m.empty_text,
             note.empty() ? "" : " (" + svg_escape(note) + ")");
      append(s, "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", x + cw / 2, y + ch / 2 + 4,
             has            ? cell_text(v)
             : note.empty() ? svg_escape(m.empty_text)
                            : std::string("x"));
    }
  append(s, "</g>\n");
  if (m.mark) {
    const auto [r, c] = *m.mark;
    const double x = left + cw * static_cast<double>(c);
    const double y = top + ph - ch * static_cast<double>(r + 1);
    append(s,
           "<g id=\"best\"><rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
           "fill=\"none\" stroke=\"#1f3b8c\" stroke-width=\"3\"/></g>\n",
           x + 1.5, y + 1.5, cw - 3, ch - 3);
  }
  append(s, "<g id=\"x-axis\" font-size=\"11\" text-anchor=\"middle\">\n");
  for (size_t c = 0; c < m.xs.size(); ++c)
    append(s, "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
           left + cw * (static_cast<double>(c) + 0.5), top + ph + 16, svg_escape(m.xs[c]));
  append(s, "</g>\n<g id=\"y-axis\" font-size=\"11\" text-anchor=\"end\">\n");
  for (size_t r = 0; r < m.ys.size(); ++r)
    append(s, "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", left - 8,
           top + ph - ch * (static_cast<double>(r) + 0.5) + 4, svg_escape(m.ys[r]));
  append(s, "</g>\n");
  s += svg_axis_titles(left, top, pw, ph, 40, 70, m.x_label, m.y_label);
  append(
      s, "<text id=\"legend\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"12\" fill=\"#444\">{}</text>\n",
      left, top + ph + 66,
      svg_escape(fmt::format("cells: {} (green fastest, red slowest, log scale){}", m.value_label,
                             m.mark_label.empty() ? "" : "; outlined: " + m.mark_label)));
  append(s, "</svg>\n");
  return s;
}

}  // namespace tilesim
