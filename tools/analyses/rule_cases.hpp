#pragma once
// What the rulebook's checks share (internal to tools/analyses/rules*.cpp): the case runner that
// runs each sweep once however many claims read it, and the helpers that phrase a check's numbers
// and verdict.

#include <map>
#include <string>
#include <vector>

#include "model/hardware.hpp"
#include "tools/analyses/rules.hpp"
#include "tools/analyses/sweep.hpp"
#include "tools/formats/sweep_config.hpp"

namespace tilesim {

// "Close" for the rulebook's "8 and 32 close behind" and for near-ties: within 10%.
inline constexpr double kClose = 0.10;

struct Ran {
  SweepConfig cfg;
  SweepResult res;
};

// Runs the rule cases on one hardware description; each sweep runs once however many claims
// read it.
class Cases {
 public:
  Cases(const Hardware& hw, const RulesOptions& opt) : hw_(hw) { opt_.threads = opt.threads; }
  int threads() const { return opt_.threads; }
  const Hardware& hw() const { return hw_; }

  static SweepConfig shipped(const std::string& file);
  // The sweep `cfg` (over `candidates`, or its own) under `key`, run once; its objective is
  // gen_time, the rulebook's.
  const Ran& run(const std::string& key, const SweepConfig& cfg,
                 std::vector<Candidate> candidates = {});
  const Ran& shipped_run(const std::string& file) { return run(file, shipped(file)); }

 private:
  const Hardware& hw_;
  SweepOptions opt_;
  std::map<std::string, Ran> ran_;
};

// The candidate of `r` with this tile (and loop count); throws naming the sweep when it is
// missing or was rejected.
const CandidateResult& find(const Ran& r, const Dims& tile, int64_t loop = -1);
// The recommended candidate; throws when none could be evaluated.
const CandidateResult& best(const Ran& r);

std::string us(double t);                  // "12.34 us"
std::string gap_text(double a, double b);  // a against b: "+3.1%"
std::string tile_time(const CandidateResult& c);
bool flagged(const CandidateResult& c, const std::string& flag);

// A check before its verdict: `data` collects the figures (an array of cases by default).
RuleCheck new_check(std::string id, std::string claim,
                    nlohmann::json data = nlohmann::json::array());
// The verdict compares timings a and b: the check's margin is its closest such pair.
void compared(RuleCheck& k, double a, double b);
Verdict count_verdict(int held, int cases);
std::string join(const std::vector<std::string>& parts, const char* sep = "; ");

}  // namespace tilesim
