#pragma once
// `tilesim validate --sensitivity`: which hardware parameter moves each dataset's error most, so a
// user knows what to measure on their own board. Each parameter (default: every real-valued one
// of the table, model/hardware.hpp) is moved by -step and +step of its value on each dataset's own
// hardware, one parameter at a time, clamped to its allowed range, and every dataset is scored
// again; per dataset the parameters are ranked by the larger change of its absolute MAPE (ties by
// key). A parameter at 0 cannot move by a fraction of itself and is reported unmoved.

#include <string>
#include <vector>

#include "tools/calibration/validate.hpp"

namespace tilesim {

struct ParamSwing {
  std::string key;
  double value = 0;          // on the dataset's hardware
  double low = 0, high = 0;  // the moved values (clamped to the parameter's range)
  // The dataset's pooled MAPEs with the parameter at low and at high (NaN: no point evaluated).
  double abs_low = 0, abs_high = 0, norm_low = 0, norm_high = 0;
  double swing = 0;  // max |absolute MAPE moved - absolute MAPE at value| (NaN counts as 0)
};

struct DatasetSensitivity {
  double abs_mape_pct = 0, norm_mape_pct = 0;  // at the hardware's own values
  std::vector<ParamSwing> params;              // largest swing first
};

// The parameters a list names ("a,b": each a real-valued parameter of the table; unknown or
// integer ones are refused naming the allowed ones); "" is every real-valued parameter.
std::vector<std::string> sensitivity_keys(const std::string& list);

// One entry per dataset of `base` (base as validate returned it: its scores are the reference).
// Each dataset runs on the hardware it ran on in `base`; `step` is the fraction each parameter
// moves (0 < step < 1); threads as validate's.
std::vector<DatasetSensitivity> validation_sensitivity(const ValidationResult& base,
                                                       const std::vector<std::string>& keys,
                                                       double step, int threads);

}  // namespace tilesim
