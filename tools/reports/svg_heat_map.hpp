#pragma once
// A dependency-free SVG heat map: a grid of labelled cells, each coloured by its value on a log
// scale from the smallest (best) to the largest, the value written in the cell, empty cells
// marked, one cell outlined. Used by `tilesim sweep --svg-map` (time over two swept axes).

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace tilesim {

struct HeatMap {
  std::string title, subtitle;
  std::string x_label, y_label, value_label;
  std::vector<std::string> xs, ys;  // column and row labels (rows bottom to top)
  // values[row][col]; NaN: no value (the cell says `empty_text`, or "x" when it has a note).
  std::vector<std::vector<double>> values;
  std::vector<std::vector<std::string>> notes;  // a cell's hover text (may be empty)
  std::string empty_text = "-";
  std::optional<std::pair<size_t, size_t>> mark;  // (row, col) outlined
  std::string mark_label;
};

std::string render_heat_map_svg(const HeatMap& map);
// The map's data (what render_heat_map_svg draws; an empty cell's value is null), for other
// renderers (Python's matplotlib plot).
nlohmann::json heat_map_json(const HeatMap& map);

}  // namespace tilesim
