#include "tools/analyses/sweep_lever.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "tools/analyses/binding.hpp"

namespace tilesim {

namespace {

double idle_cores(const std::vector<ResourceUse>& uses) {
  return !uses.empty() && uses.back().name == "idle cores" ? uses.back().used : 0;
}

// What lowers a binding resource's floor (its busy time at 100% use).
const char* what_lowers(const std::string& resource) {
  static const std::map<std::string, const char*> hints = {
      {"HBM bandwidth", "less GM traffic (fewer bytes, or more of them L2 hits)"},
      {"L2 bandwidth", "less GM traffic (fewer bytes moved)"},
      {"MTE2", "fewer, longer copy-in bursts (contiguous rows of 1 KB or more)"},
      {"MTE3", "fewer, longer copy-out bursts"},
      {"MTE1", "fewer L0 loads (larger L0 tiles)"},
      {"V", "less vector work (a cheaper op mix, fewer repeats)"},
      {"CUBE", "fewer fractals (no padding of the L0 tiles)"},
      {"scheduler", "fewer dispatches (fewer, larger tasks)"},
      {"fixed costs", "fewer launches (fusing with a neighbouring kernel)"}};
  const auto it = hints.find(resource);
  return it == hints.end() ? "less of its work" : it->second;
}

}  // namespace

std::string next_lever(const SweepConfig& cfg, const Hardware& hw, const SweepResult& res) {
  if (!res.recommended) return "";
  const CandidateResult& b = res.candidates[*res.recommended];
  const auto uses = resource_uses(b, hw);
  if (uses.empty()) return "";
  const double tb = objective_us(b, cfg.objective);
  if (const double idle = idle_cores(uses); idle > 0) {
    const std::string cores = fmt::format("the {:.0f} idle cores", idle);
    for (size_t i : res.ranking) {
      const CandidateResult& c = res.candidates[i];
      const double ci = idle_cores(resource_uses(c, hw));
      if (ci >= idle) continue;
      const double tc = objective_us(c, cfg.objective);
      const double gap = tb > 0 ? (tc / tb - 1.0) * 100.0 : 0;
      return fmt::format(
          "next lever: {}: {} uses {:.0f} of them at {:.3f} us, {:+.1f}% ({})", cores,
          candidate_label(c), idle - ci, tc, gap,
          tc <= tb * (1.0 + cfg.zones.tolerance)
              ? fmt::format("within the {:.1f}% tie tolerance: noise", cfg.zones.tolerance * 100)
              : "slower: filling them costs more than it gains");
    }
    return fmt::format(
        "next lever: {}: no candidate of this sweep uses more of them (a larger grid or loop "
        "count, or smaller tiles, would)",
        cores);
  }
  const ResourceUse& top = uses.front();
  const double base = top.name == "fixed costs" ? b.kernel_time_us : b.gen_time_us;
  const double rest = std::max(0.0, 1.0 - top.share);
  return fmt::format(
      "next lever: {} is {:.0f}% used: overlap can gain at most the other {:.0f}% ({:.3f} us of "
      "{:.3f}); below that only {} helps",
      top.name, top.share * 100.0, rest * 100.0, base * rest, base, what_lowers(top.name));
}

}  // namespace tilesim
