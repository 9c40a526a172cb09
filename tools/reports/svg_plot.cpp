#include "tools/reports/svg_plot.hpp"

#include <fmt/format.h>

#include "tools/formats/text_append.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace tilesim {

std::string svg_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string svg_open(double width, double height, double left, const std::string& title,
                     const std::string& subtitle) {
  std::string s;
  append(s,
         "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
         "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" "
         "viewBox=\"0 0 {:.0f} {:.0f}\" font-family=\"DejaVu Sans, Helvetica, Arial, "
         "sans-serif\">\n",
         width, height, width, height);
  append(s, "<rect x=\"0\" y=\"0\" width=\"{:.0f}\" height=\"{:.0f}\" fill=\"white\"/>\n", width,
         height);
  append(s, "<text x=\"{}\" y=\"26\" font-size=\"17\" font-weight=\"bold\">{}</text>\n", left,
         svg_escape(title));
  if (!subtitle.empty())
    append(s, "<text x=\"{}\" y=\"46\" font-size=\"12\" fill=\"#444\">{}</text>\n", left,
           svg_escape(subtitle));
  return s;
}

std::string svg_axis_titles(double left, double top, double pw, double ph, double below,
                            double aside, const std::string& x_label, const std::string& y_label) {
  std::string s;
  append(s,
         "<text id=\"x-label\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"14\" "
         "text-anchor=\"middle\">{}</text>\n",
         left + pw / 2, top + ph + below, svg_escape(x_label));
  append(s,
         "<text id=\"y-label\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"14\" "
         "text-anchor=\"middle\" transform=\"rotate(-90 {:.1f} {:.1f})\">{}</text>\n",
         left - aside, top + ph / 2, left - aside, top + ph / 2, svg_escape(y_label));
  return s;
}

