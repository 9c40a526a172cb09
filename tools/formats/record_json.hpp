#pragma once
// The records every result is made of, as JSON and CSV: a kernel spec, the lowering's
// diagnostics, the Metrics record (sim/metrics.hpp) and its PSG table. One writer each, below
// every job that writes them (reports, calibration, shards).

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kernels/lowering.hpp"
#include "kernels/spec/kernel_spec.hpp"
#include "sim/metrics.hpp"

namespace tilesim {

nlohmann::json spec_to_json(const KernelSpec& spec);
nlohmann::json diagnostics_to_json(const Diagnostics& d);
// The one writer of the Metrics record: every field of metric_fields() (grouped as it says), the
// PSG and pipe tables and, with per_core, one entry per core. Run, replay, analyze and every sweep
// candidate write their figures with it.
nlohmann::json metrics_to_json(const Metrics& m, bool per_core = true);
nlohmann::json psg_to_json(const std::vector<PsgMetrics>& psg);
// The metric_fields() as CSV: the header, and one row's cells (empty cells for no metrics).
std::string metrics_csv_header();
std::string metrics_csv_cells(const Metrics* m);

}  // namespace tilesim
