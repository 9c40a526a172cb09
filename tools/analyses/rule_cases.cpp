#include "tools/analyses/rule_cases.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "model/error.hpp"
#include "tools/analyses/zones.hpp"
#include "tools/formats/run_config.hpp"

namespace tilesim {

SweepConfig Cases::shipped(const std::string& file) {
  return load_sweep_config(default_config_dir() / "sweeps" / file);
}

const Ran& Cases::run(const std::string& key, const SweepConfig& cfg,
                      std::vector<Candidate> candidates) {
  auto it = ran_.find(key);
  if (it != ran_.end()) return it->second;
  // The rulebook states its curves in gen_time (PyPTO's swimlane span), whatever a sweep's
  // default objective.
  SweepConfig c = cfg;
  c.objective = Objective::kGenTime;
  Ran r{c, run_sweep(c, hw_, opt_, std::move(candidates))};
  return ran_.emplace(key, std::move(r)).first->second;
}

const CandidateResult& find(const Ran& r, const Dims& tile, int64_t loop) {
  for (const auto& c : r.res.candidates)
    if (c.tile == tile && (loop < 0 || c.loop_count == loop)) {
      if (!c.ok)
        throw Error(fmt::format("rules: {}: candidate tile {} loop {} was rejected: {}",
                                r.cfg.path.string(), format_dims(tile), c.loop_count, c.reason));
      return c;
    }
  throw Error(fmt::format("rules: {}: no candidate tile {}{}", r.cfg.path.string(),
                          format_dims(tile), loop < 0 ? "" : fmt::format(" loop {}", loop)));
}

const CandidateResult& best(const Ran& r) {
  if (!r.res.recommended)
    throw Error("rules: " + r.cfg.path.string() + ": no candidate could be evaluated");
  return r.res.candidates[*r.res.recommended];
}

std::string us(double t) {
  return fmt::format("{:.2f} us", t);
}
std::string gap_text(double a, double b) {
  return fmt::format("{:+.1f}%", gap_pct(a, b));
}
std::string tile_time(const CandidateResult& c) {
  return fmt::format("{} {}", format_dims(c.tile), us(c.gen_time_us));
}
bool flagged(const CandidateResult& c, const std::string& flag) {
  const auto f = c.flags();
  return std::find(f.begin(), f.end(), flag) != f.end();
}

RuleCheck new_check(std::string id, std::string claim, nlohmann::json data) {
  return RuleCheck{std::move(id), std::move(claim), Verdict::kFails, "", std::move(data), ""};
}

void compared(RuleCheck& k, double a, double b) {
  const double gap = std::abs(a - b) / std::min(a, b) * 100;
  if (!(k.margin_pct <= gap)) k.margin_pct = gap;
}

Verdict count_verdict(int held, int cases) {
  return held == cases ? Verdict::kHolds : held > 0 ? Verdict::kBends : Verdict::kFails;
}

std::string join(const std::vector<std::string>& parts, const char* sep) {
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : sep) + p;
  return s;
}

}  // namespace tilesim