namespace {

// 1, 2 or 5 times a power of ten, giving about `target` intervals over `span`.
double nice_step(double span, int target) {
  const double raw = span / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (raw <= m * mag) return m * mag;
  return 10.0 * mag;
}

std::string number(double v) {
  if (v == 0) return "0";
  const double a = std::fabs(v);
  if (a >= 1e6 || a < 1e-3) return fmt::format("{:.3g}", v);
  if (std::fabs(v - std::round(v)) < 1e-9) return fmt::format("{:.0f}", v);
  return fmt::format("{:.4g}", v);
}

// Where a plot is drawn: the plot area inside fixed margins, the data range it shows (x as log2
// when log_x) and the mapping of data to pixels.
struct PlotFrame {
  double left = 90, right = 230, top = 64, bottom = 72;
  double pw = 0, ph = 0;  // the plot area's width and height
  bool log_x = true;
  double xmin = 0, xmax = 0;           // in fx units
  double ylo = 0, yhi = 0, ystep = 0;  // the y axis's ends and tick step
  double fx(double x) const { return log_x ? std::log2(std::max(x, 1e-300)) : x; }
  double px(double x) const { return left + (fx(x) - xmin) / (xmax - xmin) * pw; }
  double pxl(double lx) const { return left + (lx - xmin) / (xmax - xmin) * pw; }  // lx in fx units
  double py(double y) const { return top + (yhi - y) / (yhi - ylo) * ph; }
  double clampx(double v) const { return std::clamp(v, left, left + pw); }
};

// The frame of `p`: its data and bands with a margin, y widened to whole tick steps.
PlotFrame plot_frame(const Plot& p) {
  PlotFrame f;
  f.log_x = p.log_x;
  f.pw = p.width - f.left - f.right, f.ph = p.height - f.top - f.bottom;
  double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin;
  double ymin = xmin, ymax = -xmin;
  for (const auto& s : p.series)
    for (const auto& pt : s.points) {
      xmin = std::min(xmin, f.fx(pt.x));
      xmax = std::max(xmax, f.fx(pt.x));
      ymin = std::min(ymin, pt.y);
      ymax = std::max(ymax, pt.y);
    }
  for (const auto& b : p.bands) {
    xmin = std::min(xmin, f.fx(b.x0));
    xmax = std::max(xmax, f.fx(b.x1));
  }
  if (!std::isfinite(xmin)) xmin = 0, xmax = 1;
  if (!std::isfinite(ymin)) ymin = 0, ymax = 1;
  if (p.log_x) {
    xmin -= 0.35, xmax += 0.35;
  } else {
    const double pad = xmax > xmin ? (xmax - xmin) * 0.05 : 1;
    xmin -= pad, xmax += pad;
  }
  if (ymax - ymin < 1e-9 * std::max(1.0, std::fabs(ymax))) {
    const double pad = std::max(std::fabs(ymax) * 0.05, 1e-6);
    ymin -= pad, ymax += pad;
  }
  const double ystep = nice_step(ymax - ymin, 6);
  double ylo = std::floor(ymin / ystep) * ystep, yhi = std::ceil(ymax / ystep) * ystep;
  if (ylo == ymin) ylo -= ystep * 0.25;
  if (yhi == ymax) yhi += ystep * 0.25;
  f.xmin = xmin, f.xmax = xmax;
  f.ylo = ylo, f.yhi = yhi, f.ystep = ystep;
  return f;
}

// Zone bands.
std::string bands_svg(const Plot& p, const PlotFrame& f) {
  std::string s;
  append(s, "<g id=\"bands\">\n");
  for (const auto& b : p.bands) {
    const double x0 = f.clampx(f.px(b.x0)), x1 = f.clampx(f.px(b.x1));
    if (x1 <= x0) continue;
    append(s,
           "<rect class=\"zone\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" "
           "fill=\"{}\" fill-opacity=\"0.35\"><title>{}</title></rect>\n",
           x0, f.top, x1 - x0, f.ph, b.color, svg_escape(b.label));
  }
  append(s, "</g>\n");
  return s;
}

// The y grid lines, ticks and tick labels.
std::string y_axis_svg(const PlotFrame& f) {
  std::string s;
  append(s, "<g id=\"y-axis\" font-size=\"12\" text-anchor=\"end\">\n");
  for (double y = f.ylo; y <= f.yhi + f.ystep * 1e-6; y += f.ystep) {
    if (y < f.ylo) continue;
    const double yy = f.py(y);
    append(s,
           "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n"
           "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
           f.left, yy, f.left + f.pw, yy, f.left - 8, yy + 4,
           number(std::fabs(y) < f.ystep * 1e-6 ? 0 : y));
  }
  append(s, "</g>\n");
  return s;
}

// The x grid lines, ticks and tick labels: powers of two on a log axis.
std::string x_axis_svg(const PlotFrame& f) {
  std::string s;
  append(s, "<g id=\"x-axis\" font-size=\"12\" text-anchor=\"middle\">\n");
  if (f.log_x) {
    const int lo = static_cast<int>(std::ceil(f.xmin)), hi = static_cast<int>(std::floor(f.xmax));
    const int step = std::max(1, (hi - lo) / 12 + 1);
    for (int e = lo; e <= hi; ++e) {
      if ((e - lo) % step) continue;
      const double xx = f.pxl(e);
      append(s,
             "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n"
             "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
             xx, f.top, xx, f.top + f.ph, xx, f.top + f.ph + 18, number(std::ldexp(1.0, e)));
    }
  } else {
    const double xstep = nice_step(f.xmax - f.xmin, 8);
    for (double x = std::ceil(f.xmin / xstep) * xstep; x <= f.xmax; x += xstep) {
      const double xx = f.pxl(x);
      append(s,
             "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#ddd\"/>\n"
             "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
             xx, f.top, xx, f.top + f.ph, xx, f.top + f.ph + 18, number(x));
    }
  }
  append(s, "</g>\n");
  return s;
}

// Each series: its line (in x order) and its markers.
std::string series_svg(const Plot& p, const PlotFrame& f) {
  std::string s;
  for (const auto& ser : p.series) {
    std::vector<PlotPoint> pts = ser.points;
    std::stable_sort(pts.begin(), pts.end(),
                     [](const PlotPoint& a, const PlotPoint& b) { return a.x < b.x; });
    append(s, "<g class=\"series\" opacity=\"{:.2f}\">\n", ser.opacity);
    if (ser.line && pts.size() > 1) {
      append(s, "<polyline fill=\"none\" stroke=\"{}\" stroke-width=\"2\" points=\"", ser.color);
      for (const auto& pt : pts) append(s, "{:.1f},{:.1f} ", f.px(pt.x), f.py(pt.y));
      append(s, "\"/>\n");
    }
    if (ser.radius > 0)
      for (const auto& pt : pts)
        append(s,
               "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"{:.1f}\" fill=\"{}\" stroke=\"{}\" "
               "stroke-width=\"1\"/>\n",
               f.px(pt.x), f.py(pt.y), ser.radius, pt.fill.empty() ? ser.color : pt.fill,
               ser.color);
    append(s, "</g>\n");
  }
  return s;
}

// Point labels, above the point (below it near the top edge); the marked point has its own.
std::string point_labels_svg(const Plot& p, const PlotFrame& f) {
  std::string s;
  append(s,
         "<g class=\"point-labels\" font-size=\"10\" fill=\"#222\" text-anchor=\"middle\" "
         "stroke=\"white\" stroke-width=\"3\" paint-order=\"stroke\">\n");
  for (const auto& ser : p.series)
    for (const auto& pt : ser.points) {
      if (pt.label.empty() || (p.mark && pt.x == p.mark->x && pt.y == p.mark->y)) continue;
      const double yy = f.py(pt.y) - ser.radius - 5 < f.top + 12 ? f.py(pt.y) + ser.radius + 13
                                                                 : f.py(pt.y) - ser.radius - 5;
      append(s, "<text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n", f.px(pt.x), yy,
             svg_escape(pt.label));
    }
  append(s, "</g>\n");
  return s;
}

// The marked point: a ring, and its label joined to it by a line.
std::string mark_svg(const PlotMark& mark, const PlotFrame& f) {
  const double left = f.left, top = f.top, pw = f.pw, ph = f.ph;
  const double mx = f.px(mark.x), my = f.py(mark.y);
  // The label goes to the far edge of the plot on the side of the point with more room (above
  // a curve's minimum there is nothing but the curve's arms), joined to the point by a line.
  const bool above = my > top + ph * 0.5;
  const double ty = above ? top + 18 : top + ph - 10;
  const double ly0 = above ? my - 10 : my + 10, ly1 = above ? ty + 6 : ty - 16;
  const char* anchor = mx > left + pw * 0.7 ? "end" : (mx < left + pw * 0.3 ? "start" : "middle");
  const double tx = std::string(anchor) == "start" ? std::max(mx - 10, left + 4)
                    : std::string(anchor) == "end" ? std::min(mx + 10, left + pw - 4)
                                                   : mx;
  std::string s;
  append(s,
         "<g id=\"best\"><circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"10\" fill=\"none\" "
         "stroke=\"#d62728\" stroke-width=\"3\"/>\n"
         "<line x1=\"{:.1f}\" y1=\"{:.1f}\" x2=\"{:.1f}\" y2=\"{:.1f}\" stroke=\"#d62728\" "
         "stroke-width=\"1.5\"/>\n"
         "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"12\" font-weight=\"bold\" fill=\"#d62728\" "
         "stroke=\"white\" stroke-width=\"4\" paint-order=\"stroke\" "
         "text-anchor=\"{}\">{}</text></g>\n",
         mx, my, mx, ly0, mx, ly1, tx, ty, anchor, svg_escape(mark.label));
  return s;
}

// The legend, right of the plot: each band label once, each named series, the mark.
std::string legend_svg(const Plot& p, const PlotFrame& f) {
  std::string s;
  double ly = f.top + 8;
  const double lx = f.left + f.pw + 18;
  append(s, "<g id=\"legend\" font-size=\"12\">\n");
  std::set<std::string> seen;
  for (const auto& b : p.bands) {
    if (b.label.empty() || !seen.insert(b.label).second) continue;
    append(s,
           "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"14\" height=\"14\" fill=\"{}\" "
           "fill-opacity=\"0.5\" stroke=\"#888\"/><text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
           lx, ly, b.color, lx + 20, ly + 11, svg_escape(b.label));
    ly += 22;
  }
  for (const auto& ser : p.series) {
    if (ser.name.empty()) continue;
    append(s,
           "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"{}\" opacity=\"{:.2f}\"/><text "
           "x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
           lx + 7, ly + 7, ser.color, std::max(ser.opacity, 0.5), lx + 20, ly + 11,
           svg_escape(ser.name));
    ly += 22;
  }
  if (p.mark) {
    append(s,
           "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"6\" fill=\"none\" stroke=\"#d62728\" "
           "stroke-width=\"2.5\"/><text x=\"{:.1f}\" y=\"{:.1f}\">{}</text>\n",
           lx + 7, ly + 7, lx + 20, ly + 11, svg_escape(p.mark->legend));
  }
  append(s, "</g>\n");
  return s;
}

}  // namespace

