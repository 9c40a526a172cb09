#include "sim/chrome_trace.hpp"

#include <fmt/format.h>
#include <fmt/ostream.h>

#include <nlohmann/json.hpp>

namespace tilesim {

namespace {
constexpr int kPidAiv = 1, kPidAic = 2, kPidAicpu = 3;

std::string quoted(const std::string& s) {
  return nlohmann::json(s).dump();
}
}  // namespace

void write_chrome_trace(std::ostream& out, const TaskGraph& graph, const SimResult& sim,
                        const Hardware& hw) {
  auto us = [&](double cycles) { return hw.cycles_to_us(cycles); };
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
  for (size_t c = 0; c < sim.core_types.size(); ++c) {
    const bool aiv = sim.core_types[c] == CoreType::kAiv;
    const int32_t local = aiv ? static_cast<int32_t>(c) : static_cast<int32_t>(c) - naiv;
    line(fmt::format(
        R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"{}{}"}}}})",
        aiv ? kPidAiv : kPidAic, local, aiv ? "AIV" : "AIC", local));
  }
  line(fmt::format(
      R"({{"ph":"M","name":"thread_name","pid":{},"tid":0,"args":{{"name":"control"}}}})",
      kPidAicpu));
  for (int64_t s = 0; s < hw.scheduler.threads; ++s)
    line(fmt::format(
        R"({{"ph":"M","name":"thread_name","pid":{},"tid":{},"args":{{"name":"scheduler{}"}}}})",
        kPidAicpu, s + 1, s));
  for (size_t i = 0; i < sim.tasks.size(); ++i) {
    const auto& r = sim.tasks[i];
    const auto& task = graph.tasks[i];
    const auto& kind = graph.kinds[static_cast<size_t>(task.kind)];
    const bool aiv = sim.core_types[static_cast<size_t>(r.core)] == CoreType::kAiv;
    const int32_t local = aiv ? r.core : r.core - naiv;
    line(fmt::format(
        R"({{"ph":"X","name":{},"cat":{},"pid":{},"tid":{},"ts":{:.4f},"dur":{:.4f},"args":{{"taskId":{},"root":{},"psg":{}}}}})",
        quoted(kind.label), quoted(graph.psg_names[static_cast<size_t>(kind.psg)]),
        aiv ? kPidAiv : kPidAic, local, us(r.start), us(r.end - r.start), i, task.root,
        quoted(graph.psg_names[static_cast<size_t>(kind.psg)])));
  }
  for (const auto& s : sim.aicpu_spans) {
    const char* what = s.kind == AicpuSpan::kBuild     ? "build+stitch"
                       : s.kind == AicpuSpan::kResolve ? "complete+resolve"
                                                       : "dispatch";
    line(fmt::format(
        R"({{"ph":"X","name":"{}","cat":"aicpu","pid":{},"tid":{},"ts":{:.4f},"dur":{:.4f},"args":{{"taskId":{}}}}})",
        what, kPidAicpu, s.aicpu, us(s.start), us(s.end - s.start), s.task));
  }
  out << (first ? "[]\n" : "\n]\n");
}

}  // namespace tilesim
