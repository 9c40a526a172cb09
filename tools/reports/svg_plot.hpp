#pragma once
// A small, dependency-free SVG line/scatter plot: labelled axes (x optionally log2), shaded
// vertical bands (zones), point series, and one marked point. Used by `tilesim sweep --svg`.

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tilesim {

struct PlotPoint {
  double x = 0;
  double y = 0;
  std::string fill;   // marker colour ("" : the series colour)
  std::string label;  // text beside the marker ("" : none)
};

struct PlotSeries {
  std::string name;  // legend entry ("" : not in the legend)
  std::string color;
  bool line = true;    // join the points (in x order)
  double radius = 4;   // marker radius in px (0: no markers)
  double opacity = 1;  // marker and line opacity
  std::vector<PlotPoint> points;
};

struct PlotBand {
  double x0 = 0, x1 = 0;  // data coordinates
  std::string color;
  std::string label;  // legend entry (one per distinct label)
};

struct PlotMark {
  double x = 0, y = 0;
  std::string label;
  std::string legend = "recommended";  // its legend entry
};

struct Plot {
  std::string title;
  std::string subtitle;
  std::string x_label;
  std::string y_label;
  bool log_x = true;  // base-2 log scale
  int width = 900, height = 540;
  std::vector<PlotBand> bands;
  std::vector<PlotSeries> series;
  std::optional<PlotMark> mark;
};

std::string render_svg(const Plot& plot);
// The plot's data (what render_svg draws), for other renderers: Python's matplotlib plot draws
// the same series, bands and mark as `--svg`.
nlohmann::json plot_json(const Plot& plot);
// Escapes &, <, >, " for SVG text and attributes.
std::string svg_escape(const std::string& s);
// The document's opening: the <svg> element, a white page, the title and subtitle at `left`.
std::string svg_open(double width, double height, double left, const std::string& title,
                     const std::string& subtitle);
// The axis titles: x centred `below` px under the plot area, y rotated `aside` px left of it.
std::string svg_axis_titles(double left, double top, double pw, double ph, double below,
                            double aside, const std::string& x_label, const std::string& y_label);

}  // namespace tilesim