nlohmann::json plot_json(const Plot& p) {
  nlohmann::json j = {{"title", p.title},
                      {"subtitle", p.subtitle},
                      {"x_label", p.x_label},
                      {"y_label", p.y_label},
                      {"log_x", p.log_x},
                      {"bands", nlohmann::json::array()},
                      {"series", nlohmann::json::array()},
                      {"mark", nullptr}};
  for (const PlotBand& b : p.bands)
    j["bands"].push_back({{"x0", b.x0}, {"x1", b.x1}, {"color", b.color}, {"label", b.label}});
  for (const PlotSeries& s : p.series) {
    nlohmann::json pts = nlohmann::json::array();
    for (const PlotPoint& q : s.points)
      pts.push_back({{"x", q.x}, {"y", q.y}, {"fill", q.fill}, {"label", q.label}});
    j["series"].push_back({{"name", s.name},
                           {"color", s.color},
                           {"line", s.line},
                           {"radius", s.radius},
                           {"opacity", s.opacity},
                           {"points", pts}});
  }
  if (p.mark)
    j["mark"] = {
        {"x", p.mark->x}, {"y", p.mark->y}, {"label", p.mark->label}, {"legend", p.mark->legend}};
  return j;
}

std::string render_svg(const Plot& p) {
  const PlotFrame f = plot_frame(p);
  std::string s = svg_open(p.width, p.height, f.left, p.title, p.subtitle);
  s += bands_svg(p, f);
  s += y_axis_svg(f);
  s += x_axis_svg(f);
  append(s, "<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"none\" stroke=\"#333\"/>\n",
         f.left, f.top, f.pw, f.ph);
  s += svg_axis_titles(f.left, f.top, f.pw, f.ph, 48, 62, p.x_label, p.y_label);
  s += series_svg(p, f);
  s += point_labels_svg(p, f);
  if (p.mark) s += mark_svg(*p.mark, f);
  s += legend_svg(p, f);
  append(s, "</svg>\n");
  return s;
}

}  // namespace tilesim
