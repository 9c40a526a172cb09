#pragma once
// `tilesim rules`: every claim of the rulebook (shared/RULES.md) checked against the model on one
// hardware description, each with a verdict and the numbers that decide it, and the rulebook's
// thresholds measured from the model (the contiguous-bytes knee, the reduction-axis sweet spots,
// the loop-count zones).
//
// The cases are the shipped sweep configs (configs/sweeps/rule*.json), read from the config
// directory and run on the hardware given, plus variants built from them (finer reduction-axis
// series, other matmul m, other rule 3 shapes). Verdicts:
//   holds - the model reproduces the claim in every case;
//   bends - it holds in some cases or only approximately (the numbers say where it does not);
//   fails - the model contradicts it.

#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/hardware.hpp"
#include "model/tile_geometry.hpp"
#include "tools/analyses/contiguity_knee.hpp"
#include "tools/analyses/zones.hpp"

namespace tilesim {

enum class Verdict { kHolds, kBends, kFails };
inline constexpr std::array<EnumName<Verdict>, 3> kVerdictNames = {
    {{Verdict::kHolds, "holds"}, {Verdict::kBends, "bends"}, {Verdict::kFails, "fails"}}};
const char* verdict_name(Verdict v);  // "holds", "bends", "fails"

// Two timings closer than this (in percent of the faster) are a tie: the zones' tolerance, the
// closeness the model's sweeps already call a tie.
inline constexpr double kRuleTiePct = 100 * ZoneOptions{}.tolerance;

struct RuleCheck {
  std::string id;     // stable key, e.g. "rule1.contiguous"
  std::string claim;  // the rulebook's claim, one line
  Verdict verdict = Verdict::kFails;
  std::string numbers;  // the figures that decide it, one line
  nlohmann::json data;  // the same figures, structured
  std::string why;      // a bend or a failure: the mechanism behind it and its source
  // The closest pair of timings the verdict rests on: their gap in percent of the faster (NaN
  // when no timing comparison decides it, as for the knee's thresholds).
  double margin_pct = std::numeric_limits<double>::quiet_NaN();
  // The verdict rests on timings within kRuleTiePct of each other: the model cannot tell them
  // apart, so the verdict says as little.
  bool tie() const { return margin_pct < kRuleTiePct; }
};

// Modeled time along the reduction-axis tile of one example, other tile dims fixed.
struct ReductionSweetSpot {
  std::string example;
  Dims tile_template;  // the tile with the reduction-axis entry set to 0
  int axis = 0;
  std::vector<std::pair<int64_t, double>> curve;  // reduction-axis tile, gen_time_us
  int64_t best = 0;
  bool interior = false;  // neither the smallest nor the largest value tried
};

// The loop-count sweep of one example with its zones.
struct LoopCountZones {
  std::string example;
  struct Point {
    int64_t loop_count;
    double gen_time_us;
    Zone zone;
    std::string evidence;  // why the zone (tools/analyses/zones.hpp)
  };
  std::vector<Point> curve;  // ascending loop count
  int64_t best = 0;
  std::optional<int64_t> coarse_up_to;          // largest loop count classified too coarse
  std::optional<int64_t> fragmented_from;       // smallest loop count classified too fragmented
  std::optional<int64_t> sweet_from, sweet_to;  // the sweet-spot range
};

struct RulesResult {
  std::string hardware;  // the description's name
  std::vector<RuleCheck> checks;
  std::vector<KneeCurve> knees;
  std::vector<ReductionSweetSpot> sweet_spots;
  std::vector<LoopCountZones> loop_zones;
};

struct RulesOptions {
  int threads = 0;                // 0: every core
  std::vector<std::string> only;  // claim ids or prefixes ("rule2"); empty: every claim
};

// Every claim id, in report order.
std::vector<std::string> rule_ids();

// Runs every check on `hw`. Throws tilesim::Error when a shipped case is missing or rejected.
RulesResult check_rules(const Hardware& hw, const RulesOptions& options = {});

}  // namespace tilesim
