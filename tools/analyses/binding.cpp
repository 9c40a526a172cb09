#include "tools/analyses/binding.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace tilesim {

namespace {

ResourceUse use(std::string name, double used, double capacity, std::string unit,
                const std::string& what) {
  ResourceUse u{std::move(name), used, capacity, std::move(unit), 0, ""};
  u.share = capacity > 0 ? used / capacity : 0;
  const int digits = u.unit == "cores" ? 0 : 1;
  u.text = fmt::format("{}: {:.{}f} of {:.{}f} {} ({:.0f}%)", what, used, digits, capacity, digits,
                       u.unit, u.share * 100.0);
  return u;
}

}  // namespace

std::vector<ResourceUse> resource_uses(const Metrics& m, const Hardware& hw) {
  std::vector<ResourceUse> uses;
  if (m.gen_time_us <= 0) return uses;
  // Traffic above HBM's bandwidth was partly served by L2: then L2's bandwidth is the bound.
  if (m.achieved_gm_gbps <= hw.gm.hbm_bandwidth_gbps || hw.l2.bandwidth_gbps <= 0)
    uses.push_back(use("HBM bandwidth", m.achieved_gm_gbps, hw.gm.hbm_bandwidth_gbps, "GB/s",
                       "GM traffic against HBM bandwidth"));
  else {
    uses.push_back(use("L2 bandwidth", m.achieved_gm_gbps, hw.l2.bandwidth_gbps, "GB/s",
                       fmt::format("GM traffic (above HBM's {:.0f} GB/s: L2 hits) against L2 "
                                   "bandwidth",
                                   hw.gm.hbm_bandwidth_gbps)));
    // Reads have a lower bound of their own (sim/shared_bandwidth.hpp).
    const double reads = m.gm_read_bytes / (m.gen_time_us * 1e3);
    uses.push_back(use("L2 read bandwidth", reads, hw.l2.read_bandwidth_gbps, "GB/s",
                       "GM reads against L2's read bandwidth"));
  }
  for (const PipeMetrics& p : m.pipes)
    if (p.max_us > 0)
      uses.push_back(use(p.pipe, p.max_us, m.gen_time_us, "us",
                         fmt::format("{} of the busiest core", p.pipe)));
  if (!m.per_core.empty()) {
    double wait = 0;
    for (const CoreMetrics& c : m.per_core) wait += c.wait_schedule_time_us;
    uses.push_back(use("scheduler", wait / static_cast<double>(m.per_core.size()), m.gen_time_us,
                       "us", "Wait Schedule per core (waiting for a dispatch)"));
  }
  if (m.kernel_time_us > 0)
    uses.push_back(use("fixed costs",
                       m.launch_us + m.handshake_us + m.head_us + m.completion_us + m.end_us,
                       m.kernel_time_us, "us",
                       "the fixed costs (launch, hand-shake, builds, first dispatch, last "
                       "release, end)"));
  std::stable_sort(uses.begin(), uses.end(),
                   [](const ResourceUse& a, const ResourceUse& b) { return a.share > b.share; });
  // Idle cores bound nothing; they are the lever left (a grid or loop count that fills them), so
  // they come last. Counted for the core type that ran: AIV unless only cube cores ran.
  int64_t aiv = 0, aic = 0;
  for (const CoreMetrics& c : m.per_core) (c.type == CoreType::kAic ? aic : aiv) += 1;
  const int64_t total = aiv > 0 ? hw.cores.aiv : hw.cores.aic;
  const int64_t ran = aiv > 0 ? aiv : aic;
  if (total > ran)
    uses.push_back(use("idle cores", static_cast<double>(total - ran), static_cast<double>(total),
                       "cores", fmt::format("{} cores that ran no task", aiv > 0 ? "AIV" : "AIC")));
  return uses;
}

bool co_bound(const std::vector<ResourceUse>& uses) {
  if (uses.size() < 2) return false;
  const ResourceUse &a = uses[0], &b = uses[1];
  for (const ResourceUse* u : {&a, &b})
    if (u->name == "idle cores" || u->name == "fixed costs") return false;
  return b.share > 0.5 && a.share - b.share <= kCoBoundShare;
}

std::string binding_text(const std::vector<ResourceUse>& uses) {
  if (uses.empty()) return "";
  std::string s = "bound by " + uses.front().text;
  size_t shown = 1;
  if (co_bound(uses)) {
    // Relieving the first leaves the second's floor, and the other way round.
    const double gain = 1 - std::min(uses[0].share, uses[1].share);
    s = fmt::format(
        "co-bound by {} and {}: within {:.0f} points of each other, relieving either alone gains "
        "at most {:.0f}% (the other's floor)",
        uses[0].text, uses[1].text, kCoBoundShare * 100, std::max(gain, 0.0) * 100);
    shown = 2;
  }
  const size_t first_then = shown;
  for (size_t i = shown; i < uses.size() && shown < 3; ++i)
    if (uses[i].name != "idle cores")
      s += (shown++ == first_then ? "; then " : ", ") + uses[i].text;
  if (uses.back().name == "idle cores" && uses.size() > 1) s += "; " + uses.back().text;
  return s;
}

}  // namespace tilesim
