#include "tools/reports/rules_report.hpp"

#include <algorithm>
#include <cmath>

#include "tools/formats/run_config.hpp"

#include "tools/formats/csv_field.hpp"

#include <map>

#include "tools/formats/text_append.hpp"

namespace tilesim {

namespace {

std::string bytes_elems(const std::optional<int64_t>& b, DType t) {
  if (!b) return "never";
  return fmt::format("{} B / {}", *b, *b / dtype_bytes(t));
}

std::string opt(const std::optional<int64_t>& v) {
  return v ? std::to_string(*v) : std::string("-");
}

bool has_thresholds(const RulesResult& r) {
  return !r.knees.empty() || !r.sweet_spots.empty() || !r.loop_zones.empty();
}

// The thresholds the checks that ran measured (a section per kind that has any).
void append_thresholds(std::string& s, const RulesResult& r) {
  if (!has_thresholds(r)) return;
  append(s, "\n  thresholds on {}\n", r.hardware);
  if (!r.knees.empty()) {
    append(s,
           "    contiguous-bytes knee (smallest contiguous run reaching 90% / 95% of the plateau;"
           " bytes / tile[-1] elements)\n");
    append(s, "      {:<6} {:<22} {:>18} {:>18} {:>14}\n", "dtype", "scenario", "90%", "95%",
           "plateau GB/s");
  }
  for (const auto& k : r.knees)
    append(s, "      {:<6} {:<22} {:>18} {:>18} {:>14.1f}\n", dtype_name(k.dtype), k.scenario,
           bytes_elems(k.knee90_bytes, k.dtype), bytes_elems(k.knee95_bytes, k.dtype),
           k.plateau_gbps);
  if (!r.sweet_spots.empty())
    append(s, "    reduction-axis sweet spot (gen_time_us along the reduction-axis tile)\n");
  for (const auto& sp : r.sweet_spots) {
    std::string curve;
    for (const auto& [v, t] : sp.curve)
      append(curve, "{}{}: {:.2f}", curve.empty() ? "" : ", ", v, t);
    append(s, "      {:<28} best {:>3} ({})  {}\n", sp.example, sp.best,
           sp.interior ? "interior" : "edge", curve);
  }
  if (!r.loop_zones.empty()) append(s, "    loop-count zones\n");
  for (const auto& z : r.loop_zones) {
    append(s,
           "      {:<28} best {}; sweet spot {}..{}; too coarse up to {}; too fragmented from {}\n",
           z.example, z.best, opt(z.sweet_from), opt(z.sweet_to), opt(z.coarse_up_to),
           opt(z.fragmented_from));
  }
}

// One line per threshold: its value on the reference and on `other`.
// A claim's own measured threshold (rules 4 and 5 keep theirs in the check's data).
const nlohmann::json* claim_threshold(const RuleCheck& k) {
  return k.data.is_object() && k.data.contains("threshold") ? &k.data["threshold"] : nullptr;
}

void append_moves(std::string& s, const RulesResult& ref, const RulesResult& other) {
  const bool claims = std::any_of(ref.checks.begin(), ref.checks.end(),
                                  [](const RuleCheck& k) { return claim_threshold(k) != nullptr; });
  if (!has_thresholds(ref) && !claims) return;
  append(s, "\n  how the thresholds move from {} to {}\n", ref.hardware, other.hardware);
  for (size_t i = 0; i < ref.checks.size() && i < other.checks.size(); ++i) {
    const nlohmann::json* a = claim_threshold(ref.checks[i]);
    const nlohmann::json* b = claim_threshold(other.checks[i]);
    if (!a || !b || ref.checks[i].id != other.checks[i].id) continue;
    const auto text = [](const nlohmann::json& v) {
      return v.is_null() ? std::string("none tried") : v.dump();
    };
    append(s, "    {} ({}): {} -> {}\n", ref.checks[i].id,
           ref.checks[i].data.value("threshold_what", std::string()), text(*a), text(*b));
  }
  for (size_t i = 0; i < ref.knees.size() && i < other.knees.size(); ++i) {
    const auto& a = ref.knees[i];
    const auto& b = other.knees[i];
    if (a.dtype != DType::kFp32) continue;  // byte knees are the same for every dtype
    append(s, "    knee 90% / 95%, {} ({}): {} / {} B -> {} / {} B\n", a.scenario,
           dtype_name(a.dtype), opt(a.knee90_bytes), opt(a.knee95_bytes), opt(b.knee90_bytes),
           opt(b.knee95_bytes));
  }
  for (size_t i = 0; i < ref.sweet_spots.size() && i < other.sweet_spots.size(); ++i)
    append(s, "    reduction-axis sweet spot, {}: {} -> {}\n", ref.sweet_spots[i].example,
           ref.sweet_spots[i].best, other.sweet_spots[i].best);
  for (size_t i = 0; i < ref.loop_zones.size() && i < other.loop_zones.size(); ++i) {
    const auto& a = ref.loop_zones[i];
    const auto& b = other.loop_zones[i];
    append(s,
           "    {}: best loop {} -> {}; too coarse up to {} -> {}; too fragmented from {} -> {}\n",
           a.example, a.best, b.best, opt(a.coarse_up_to), opt(b.coarse_up_to),
           opt(a.fragmented_from), opt(b.fragmented_from));
  }
}

}  // namespace

namespace {

// The margin line: how far apart the closest timings behind the verdict are.
std::string margin_text(const RuleCheck& k) {
  if (std::isnan(k.margin_pct)) return "margin: - (decided by thresholds, not by timings)";
  if (k.tie())
    return fmt::format(
        "margin: {:.1f}%, a tie: the timings it rests on are within the model's {:g}% "
        "resolution, so the verdict could go either way",
        k.margin_pct, kRuleTiePct);
  return fmt::format("margin: {:.1f}% between the closest timings it rests on", k.margin_pct);
}

}  // namespace

std::string format_rules(const std::vector<RulesResult>& results) {
  std::string s;
  if (results.empty()) return s;
  const RulesResult& ref = results.front();
  std::string names;
  for (const auto& r : results) names += (names.empty() ? "" : ", ") + r.hardware;
  append(s, "tilesim rules: the rulebook (shared/RULES.md) against the model on {}\n\n", names);
  std::map<std::string, int> count;
  int ties = 0;
  for (size_t i = 0; i < ref.checks.size(); ++i) {
    const RuleCheck& k = ref.checks[i];
    ++count[verdict_name(k.verdict)];
    ties += k.tie() ? 1 : 0;
    append(s, "  {:<6} {:<28} {}\n", verdict_name(k.verdict), k.id, k.claim);
    append(s, "         {}\n", k.numbers);
    append(s, "         {}\n", margin_text(k));
    if (!k.why.empty()) append(s, "         why: {}\n", k.why);
    for (size_t h = 1; h < results.size(); ++h) {
      const auto& other = results[h].checks;
      if (i >= other.size() || other[i].id != k.id) continue;
      const bool moved = other[i].verdict != k.verdict;
      append(s, "         on {}: {}{}{} - {}\n", results[h].hardware,
             verdict_name(other[i].verdict), moved ? " (moved)" : "",
             other[i].tie() ? " on a tie" : "", other[i].numbers);
    }
  }
  append(s, "\n  {} claims on {}: {} hold, {} bend, {} fail{}\n", ref.checks.size(), ref.hardware,
         count["holds"], count["bends"], count["fails"],
         ties == 0 ? std::string()
                   : fmt::format(" ({} on a tie: timings within {:g}%)", ties, kRuleTiePct));
  for (const auto& r : results) append_thresholds(s, r);
  for (size_t h = 1; h < results.size(); ++h) append_moves(s, ref, results[h]);
  return s;
}

std::string rules_csv(const std::vector<RulesResult>& results) {
  std::string s = "hardware,id,verdict,claim,numbers,margin_pct,tie\n";
  for (const auto& r : results)
    for (const auto& k : r.checks)
      s += csv_field(r.hardware) + "," + csv_field(k.id) + "," + verdict_name(k.verdict) + "," +
           csv_field(k.claim) + "," + csv_field(k.numbers) + "," +
           (std::isnan(k.margin_pct) ? std::string() : fmt::format("{:.2f}", k.margin_pct)) + "," +
           (k.tie() ? "true" : "false") + "\n";
  return s;
}

nlohmann::json rules_json(const std::vector<RulesResult>& results) {
  nlohmann::json out = nlohmann::json::array();
  for (const auto& r : results) {
    nlohmann::json j;
    j["hardware"] = r.hardware;
    for (const auto& k : r.checks)
      j["checks"].push_back(
          {{"id", k.id},
           {"claim", k.claim},
           {"verdict", verdict_name(k.verdict)},
           {"margin_pct",
            std::isnan(k.margin_pct) ? nlohmann::json(nullptr) : nlohmann::json(k.margin_pct)},
           {"tie", k.tie()},
           {"numbers", k.numbers},
           {"why", k.why},
           {"data", k.data}});
    for (const auto& k : r.knees) {
      nlohmann::json c = {
          {"dtype", std::string(dtype_name(k.dtype))},
          {"scenario", k.scenario},
          {"cores", k.cores},
          {"plateau_gbps", k.plateau_gbps},
          {"knee90_bytes", k.knee90_bytes ? nlohmann::json(*k.knee90_bytes) : nullptr},
          {"knee95_bytes", k.knee95_bytes ? nlohmann::json(*k.knee95_bytes) : nullptr}};
      for (const auto& p : k.points)
        c["curve"].push_back({{"contiguous_bytes", p.contiguous_bytes},
                              {"gbps", p.gbps},
                              {"efficiency", p.efficiency}});
      j["thresholds"]["contiguity_knees"].push_back(c);
    }
    for (const auto& sp : r.sweet_spots) {
      nlohmann::json c = {
          {"example", sp.example}, {"axis", sp.axis}, {"best", sp.best}, {"interior", sp.interior}};
      for (const auto& [v, t] : sp.curve) c["curve"].push_back({{"tile", v}, {"gen_time_us", t}});
      j["thresholds"]["reduction_sweet_spots"].push_back(c);
    }
    for (const auto& z : r.loop_zones) {
      auto opt = [](const std::optional<int64_t>& v) { return v ? nlohmann::json(*v) : nullptr; };
      nlohmann::json c = {{"example", z.example},
                          {"best", z.best},
                          {"sweet_from", opt(z.sweet_from)},
                          {"sweet_to", opt(z.sweet_to)},
                          {"too_coarse_up_to", opt(z.coarse_up_to)},
                          {"too_fragmented_from", opt(z.fragmented_from)}};
      for (const auto& p : z.curve)
        c["curve"].push_back({{"loop_count", p.loop_count},
                              {"gen_time_us", p.gen_time_us},
                              {"zone", zone_name(p.zone)}});
      j["thresholds"]["loop_count_zones"].push_back(c);
    }
    out.push_back(j);
  }
  return {{"results", out}};
}

std::vector<RulesResult> check_rules_on(const std::vector<std::string>& hardware,
                                        const RulesOptions& options,
                                        const std::vector<std::string>& settings) {
  std::vector<RulesResult> results;
  for (const auto& n : hardware)
    results.push_back(check_rules(load_hardware(resolve_hardware_arg(n), settings), options));
  return results;
}

}  // namespace tilesim
