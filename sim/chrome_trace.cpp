#include "sim/chrome_trace.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/dma_attribution.hpp"

namespace tilesim {

namespace {
constexpr int kPidAiv = 1, kPidAic = 2, kPidAicpu = 3;
constexpr int64_t kOverlapTids = 1000;  // tid of a core's overlap track k: k * this + its index

std::string quoted(const std::string& s) {
  return nlohmann::json(s).dump();
}

// Times are written in whole ticks of the trace's resolution (0.1 ns). Each slice's start and end
// are rounded, and its duration is their difference: rounding keeps order, so a slice that ends
// when or before the next one on its lane starts still does in the trace (Perfetto flags the
// overlap of separately rounded ts and dur as bad nesting).
constexpr double kTicksPerUs = 1e4;

struct Ticks {
  int64_t start, end;
};

std::string tick_text(int64_t ticks) {  // ticks >= 0, in us with four decimals
  const auto per_us = static_cast<int64_t>(kTicksPerUs);
  return fmt::format("{}.{:04}", ticks / per_us, ticks % per_us);
}
}  // namespace

void write_chrome_trace(std::ostream& out, const TaskGraph& graph, const SimResult& sim,
                        const Hardware& hw) {
  auto ticks = [&](double start, double end) {
    return Ticks{std::llround(hw.cycles_to_us(start) * kTicksPerUs),
                 std::llround(hw.cycles_to_us(end) * kTicksPerUs)};
  };
  bool first = true;
  auto line = [&](const std::string& s) {
    out << (first ? "[\n" : ",\n") << s;
    first = false;
  };
  line(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":"AIV cores"}}}})",
                   kPidAiv));
  line(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":"AIC cores"}}}})",
                   kPidAic));
  line(fmt::format(R"({{"ph":"M","name":"process_name","pid":{},"args":{{"name":"AICPU"}}}})",
                   kPidAicpu));
  const int32_t naiv = static_cast<int32_t>(hw.cores.aiv);
  auto local_of = [&](size_t core) {  // a core's index among the cores of its type
    const auto c = static_cast<int64_t>(core);
    return sim.core_types[core] == CoreType::kAiv ? c : c - naiv;
  };
  for (size_t c = 0; c < sim.core_types.size(); ++c) {
    const bool aiv = sim.core_types[c] == CoreType::kAiv;
    const int64_t local = local_of(c);
    line(fmt::format(
        R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"{}{}"}}}})",
        aiv ? kPidAiv : kPidAic, local, aiv ? "AIV" : "AIC", local));
  }
  line(fmt::format(
      R"({{"ph":"M","name":"thread_name","pid":{},"tid":0,"args":{{"name":"control"}}}})",
      kPidAicpu));
  for (int32_t s = 0; s < sim.scheduler_threads; ++s)
    line(fmt::format(
        R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"scheduler{}"}}}})",
        kPidAicpu, s + 1, s));
  // Each core's tasks in start order. A task that starts before the one before it on its core
  // ends (a kernel pipelining across its tasks, model/task_overlap.hpp) goes on the core's first
  // overlap track free at its start ("AIV3 overlap 1"), so no track holds overlapping slices.
  std::vector<std::vector<size_t>> by_core(sim.core_types.size());
  for (size_t i = 0; i < sim.tasks.size(); ++i)
    if (sim.tasks[i].core >= 0) by_core[static_cast<size_t>(sim.tasks[i].core)].push_back(i);
  std::vector<int32_t> track(sim.tasks.size(), 0);
  for (size_t c = 0; c < by_core.size(); ++c) {
    auto& list = by_core[c];
    std::stable_sort(list.begin(), list.end(),
                     [&](size_t a, size_t b) { return sim.tasks[a].start < sim.tasks[b].start; });
    std::vector<int64_t> free_at;  // per track: its last slice's end, in ticks
    const bool aiv = sim.core_types[c] == CoreType::kAiv;
    for (const size_t i : list) {
      const Ticks t = ticks(sim.tasks[i].start, sim.tasks[i].end);
      size_t k = 0;
      while (k < free_at.size() && free_at[k] > t.start) ++k;
      if (k == free_at.size()) {
        free_at.push_back(0);
        if (k > 0)
          line(fmt::format(
              R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"{}{} overlap {}"}}}})",
              aiv ? kPidAiv : kPidAic, kOverlapTids * static_cast<int64_t>(k) + local_of(c),
              aiv ? "AIV" : "AIC", local_of(c), k));
      }
      free_at[k] = t.end;
      track[i] = static_cast<int32_t>(k);
    }
  }
  // A task's lane (pid, tid).
  auto lane = [&](size_t task) {
    const auto core = static_cast<size_t>(sim.tasks[task].core);
    return std::pair{sim.core_types[core] == CoreType::kAiv ? kPidAiv : kPidAic,
                     kOverlapTids * int64_t{track[task]} + local_of(core)};
  };
  for (size_t i = 0; i < sim.tasks.size(); ++i) {
    const auto& r = sim.tasks[i];
    const auto& task = graph.tasks[i];
    const auto& kind = graph.kinds[static_cast<size_t>(task.kind)];
    const auto [pid, tid] = lane(i);
    const Ticks t = ticks(r.start, r.end);
    // A graph of several launches names each task's launch.
    const std::string launch =
        graph.num_launches() > 1 ? fmt::format(R"(,"launch":{})", task.launch) : std::string();
    line(fmt::format(
        R"({{"ph":"X","name":{},"cat":{},"pid":{},"tid":{},"ts":{},"dur":{},"args":{{"taskId":{},"root":{},"psg":{}{}}}}})",
        quoted(kind.label), quoted(graph.psg_names[static_cast<size_t>(kind.psg)]), pid, tid,
        tick_text(t.start), tick_text(t.end - t.start), i, task.root,
        quoted(graph.psg_names[static_cast<size_t>(kind.psg)]), launch));
  }
  // Per-pipe tracks: a counter per core ("AIV3 pipes", one series per pipe) holding each pipe's
  // busy share of the task running there, from its start to its end (the model prices a task's
  // pipes as totals, not instruction by instruction: a share, not an instruction timeline).
  for (size_t c = 0; c < by_core.size(); ++c) {
    const auto& list = by_core[c];
    if (list.empty()) continue;
    const bool aiv = sim.core_types[c] == CoreType::kAiv;
    const auto [pid, tid] = lane(list.front());
    const std::string name = fmt::format("{}{} pipes", aiv ? "AIV" : "AIC", tid);
    auto sample = [&](int64_t at, const std::string& values) {
      line(fmt::format(R"({{"ph":"C","name":"{}","pid":{},"ts":{},"args":{{{}}}}})", name, pid,
                       tick_text(at), values));
    };
    const std::string idle =
        aiv ? R"("MTE2":0,"V":0,"MTE3":0)" : R"("MTE2":0,"MTE1":0,"CUBE":0,"MTE3":0)";
    for (size_t k = 0; k < list.size(); ++k) {
      const auto& r = sim.tasks[list[k]];
      const auto& cost = sim.kind_costs[static_cast<size_t>(graph.tasks[list[k]].kind)];
      const Ticks t = ticks(r.start, r.end);
      const double dur = r.end - r.start;
      // Waits for the core's pipes (busy with the tasks before) are not this task's DMA.
      const DmaBusy dma = shared_dma_busy(cost, dur - sim.pipe_wait_of(list[k]),
                                          sim.hit_share(list[k]), r.write_share);
      auto pct = [&](double busy) {
        return dur > 0 ? std::round(std::clamp(busy / dur, 0.0, 1.0) * 1000.0) / 10.0 : 0.0;
      };
      sample(t.start, aiv ? fmt::format(R"("MTE2":{},"V":{},"MTE3":{})", pct(dma.mte2),
                                        pct(cost.vec_busy), pct(dma.mte3))
                          : fmt::format(R"("MTE2":{},"MTE1":{},"CUBE":{},"MTE3":{})", pct(dma.mte2),
                                        pct(cost.mte1_busy), pct(cost.cube_busy), pct(dma.mte3)));
      const bool next_at_end =
          k + 1 < list.size() && ticks(sim.tasks[list[k + 1]].start, 0).start <= t.end;
      if (!next_at_end) sample(t.end, idle);
    }
  }
  // One flow arrow per dependency edge, from the predecessor's slice to the successor's. Each end
  // is bound to the slice enclosing its time ("bp":"e"), so it sits mid-slice, clear of the
  // neighbours that share the slice's first and last tick; a slice shorter than a tick has none.
  int64_t flow = 0;
  for (size_t i = 0; i < sim.tasks.size(); ++i) {
    const Ticks from = ticks(sim.tasks[i].start, sim.tasks[i].end);
    if (from.end - from.start < 2) continue;
    const auto [pid, tid] = lane(i);
    const auto src = static_cast<int32_t>(i);
    for (const int32_t* succ = graph.succ_begin(src); succ != graph.succ_end(src); ++succ) {
      const auto j = static_cast<size_t>(*succ);
      const Ticks to = ticks(sim.tasks[j].start, sim.tasks[j].end);
      if (to.end - to.start < 2) continue;
      const auto [to_pid, to_tid] = lane(j);
      line(fmt::format(
          R"({{"ph":"s","name":"dependency","cat":"dependency","id":{},"pid":{},"tid":{},"ts":{},"bp":"e"}})",
          flow, pid, tid, tick_text((from.start + from.end) / 2)));
      line(fmt::format(
          R"({{"ph":"f","name":"dependency","cat":"dependency","id":{},"pid":{},"tid":{},"ts":{},"bp":"e"}})",
          flow, to_pid, to_tid, tick_text((to.start + to.end) / 2)));
      ++flow;
    }
  }
  for (const auto& s : sim.aicpu_spans) {
    const char* what = s.kind == AicpuSpan::kBuild     ? "build+stitch"
                       : s.kind == AicpuSpan::kResolve ? "complete+resolve"
                                                       : "dispatch";
    const Ticks t = ticks(s.start, s.end);
    line(fmt::format(
        R"({{"ph":"X","name":"{}","cat":"aicpu","pid":{},"tid":{},"ts":{},"dur":{},"args":{{"taskId":{}}}}})",
        what, kPidAicpu, s.aicpu, tick_text(t.start), tick_text(t.end - t.start), s.task));
  }
  out << (first ? "[]\n" : "\n]\n");
}

}  // namespace tilesim
