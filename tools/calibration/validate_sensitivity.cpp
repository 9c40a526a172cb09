#include "tools/calibration/validate_sensitivity.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include "model/error.hpp"

namespace tilesim {

namespace {

// Every dataset on the hardware it ran on with `p` set to `value(its value)`.
template <class Value>
ValidationResult rescored(const ValidationResult& base, const HardwareParam& p, const Value& value,
                          int threads) {
  std::vector<Hardware> moved = base.hardware;
  for (Hardware& hw : moved) set_param(hw, p, value(get_param(hw, p)));
  return validate_on(base.datasets, std::move(moved), threads);
}

double moved_by(double abs_moved, double abs_base) {
  if (std::isnan(abs_moved) || std::isnan(abs_base)) return 0;
  return std::abs(abs_moved - abs_base);
}

}  // namespace

std::vector<std::string> sensitivity_keys(const std::string& list) {
  std::vector<std::string> keys;
  if (list.empty()) {
    for (const HardwareParam& p : hardware_params())
      if (!p.is_integer()) keys.emplace_back(p.key);
    return keys;
  }
  std::stringstream in(list);
  for (std::string key; std::getline(in, key, ',');) {
    const HardwareParam* p = find_hardware_param(key);
    if (!p || p->is_integer())
      throw Error(fmt::format("--sensitivity-keys: '{}' is not a real-valued hardware parameter "
                              "(allowed: {})",
                              key, fmt::join(sensitivity_keys(""), ", ")),
                  ErrorKind::kInput);
    if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  }
  if (keys.empty())
    throw Error("--sensitivity-keys: expected parameters separated by commas, got '" + list + "'",
                ErrorKind::kInput);
  return keys;
}

std::vector<DatasetSensitivity> validation_sensitivity(const ValidationResult& base,
                                                       const std::vector<std::string>& keys,
                                                       double step, int threads) {
  if (!(step > 0 && step < 1))
    throw Error(fmt::format("--sensitivity-step: {} is outside (0, 1)", step), ErrorKind::kInput);
  std::vector<DatasetSensitivity> out(base.datasets.size());
  for (size_t d = 0; d < out.size(); ++d) {
    out[d].abs_mape_pct = base.scores[d].abs_mape_pct;
    out[d].norm_mape_pct = base.scores[d].norm_mape_pct;
  }
  for (const std::string& key : keys) {
    const HardwareParam& p = *find_hardware_param(key);
    const auto clamp = [&](double v) { return std::clamp(v, p.min, p.max); };
    const ValidationResult low = rescored(
        base, p, [&](double v) { return clamp(v * (1 - step)); }, threads);
    const ValidationResult high = rescored(
        base, p, [&](double v) { return clamp(v * (1 + step)); }, threads);
    for (size_t d = 0; d < out.size(); ++d) {
      ParamSwing s;
      s.key = key;
      s.value = get_param(base.hardware[d], p);
      s.low = clamp(s.value * (1 - step));
      s.high = clamp(s.value * (1 + step));
      s.abs_low = low.scores[d].abs_mape_pct;
      s.abs_high = high.scores[d].abs_mape_pct;
      s.norm_low = low.scores[d].norm_mape_pct;
      s.norm_high = high.scores[d].norm_mape_pct;
      s.swing = std::max(moved_by(s.abs_low, out[d].abs_mape_pct),
                         moved_by(s.abs_high, out[d].abs_mape_pct));
      out[d].params.push_back(std::move(s));
    }
  }
  for (DatasetSensitivity& ds : out)
    std::stable_sort(ds.params.begin(), ds.params.end(),
                     [](const ParamSwing& a, const ParamSwing& b) {
                       return a.swing != b.swing ? a.swing > b.swing : a.key < b.key;
                     });
  return out;
}

}  // namespace tilesim
