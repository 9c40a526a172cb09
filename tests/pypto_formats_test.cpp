// PyPTO's formats: fixed-latency task graphs (replay, export) and swimlane traces (analyze), on
// hand-written fixtures with hand-computed metrics.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <ostream>
#include <random>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "model/error.hpp"
#include "sim/chrome_trace.hpp"
#include "sim/metrics.hpp"
#include "sim/simulator.hpp"
#include "sim/timeline_metrics.hpp"
#include "test_support.hpp"
#include "tools/analyses/run_kernel.hpp"
#include "tools/formats/json_array_scanner.hpp"
#include "tools/formats/json_stream.hpp"
#include "tools/formats/pypto_graph.hpp"
#include "tools/formats/run_config.hpp"
#include "tools/formats/swimlane.hpp"

namespace tilesim {
namespace {

using test::error_of;
using test::ideal_runtime_hw;
using test::source_path;

// ---------------------------------------------------------------- helpers

PyptoGraph graph_of(const std::string& text) {
  return pypto_graph_from_json(nlohmann::json::parse(text), "fixture.json");
}

SwimlaneTrace trace_of(const std::string& text) {
  return swimlane_from_json(nlohmann::json::parse(text), "trace.json");
}

const CoreMetrics* core_named(const SwimlaneAnalysis& a, const std::string& name) {
  for (const auto& c : a.metrics.per_core)
    if (a.lanes.at(static_cast<size_t>(c.core)).name == name) return &c;
  return nullptr;
}

const PsgMetrics* psg_named(const Metrics& m, const std::string& name) {
  for (const auto& p : m.psg)
    if (p.name == name) return &p;
  return nullptr;
}

const CoreMetrics* core_of(const Metrics& m, int32_t core) {
  for (const auto& c : m.per_core)
    if (c.core == core) return &c;
  return nullptr;
}

using test::CmdResult;
using test::run_cli;

std::string temp_file(const std::string& name, const std::string& text = "") {
  // Per process: other build trees may run this test at the same time.
  const auto dir = std::filesystem::temp_directory_path() /
                   ("tilesim_pypto_formats_test." + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  const auto path = dir / name;
  std::ofstream(path) << text;
  return path.string();
}

// Fan-out (10 -> 20, 21), fan-in (20, 21 -> 30; 10, 11 -> 21), AIV and AIC mixed; taskIds are
// not task indices.
const char* kSmallGraph = R"([
  {"taskId": 10, "funcName": "pre", "coreType": "AIV", "execTime": 100, "remainingPredecessors": 0, "successors": [20, 21]},
  {"taskId": 11, "funcName": "pre", "coreType": "AIV", "execTime": 100, "remainingPredecessors": 0, "successors": [21]},
  {"taskId": 20, "funcName": "mm", "coreType": "AIC", "execTime": 300, "remainingPredecessors": 1, "successors": [30]},
  {"taskId": 21, "funcName": "mm", "coreType": "AIC", "execTime": 300, "remainingPredecessors": 2, "successors": [30]},
  {"taskId": 30, "funcName": "post", "coreType": "AIV", "execTime": 50, "remainingPredecessors": 2, "successors": [], "semanticLabel": "x", "predecessors": [20, 21]}
])";

// ---------------------------------------------------------------- fixed-latency graphs

TEST(PyptoGraph, ParsesTasksKindsAndEdges) {
  const PyptoGraph pg = graph_of(kSmallGraph);
  const TaskGraph& g = pg.graph;
  ASSERT_EQ(g.tasks.size(), 5u);
  EXPECT_EQ(pg.task_ids, (std::vector<int64_t>{10, 11, 20, 21, 30}));
  EXPECT_EQ(g.kinds.size(), 3u);  // (pre, AIV, 100), (mm, AIC, 300), (post, AIV, 50)
  EXPECT_EQ(g.psg_names, (std::vector<std::string>{"pre", "mm", "post"}));
  EXPECT_EQ(g.num_edges(), 5);
  EXPECT_EQ(g.num_roots(), 1);
  EXPECT_EQ(g.indegree(3), 2);
  EXPECT_EQ(g.indegree(4), 2);
  EXPECT_EQ(g.kinds[static_cast<size_t>(g.tasks[2].kind)].core, CoreType::kAic);
  EXPECT_DOUBLE_EQ(pg.kind_costs[static_cast<size_t>(g.tasks[2].kind)].cycles, 300);
  EXPECT_EQ(pg.kind_costs[static_cast<size_t>(g.tasks[2].kind)].gm_bytes(), 0);
  EXPECT_TRUE(pg.warnings.empty());
}

TEST(PyptoGraph, SameFuncNameWithOtherTimesIsOnePsgSeveralKinds) {
  const PyptoGraph pg = graph_of(R"([
    {"taskId": 0, "funcName": "f", "coreType": "AIV", "execTime": 10, "remainingPredecessors": 0, "successors": []},
    {"taskId": 1, "funcName": "f", "coreType": "AIV", "execTime": 20.5, "remainingPredecessors": 0, "successors": []},
    {"taskId": 2, "funcName": "f", "coreType": "AIV", "execTime": 10, "remainingPredecessors": 0, "successors": []}
  ])");
  EXPECT_EQ(pg.graph.kinds.size(), 2u);
  EXPECT_EQ(pg.graph.psg_names.size(), 1u);
  EXPECT_EQ(pg.graph.tasks[0].kind, pg.graph.tasks[2].kind);
}

// One AIV and one AIC core, no runtime overheads: the schedule is computed by hand (cycles).
//   AIV: 10 [0,100], 11 [100,200] (pending slot), 30 [700,750]
//   AIC: 20 [100,400] (ready when 10 ends), 21 [400,700] (ready at 200, waits for the core)
TEST(Replay, ClosedFormOnOneCorePerType) {
  Hardware hw = ideal_runtime_hw();
  hw.cores.aiv = 1;
  hw.cores.aic = 1;
  const PyptoGraph pg = graph_of(kSmallGraph);
  const SimResult r = simulate_costed(pg.graph, pg.kind_costs, hw);
  const double exp_start[] = {0, 100, 100, 400, 700}, exp_end[] = {100, 200, 400, 700, 750};
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_DOUBLE_EQ(r.tasks[i].start, exp_start[i]) << "task " << i;
    EXPECT_DOUBLE_EQ(r.tasks[i].end, exp_end[i]) << "task " << i;
  }
  const Metrics m = compute_metrics(pg.graph, r, hw);
  const auto us = [&](double cycles) { return cycles / hw.clock_mhz; };
  EXPECT_NEAR(m.gen_time_us, us(750), 1e-12);
  ASSERT_EQ(m.per_core.size(), 2u);
  const CoreMetrics* aiv = core_of(m, 0);
  const CoreMetrics* aic = core_of(m, 1);
  ASSERT_TRUE(aiv && aic);
  EXPECT_EQ(aiv->execute_task_num, 3);
  EXPECT_NEAR(aiv->core_total_work_time_us, us(750), 1e-12);
  EXPECT_NEAR(aiv->total_wait_time_us, us(500), 1e-12);  // 30 waits 200 -> 700
  EXPECT_NEAR(aiv->wait_schedule_time_us, 0, 1e-12);     // ... all of it for its predecessors
  EXPECT_NEAR(aiv->wait_predecessor_time_us, us(500), 1e-12);
  EXPECT_EQ(aic->execute_task_num, 2);
  EXPECT_NEAR(aic->core_total_work_time_us, us(700), 1e-12);
  EXPECT_NEAR(aic->total_wait_time_us, us(100), 1e-12);
  EXPECT_NEAR(aic->wait_schedule_time_us, 0, 1e-12);
  EXPECT_NEAR(aic->wait_predecessor_time_us, us(100), 1e-12);
  const PsgMetrics* mm = psg_named(m, "mm");
  ASSERT_TRUE(mm);
  EXPECT_EQ(mm->count, 2);
  EXPECT_NEAR(mm->sum_dur_us, us(600), 1e-12);
  EXPECT_NEAR(mm->avg_dur_us, us(300), 1e-12);
}

// The shipped example on a machine without runtime overheads runs at its critical path:
// cast_in 1 us -> matmul 5 us -> bias_add 2 us -> reduce 1 us = 9 us.
TEST(Replay, ShippedExampleRunsAtItsCriticalPathWithoutOverheads) {
  const Hardware hw = ideal_runtime_hw();
  const PyptoGraph pg = load_pypto_graph(source_path("configs/pypto/example_graph.json"));
  EXPECT_TRUE(pg.warnings.empty());
  const SimResult r = simulate_costed(pg.graph, pg.kind_costs, hw);
  const Metrics m = compute_metrics(pg.graph, r, hw);
  EXPECT_NEAR(m.gen_time_us, 9.0, 1e-9);
  int64_t aiv = 0, aic = 0;
  for (const auto& c : m.per_core) (c.type == CoreType::kAiv ? aiv : aic) += c.execute_task_num;
  EXPECT_EQ(aiv, 6);
  EXPECT_EQ(aic, 2);
  const struct {
    const char* name;
    int64_t count;
    double sum_us;
  } psg[] = {{"cast_in", 2, 2.0}, {"matmul", 2, 10.0}, {"bias_add", 3, 6.0}, {"reduce", 1, 1.0}};
  for (const auto& p : psg) {
    const PsgMetrics* got = psg_named(m, p.name);
    ASSERT_TRUE(got) << p.name;
    EXPECT_EQ(got->count, p.count) << p.name;
    EXPECT_NEAR(got->sum_dur_us, p.sum_us, 1e-9) << p.name;
  }
}

TEST(Replay, RuntimeOverheadsOnlyAddTime) {
  const PyptoGraph pg = load_pypto_graph(source_path("configs/pypto/example_graph.json"));
  const Hardware hw = test::default_hw();
  const Metrics m = compute_metrics(pg.graph, simulate_costed(pg.graph, pg.kind_costs, hw), hw);
  EXPECT_GT(m.gen_time_us, 9.0);
  EXPECT_LT(m.gen_time_us, 9.0 + 10.0);  // a handful of dispatch/resolve/poll rounds
}

// MIXAICORE runs on an AIC core; HUB is a zero-cycle task on an AIV core that still goes
// through the scheduler. One core per type, no overheads:
//   AIC: mix [0,400], c [400,600];  AIV: hub [400,400], v [400,500].
TEST(Replay, MixaicoreOnAicAndHubAsZeroCycleTask) {
  Hardware hw = ideal_runtime_hw();
  hw.cores.aiv = 1;
  hw.cores.aic = 1;
  const PyptoGraph pg = graph_of(R"([
    {"taskId": 1, "funcName": "mix", "coreType": "MIXAICORE", "execTime": 400, "remainingPredecessors": 0, "successors": [2]},
    {"taskId": 2, "funcName": "hub", "coreType": "HUB", "execTime": 0, "remainingPredecessors": 1, "successors": [3, 4]},
    {"taskId": 3, "funcName": "v", "coreType": "AIV", "execTime": 100, "remainingPredecessors": 1, "successors": []},
    {"taskId": 4, "funcName": "c", "coreType": "AIC", "execTime": 200, "remainingPredecessors": 1, "successors": []}
  ])");
  EXPECT_EQ(pg.mixaicore_tasks, 1);
  EXPECT_EQ(pg.hub_tasks, 1);
  const SimResult r = simulate_costed(pg.graph, pg.kind_costs, hw);
  EXPECT_EQ(r.core_types[static_cast<size_t>(r.tasks[0].core)], CoreType::kAic);
  EXPECT_EQ(r.core_types[static_cast<size_t>(r.tasks[1].core)], CoreType::kAiv);
  EXPECT_DOUBLE_EQ(r.tasks[1].start, 400);
  EXPECT_DOUBLE_EQ(r.tasks[1].end, 400);
  EXPECT_DOUBLE_EQ(r.tasks[2].end, 500);
  EXPECT_DOUBLE_EQ(r.tasks[3].start, 400);
  EXPECT_DOUBLE_EQ(r.last_end - r.first_start, 600);
  // Through the scheduler: with overheads the HUB adds a dispatch/completion round.
  const Hardware real = test::default_hw();
  const SimResult rr = simulate_costed(pg.graph, pg.kind_costs, real);
  EXPECT_GT(rr.tasks[2].start, rr.tasks[1].end);
}

TEST(Replay, HubWithExecTimeWarnsAndTakesZeroCycles) {
  const PyptoGraph pg = graph_of(R"([
    {"taskId": 1, "funcName": "hub", "coreType": "HUB", "execTime": 50, "remainingPredecessors": 0, "successors": []}
  ])");
  ASSERT_EQ(pg.warnings.size(), 1u);
  EXPECT_NE(pg.warnings[0].find("HUB"), std::string::npos);
  EXPECT_EQ(pg.kind_costs[0].cycles, 0);
}

TEST(Replay, InconsistentRemainingPredecessorsAndRepeatedSuccessorsWarn) {
  const PyptoGraph pg = graph_of(R"([
    {"taskId": 1, "funcName": "a", "coreType": "AIV", "execTime": 5, "remainingPredecessors": 0, "successors": [2, 2]},
    {"taskId": 2, "funcName": "b", "coreType": "AIV", "execTime": 5, "remainingPredecessors": 3, "successors": []}
  ])");
  ASSERT_EQ(pg.warnings.size(), 2u);
  EXPECT_NE(pg.warnings[0].find("taskId 1 lists successor 2 twice"), std::string::npos)
      << pg.warnings[0];
  EXPECT_NE(pg.warnings[1].find("taskId 2 says 3, successor lists give 1"), std::string::npos)
      << pg.warnings[1];
  EXPECT_EQ(pg.graph.num_edges(), 1);
}

TEST(Replay, RootFunctionsFromTilesimRootOrTheDeviceTaskSeq) {
  // Two PyPTO device tasks (seq 1 and 2 in the upper 32 bits): two root functions, in seq order.
  const int64_t s1 = int64_t{1} << 32, s2 = int64_t{2} << 32;
  const std::string text = "[" +
                           nlohmann::json({{"taskId", s2 + 5},
                                           {"funcName", "f"},
                                           {"coreType", "AIV"},
                                           {"execTime", 1},
                                           {"remainingPredecessors", 0},
                                           {"successors", nlohmann::json::array()}})
                               .dump() +
                           "," +
                           nlohmann::json({{"taskId", s1 + 7},
                                           {"funcName", "f"},
                                           {"coreType", "AIV"},
                                           {"execTime", 1},
                                           {"remainingPredecessors", 0},
                                           {"successors", {s2 + 5}}})
                               .dump() +
                           "]";
  const PyptoGraph pg = graph_of(text);
  EXPECT_EQ(pg.graph.num_roots(), 2);
  EXPECT_EQ(pg.graph.tasks[0].root, 1);
  EXPECT_EQ(pg.graph.tasks[1].root, 0);
  const PyptoGraph rooted = graph_of(R"([
    {"taskId": 0, "funcName": "f", "coreType": "AIV", "execTime": 1, "remainingPredecessors": 0, "successors": [], "tilesimRoot": 4},
    {"taskId": 1, "funcName": "f", "coreType": "AIV", "execTime": 1, "remainingPredecessors": 0, "successors": [], "tilesimRoot": 9}
  ])");
  EXPECT_EQ(rooted.graph.num_roots(), 2);
  EXPECT_EQ(rooted.graph.tasks[1].root, 1);
}

TEST(Replay, MalformedGraphsGiveOneClearError) {
  const struct {
    const char* text;
    const char* needle;
  } cases[] = {
      {R"({"taskId": 1})",
       "fixture.json: top level: expected a fixed-latency task graph (a JSON array"},
      {R"([])", "fixture.json: top level: the task graph has no tasks"},
      {R"([3])", "fixture.json: element 0: expected a task object, got number"},
      {R"([{"funcName": "f", "coreType": "AIV", "execTime": 1, "remainingPredecessors": 0, "successors": []}])",
       "fixture.json: element 0.taskId: missing"},
      {R"([{"taskId": "7", "funcName": "f", "coreType": "AIV", "execTime": 1, "remainingPredecessors": 0, "successors": []}])",
       "fixture.json: element 0.taskId: expected an integer (any integer), got \"7\""},
      {R"([{"taskId": 7, "coreType": "AIV", "execTime": 1, "remainingPredecessors": 0, "successors": []}])",
       "fixture.json: element 0 (taskId 7).funcName: missing"},
      {R"([{"taskId": 0, "funcName": []}])",  // once an internal error (fuzzing)
       "fixture.json: element 0 (taskId 0).funcName: expected a string, got an array"},
      {R"([{"taskId": 0, "funcName": "f", "coreType": {"a": 1}}])",
       "element 0 (taskId 0).coreType: an object is not allowed (allowed: AIV, AIC, MIXAICORE, "
       "HUB)"},
      {R"([{"taskId": 7, "funcName": "f", "coreType": "NPU", "execTime": 1, "remainingPredecessors": 0, "successors": []}])",
       "element 0 (taskId 7).coreType: \"NPU\" is not allowed (allowed: AIV, AIC, MIXAICORE, HUB)"},
      {R"([{"taskId": 7, "funcName": "f", "coreType": "AIV", "execTime": -1, "remainingPredecessors": 0, "successors": []}])",
       "element 0 (taskId 7).execTime: out of range: -1 (allowed 0 to 1000000000000)"},
      {R"([{"taskId": 7, "funcName": "f", "coreType": "AIV", "execTime": 1, "remainingPredecessors": 0, "successors": 8}])",
       "element 0 (taskId 7).successors: expected an array of taskIds, got 8"},
      {R"([{"taskId": 7, "funcName": "f", "coreType": "AIV", "execTime": 1, "remainingPredecessors": 0, "successors": []},
           {"taskId": 7, "funcName": "f", "coreType": "AIV", "execTime": 1, "remainingPredecessors": 0, "successors": []}])",
       "element 1 (taskId 7): duplicate taskId (also element 0)"},
      {R"([{"taskId": 7, "funcName": "f", "coreType": "AIV", "execTime": 1, "remainingPredecessors": 0, "successors": [8]}])",
       "element 0 (taskId 7): successor 8 is not a taskId of this graph"},
      {R"([{"taskId": 7, "funcName": "f", "coreType": "AIV", "execTime": 1, "remainingPredecessors": 1, "successors": [7]}])",
       "element 0 (taskId 7): lists itself as successor"},
      {R"([{"taskId": 1, "funcName": "f", "coreType": "AIV", "execTime": 1, "remainingPredecessors": 0, "successors": [2]},
           {"taskId": 2, "funcName": "f", "coreType": "AIV", "execTime": 1, "remainingPredecessors": 2, "successors": [3]},
           {"taskId": 3, "funcName": "f", "coreType": "AIV", "execTime": 1, "remainingPredecessors": 1, "successors": [2, 4]},
           {"taskId": 4, "funcName": "f", "coreType": "AIV", "execTime": 1, "remainingPredecessors": 1, "successors": []}])",
       "fixture.json: dependency cycle through taskId "},
      {R"([{"taskId": 0, "funcName": "f", "coreType": "AIV", "execTime": 1, "remainingPredecessors": 0, "successors": [], "tilesimRoot": 0},
           {"taskId": 1, "funcName": "f", "coreType": "AIV", "execTime": 1, "remainingPredecessors": 0, "successors": []}])",
       "element 1 (taskId 1): tilesimRoot missing"},
  };
  for (const auto& c : cases) {
    const std::string msg = error_of([&] { graph_of(c.text); });
    EXPECT_NE(msg.find(c.needle), std::string::npos) << "got: " << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
  }
  // The cycle names a task on it (2 or 3), not the task behind it (4).
  const std::string cycle = error_of([&] { graph_of(cases[14].text); });
  EXPECT_TRUE(cycle.find("taskId 2 ") != std::string::npos ||
              cycle.find("taskId 3 ") != std::string::npos)
      << cycle;
  const std::string bad = temp_file("bad_graph.json", R"([{"taskId": 1,)");
  const std::string msg = error_of([&] { load_pypto_graph(bad); });
  EXPECT_NE(msg.find(bad + ": malformed JSON in fixed-latency task graph"), std::string::npos)
      << msg;
}

// Times a graph brings are bounded so every time the simulator adds stays exact: one task at
// most 1e12 cycles, all together at most 2^52 (1e300 once gave negative waits, DBL_MAX -inf/nan).
TEST(Replay, HugeExecTimesAreRefused) {
  const std::string task = R"({"taskId": ID, "funcName": "f", "coreType": "AIV", "execTime": T, )"
                           R"("remainingPredecessors": 0, "successors": []})";
  auto graph = [&](int n, const std::string& t) {
    std::string text = "[";
    for (int i = 0; i < n; ++i) {
      std::string one = task;
      one.replace(one.find("ID"), 2, std::to_string(i));
      one.replace(one.find("T,"), 1, t);
      text += (i ? "," : "") + one;
    }
    return text + "]";
  };
  EXPECT_NE(error_of([&] { graph_of(graph(1, "1e300")); })
                .find("element 0 (taskId 0).execTime: out of range: 1e+300 (allowed 0 to "
                      "1000000000000)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { graph_of(graph(4600, "1e12")); })
                .find("top level: the tasks' execTime sum to 4.6e+15 cycles (allowed: at most "
                      "4.504e+15"),
            std::string::npos);
  EXPECT_EQ(error_of([&] { graph_of(graph(4, "1e12")); }), "(no error)");
}

// ---------------------------------------------------------------- batches and threads

// What a scan found.
struct Scanned {
  JsonArrayScanner::Stop stop;
  bool closed;
  size_t close_at, cut, commas_before_cut, commas, scanned;
  bool operator==(const Scanned&) const = default;
};
std::ostream& operator<<(std::ostream& os, const Scanned& s) {
  return os << "stop " << static_cast<int>(s.stop) << " closed " << s.closed << " at " << s.close_at
            << " cut " << s.cut << " (" << s.commas_before_cut << " before) commas " << s.commas
            << " scanned " << s.scanned;
}
Scanned result_of(const JsonArrayScanner& s, size_t scanned) {
  return {s.stop(),   s.closed(), s.closed() ? s.close_at() : 0, s.cut(), s.commas_before_cut(),
          s.commas(), scanned};
}
// Byte by byte, all at once.
Scanned scan_by_bytes(const std::string& text, int max_depth) {
  JsonArrayScanner s(max_depth);
  size_t scanned = 0;
  s.scan_bytes(text.data(), text.size(), scanned);
  return result_of(s, scanned);
}
// By blocks, the text arriving `chunk` bytes at a time.
Scanned scan_by_blocks(const std::string& text, int max_depth, size_t chunk) {
  JsonArrayScanner s(max_depth);
  size_t scanned = 0;
  for (size_t have = std::min(chunk, text.size());; have = std::min(have + chunk, text.size())) {
    s.scan(text.data(), have, scanned, have == text.size());
    if (have == text.size() || s.closed() || s.stop() != JsonArrayScanner::Stop::kNone) break;
  }
  return result_of(s, scanned);
}

TEST(JsonArrayScanner, HandCountedStructure) {
  // Strings hold brackets, commas and escaped quotes; the block boundary (64) falls in one.
  const std::string head = R"({"a": "x,]\"[,"}, [1, {"b": [2, 3]}], "s,)";
  const std::string text = head + std::string(40, 'y') + R"(", 4 ] tail)";
  for (const size_t chunk : {size_t{1}, size_t{7}, size_t{64}, text.size()}) {
    const Scanned s = scan_by_blocks(text, 64, chunk);
    EXPECT_TRUE(s.closed) << chunk;
    EXPECT_EQ(s.close_at, text.find(" ] tail") + 1);
    EXPECT_EQ(s.commas, 3u);  // after the object, after [...], after the string
    EXPECT_EQ(s.cut, text.rfind(", 4"));
    EXPECT_EQ(s.commas_before_cut, 2u);
    EXPECT_EQ(s, scan_by_bytes(text, 64));
  }
  // Depth: the array is level 1, so [[[ ]]] inside it reaches 4.
  EXPECT_EQ(scan_by_blocks(std::string(70, ' ') + "[[[1]]]]", 3, 80).stop,
            JsonArrayScanner::Stop::kTooDeep);
  EXPECT_EQ(scan_by_blocks(std::string(70, ' ') + "[[[1]]]]", 3, 80).scanned, 72u);
  EXPECT_TRUE(scan_by_blocks(std::string(70, ' ') + "[[[1]]]]", 4, 80).closed);
  EXPECT_EQ(scan_by_blocks(std::string(100, ' ') + "}", 64, 200).stop,
            JsonArrayScanner::Stop::kClosedByBrace);
}

// The block path and the byte path agree on random text rich in structure, quotes and escapes,
// however the text arrives.
TEST(JsonArrayScanner, BlocksAndBytesAgreeOnRandomText) {
  std::mt19937 rng(20261201);
  // Backslashes send a block down the byte path: a third of the rounds have none, a third one in
  // ~200 bytes.
  // Three openers to two closers: the depth drifts up, so most texts run long.
  const std::string alphabet = "[{[]},\"a1 :,,\"bcdefgh";
  int long_block_rounds = 0;
  for (int round = 0; round < 3000; ++round) {
    std::string text(rng() % 700, ' ');
    const unsigned escapes = round % 3 == 0 ? 0 : round % 3 == 1 ? 200 : 8;
    for (char& c : text)
      c = escapes > 0 && rng() % escapes == 0 ? '\\' : alphabet[rng() % alphabet.size()];
    const int depth = 2 + static_cast<int>(rng() % 63);
    const size_t chunk = 1 + rng() % 200;
    const Scanned blocks = scan_by_blocks(text, depth, chunk);
    ASSERT_EQ(blocks, scan_by_bytes(text, depth))
        << "round " << round << " depth " << depth << " chunk " << chunk << ": " << text;
    long_block_rounds += escapes == 0 && blocks.scanned >= 256;
  }
  EXPECT_GT(long_block_rounds, 150);  // the block path did the work
}

// A chain-free layered graph of n tasks (~100 B each): task i depends on tasks i - 1000 and
// i - 999; the f-th task gets `edit(i, task)` applied to its text.
std::string batch_graph(int n, const std::function<void(int, nlohmann::json&)>& edit = {}) {
  std::string text = "[\n";
  for (int i = 0; i < n; ++i) {
    nlohmann::json succ = nlohmann::json::array();
    for (const int s : {i + 1000, i + 1001})
      if (s < n) succ.push_back(s);
    nlohmann::json t = {{"taskId", i},
                        {"funcName", "f" + std::to_string(i % 7)},
                        {"coreType", i % 5 == 0 ? "AIC" : "AIV"},
                        {"execTime", 100 + i % 13},
                        {"remainingPredecessors", (i >= 1000) + (i >= 1001)},
                        {"successors", succ}};
    if (edit) edit(i, t);
    text += t.dump() + (i + 1 < n ? ",\n" : "\n");
  }
  return text + "]\n";
}

// The first element index of every batch the stream cuts `text` into.
std::vector<size_t> batch_starts(const std::string& text) {
  struct Skip : JsonBatchReader {
    void element(size_t, simdjson::ondemand::value) override {}
  };
  std::vector<size_t> starts;
  JsonStream stream(text, "fixture.json", "test document");
  stream.for_each_batch(
      1,
      [&](size_t first) {
        starts.push_back(first);
        return std::make_unique<Skip>();
      },
      [](std::unique_ptr<JsonBatchReader>, bool) {}, [](JsonScalar::Type) {});
  return starts;
}

// 40,000 tasks (~4 MB) are read in several batches; on 1, 2 and 4 threads the graph, its
// simulation and the first error are the same.
TEST(Replay, BatchesOnAnyThreadCountGiveOneGraphAndOneFirstError) {
  const int n = 40000;
  const std::string text = batch_graph(n);
  const std::vector<size_t> starts = batch_starts(text);
  ASSERT_GE(starts.size(), 3u);
  EXPECT_EQ(starts[0], 0u);
  const Hardware hw = ideal_runtime_hw();
  const PyptoGraph one = pypto_graph_from_text(text, "fixture.json", 1);
  ASSERT_EQ(one.graph.tasks.size(), static_cast<size_t>(n));
  EXPECT_EQ(one.graph.num_edges(), 2 * (n - 1000) - 1);
  EXPECT_EQ(one.graph.psg_names.size(), 7u);
  const double end = simulate_costed(one.graph, one.kind_costs, hw).last_end;
  for (const int threads : {2, 4}) {
    const PyptoGraph many = pypto_graph_from_text(text, "fixture.json", threads);
    EXPECT_EQ(many.task_ids, one.task_ids);
    EXPECT_EQ(many.graph.psg_names, one.graph.psg_names);
    ASSERT_EQ(many.graph.tasks.size(), one.graph.tasks.size());
    for (size_t i = 0; i < one.graph.tasks.size(); i += 997) {
      EXPECT_EQ(many.graph.tasks[i].kind, one.graph.tasks[i].kind);
      const auto t = static_cast<int32_t>(i);
      EXPECT_TRUE(std::equal(many.graph.succ_begin(t), many.graph.succ_end(t),
                             one.graph.succ_begin(t), one.graph.succ_end(t)));
    }
    EXPECT_EQ(simulate_costed(many.graph, many.kind_costs, hw).last_end, end);
  }
  // Errors in two batches, and malformed text in a third: the earliest is reported.
  const size_t a = starts[1] + 3, b = starts[2] + 5;
  std::string bad = batch_graph(n, [&](int i, nlohmann::json& t) {
    if (static_cast<size_t>(i) == a) t["coreType"] = "NPU";
    if (static_cast<size_t>(i) == b) t["execTime"] = -1;
  });
  bad.replace(bad.rfind("\"taskId\""), 8, "\"taskId\" 1");
  for (const int threads : {1, 2, 4}) {
    const std::string msg = error_of([&] { pypto_graph_from_text(bad, "fixture.json", threads); });
    EXPECT_NE(
        msg.find(fmt::format("element {} (taskId {}).coreType: \"NPU\" is not allowed", a, a)),
        std::string::npos)
        << threads << " threads: " << msg;
  }
  // A batch is parsed in parts small enough to stay in cache; malformed text inside a later part
  // (an empty element) is reported as the whole batch reports it: from the batch's first byte
  // (just after the comma that ends the batch before), on any thread count.
  {
    const size_t e = starts[1] + (starts[2] - starts[1]) * 3 / 4;
    size_t line = 0, at = 0;  // element k is on line k + 1
    while (line < starts[1] + 1) at = text.find('\n', at) + 1, ++line;
    const size_t first_byte = at - 1;
    while (line < e + 1) at = text.find('\n', at) + 1, ++line;
    std::string empty = text;
    empty.insert(at, ",");
    for (const int threads : {1, 2}) {
      const std::string msg =
          error_of([&] { pypto_graph_from_text(empty, "fixture.json", threads); });
      EXPECT_NE(msg.find("malformed JSON"), std::string::npos) << msg;
      EXPECT_NE(msg.find(fmt::format("(in the elements from byte {} on, element", first_byte)),
                std::string::npos)
          << threads << " threads: " << msg;
    }
  }
  // tilesimRoot on element 0 and missing from a batch's first element on: that element is named
  // (the batch itself is consistent; the join holds it to element 0).
  // (Elements from k on carry an ignored key of the same length instead, so the batches are
  // cut where they are cut in the text with a tilesimRoot everywhere.)
  auto roots_before = [&](size_t k) {
    return batch_graph(n, [&](int i, nlohmann::json& t) {
      t[static_cast<size_t>(i) < k ? "tilesimRoot" : "tilesimRooX"] = i / 1000;
    });
  };
  const size_t k = batch_starts(roots_before(n))[2];
  const std::string rooted = roots_before(k);
  for (const int threads : {1, 2})
    EXPECT_NE(error_of([&] { pypto_graph_from_text(rooted, "fixture.json", threads); })
                  .find(fmt::format("element {} (taskId {}): tilesimRoot missing (element 0 has "
                                    "one",
                                    k, k)),
              std::string::npos);
}

// The reader keeps successors as offsets from the first taskId, with no lookup when every taskId
// is the first plus its index, through a lookup when ids have gaps, and as full ids once one does
// not fit in 31 bits (here from a later batch on): the same graph each way, and root functions
// numbered by increasing tilesimRoot however they come.
TEST(Replay, EveryTaskIdLayoutGivesOneGraph) {
  const int n = 40000;
  const auto graph_with_ids = [&](const std::function<int64_t(int64_t)>& id) {
    return batch_graph(n, [&](int i, nlohmann::json& t) {
      t["taskId"] = id(i);
      for (auto& s : t["successors"]) s = id(s.get<int64_t>());
      t["tilesimRoot"] = (n - i) / 3000;  // decreasing: ranked, not first-seen
    });
  };
  const PyptoGraph plain = pypto_graph_from_text(graph_with_ids([](int64_t i) { return i; }), "a");
  const std::vector<std::function<int64_t(int64_t)>> layouts = {
      [](int64_t i) { return i + (int64_t{1} << 40); },                  // consecutive from a base
      [](int64_t i) { return 3 * i - 5; },                               // gaps: a hash lookup
      [](int64_t i) { return i + i / 1000; },                            // small gaps: a table
      [&](int64_t i) { return i < n / 2 ? i : i + (int64_t{1} << 33); }  // wide from mid-file
  };
  const Hardware hw = ideal_runtime_hw();
  const double end = simulate_costed(plain.graph, plain.kind_costs, hw).last_end;
  for (size_t l = 0; l < layouts.size(); ++l) {
    SCOPED_TRACE(l);
    const PyptoGraph g = pypto_graph_from_text(graph_with_ids(layouts[l]), "b", 2);
    ASSERT_EQ(g.graph.tasks.size(), plain.graph.tasks.size());
    EXPECT_EQ(g.task_ids[7], layouts[l](7));
    EXPECT_EQ(g.graph.num_roots(), plain.graph.num_roots());
    for (size_t i = 0; i < plain.graph.tasks.size(); ++i) {
      const auto t = static_cast<int32_t>(i);
      ASSERT_EQ(g.graph.tasks[i].kind, plain.graph.tasks[i].kind);
      ASSERT_EQ(g.graph.tasks[i].root, plain.graph.tasks[i].root);
      ASSERT_TRUE(std::equal(g.graph.succ_begin(t), g.graph.succ_end(t), plain.graph.succ_begin(t),
                             plain.graph.succ_end(t)));
    }
    EXPECT_EQ(simulate_costed(g.graph, g.kind_costs, hw).last_end, end);
  }
  EXPECT_EQ(plain.graph.tasks.front().root, plain.graph.num_roots() - 1);
  EXPECT_EQ(plain.graph.tasks.back().root, 0);
}

// ---------------------------------------------------------------- export and round trip

TEST(Export, RoundTripKeepsGenTime) {
  const RunConfig rc = load_run_config(source_path("configs/examples/add_pypto.json"));
  const Hardware hw = load_hardware(rc.hardware);
  const RunOutcome run = run_kernel(rc.spec, hw);
  const nlohmann::json doc =
      nlohmann::json::parse(pypto_graph_to_json(run.kernel.graph, run.sim).dump());
  ASSERT_EQ(doc.size(), run.kernel.graph.tasks.size());
  for (size_t i = 0; i < doc.size(); i += 97) {
    const auto& e = doc[i];
    EXPECT_EQ(e.at("taskId"), static_cast<int64_t>(i));
    EXPECT_EQ(e.at("execTime").get<double>(), run.sim.tasks[i].end - run.sim.tasks[i].start);
    EXPECT_EQ(e.at("remainingPredecessors"), run.kernel.graph.indegree(static_cast<int32_t>(i)));
    EXPECT_EQ(e.at("coreType"), "AIV");
  }
  const PyptoGraph pg = pypto_graph_from_json(doc, "export");
  EXPECT_TRUE(pg.warnings.empty());
  EXPECT_EQ(pg.graph.num_roots(), run.kernel.graph.num_roots());
  EXPECT_EQ(pg.graph.num_edges(), run.kernel.graph.num_edges());
  const Metrics replayed =
      compute_metrics(pg.graph, simulate_costed(pg.graph, pg.kind_costs, hw), hw);
  EXPECT_NEAR(replayed.gen_time_us, run.metrics.gen_time_us, 0.01 * run.metrics.gen_time_us);
  std::cout << "round trip: run gen_time_us " << run.metrics.gen_time_us << ", replay "
            << replayed.gen_time_us << "\n";
}

// An spmd run of two launches exports one HUB task between them: it waits for every task of
// launch 0 and releases every task of launch 1, so the replay keeps their order.
TEST(Export, TwoLaunchesJoinAtAHub) {
  const RunConfig rc =
      load_run_config(source_path("configs/examples/softmax_spmd_split_16x16384.json"));
  const Hardware hw = load_hardware(rc.hardware);
  const RunOutcome run = run_kernel(rc.spec, hw);
  ASSERT_EQ(run.kernel.graph.num_launches(), 2);
  const auto n = static_cast<int64_t>(run.kernel.graph.tasks.size());  // 48 + 48
  const nlohmann::json doc =
      nlohmann::json::parse(pypto_graph_to_json(run.kernel.graph, run.sim).dump());
  ASSERT_EQ(static_cast<int64_t>(doc.size()), n + 1);
  const auto& hub = doc.back();
  EXPECT_EQ(hub.at("coreType"), "HUB");
  EXPECT_EQ(hub.at("remainingPredecessors"), 48);
  EXPECT_EQ(hub.at("successors").size(), 48u);
  const PyptoGraph pg = pypto_graph_from_json(doc, "export");
  EXPECT_EQ(pg.hub_tasks, 1);
  EXPECT_EQ(pg.graph.num_edges(), 96);
  const SimResult replay = simulate_costed(pg.graph, pg.kind_costs, hw);
  double end0 = 0, start1 = 1e300;
  for (size_t i = 0; i < static_cast<size_t>(n); ++i)
    if (run.kernel.graph.tasks[i].launch == 0)
      end0 = std::max(end0, replay.tasks[i].end);
    else
      start1 = std::min(start1, replay.tasks[i].start);
  EXPECT_GE(start1, end0);
}

// ---------------------------------------------------------------- swimlane traces

// configs/pypto/example_swimlane.json is a board-style run of example_graph.json (times in us):
//   AIV_25: 0 [10.0,11.2]  4 [18.0,20.1]  7 [21.0,22.0]
//   AIV_26: 1 [10.3,11.4]  5 [18.2,20.2]
//   AIV_27: 6 [17.5,19.7]
//   AIC_1:  2 [12.0,17.5]      AIC_2: 3 [12.2,17.2]
// Global first start 10.0. Per core, by hand:
//   AIV_25: wait 0 + 6.8 + 0.9 = 7.7; schedule 0 + (18.0-17.5) + (21.0-20.2) = 1.3
//   AIV_26: wait 0.3 + 6.8 = 7.1;     schedule 0.3 + (18.2-17.5) = 1.0
//   AIV_27: wait 7.5;                 schedule 17.5-17.2 = 0.3
//   AIC_1:  wait 2.0;                 schedule 12.0-11.4 = 0.6
//   AIC_2:  wait 2.2;                 schedule 12.2-11.4 = 0.8
TEST(Swimlane, ShippedExampleWithGraphGivesHandComputedMetrics) {
  const SwimlaneTrace tr = load_swimlane(source_path("configs/pypto/example_swimlane.json"));
  EXPECT_EQ(tr.events, 20);
  EXPECT_EQ(tr.tasks.size(), 8u);
  const PyptoGraph pg = load_pypto_graph(source_path("configs/pypto/example_graph.json"));
  const SwimlaneAnalysis a = analyze_swimlane(tr, &pg);
  EXPECT_TRUE(a.warnings.empty());
  EXPECT_TRUE(a.dependencies);
  EXPECT_NEAR(a.metrics.gen_time_us, 12.0, 1e-9);
  EXPECT_EQ(a.metrics.tasks, 8);
  const struct {
    const char* lane;
    CoreType type;
    int64_t tasks;
    double work, wait, sched;
  } cores[] = {{"AIC_1", CoreType::kAic, 1, 7.5, 2.0, 0.6},
               {"AIC_2", CoreType::kAic, 1, 7.2, 2.2, 0.8},
               {"AIV_25", CoreType::kAiv, 3, 12.0, 7.7, 1.3},
               {"AIV_26", CoreType::kAiv, 2, 10.2, 7.1, 1.0},
               {"AIV_27", CoreType::kAiv, 1, 9.7, 7.5, 0.3}};
  ASSERT_EQ(a.metrics.per_core.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    const auto& c = cores[i];
    const CoreMetrics& got = a.metrics.per_core[i];  // listed in the trace's lane order
    EXPECT_EQ(a.lanes[static_cast<size_t>(got.core)].name, c.lane);
    EXPECT_EQ(got.type, c.type) << c.lane;
    EXPECT_EQ(got.execute_task_num, c.tasks) << c.lane;
    EXPECT_NEAR(got.core_total_work_time_us, c.work, 1e-9) << c.lane;
    EXPECT_NEAR(got.total_wait_time_us, c.wait, 1e-9) << c.lane;
    EXPECT_NEAR(got.wait_schedule_time_us, c.sched, 1e-9) << c.lane;
    EXPECT_NEAR(got.wait_predecessor_time_us, c.wait - c.sched, 1e-9) << c.lane;
  }
  const struct {
    const char* name;
    int64_t count;
    double sum, avg;
  } psg[] = {{"cast_in", 2, 2.3, 1.15},
             {"matmul", 2, 10.5, 5.25},
             {"bias_add", 3, 6.3, 2.1},
             {"reduce", 1, 1.0, 1.0}};
  for (const auto& p : psg) {
    const PsgMetrics* got = psg_named(a.metrics, p.name);
    ASSERT_TRUE(got) << p.name;
    EXPECT_EQ(got->count, p.count) << p.name;
    EXPECT_NEAR(got->sum_dur_us, p.sum, 1e-9) << p.name;
    EXPECT_NEAR(got->avg_dur_us, p.avg, 1e-9) << p.name;
  }
  // Skipped, never fatal: the AICPU dispatch, a flow pair and a counter.
  EXPECT_EQ(a.skipped.at("X events on AICPU lanes"), 1);
  EXPECT_EQ(a.skipped.at("flow events (ph s/t/f)"), 2);
  EXPECT_EQ(a.skipped.at("counter events (ph C)"), 1);
}

TEST(Swimlane, WithoutGraphEveryWaitIsScheduleAndPsgComesFromTheName) {
  const SwimlaneTrace tr = load_swimlane(source_path("configs/pypto/example_swimlane.json"));
  const SwimlaneAnalysis a = analyze_swimlane(tr);
  EXPECT_FALSE(a.dependencies);
  const CoreMetrics* c = core_named(a, "AIV_25");
  ASSERT_TRUE(c);
  EXPECT_NEAR(c->total_wait_time_us, 7.7, 1e-9);
  EXPECT_NEAR(c->wait_schedule_time_us, 7.7, 1e-9);
  EXPECT_NEAR(c->wait_predecessor_time_us, 0, 1e-9);
  const PsgMetrics* b = psg_named(a.metrics, "1(b)");  // "0-0-2-0-1(b)": psgId 1, label b
  ASSERT_TRUE(b);
  EXPECT_EQ(b->count, 2);
  EXPECT_NEAR(b->sum_dur_us, 10.5, 1e-9);
}

TEST(Swimlane, TaskIdsFromArgsSeqNoOrTheNameAndOverlapLanesMerge) {
  const SwimlaneTrace tr = trace_of(R"json([
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1000, "args": {"name": "AIV_0"}},
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1001, "args": {"name": "AIV_0"}},
    {"ph": "X", "name": "3-2-1--1-4(x)", "pid": 1, "tid": 1000, "ts": 0, "dur": 2},
    {"ph": "X", "name": "t", "pid": 1, "tid": 1001, "ts": 1, "dur": 2, "args": {"taskId": 65537, "seqNo": 3}},
    {"ph": "X", "name": "no id", "pid": 1, "tid": 1000, "ts": 5, "dur": 1},
    {"ph": "Z", "name": "odd"},
    {"name": "no phase"}
  ])json");
  ASSERT_EQ(tr.tasks.size(), 2u);
  EXPECT_EQ(tr.tasks[0].task_id, (int64_t{3} << 32) | (2 << 16) | 1);
  EXPECT_EQ(tr.tasks[0].psg, "4(x)");
  EXPECT_EQ(tr.tasks[1].task_id, (int64_t{3} << 32) | 65537);
  EXPECT_EQ(tr.lanes.size(), 1u);  // both tids are core AIV_0
  EXPECT_EQ(tr.tasks[0].lane, tr.tasks[1].lane);
  EXPECT_EQ(tr.skipped.at("X events without a task id"), 1);
  EXPECT_EQ(tr.skipped.at("events of phase 'Z'"), 1);
  EXPECT_EQ(tr.skipped.at("events without a phase (ph)"), 1);
}

TEST(Swimlane, TimeUnitsConvertToMicroseconds) {
  const char* text =
      R"json([{"ph": "X", "name": "0-0-1-0-0(a)", "pid": 0, "tid": 0, "ts": 1850, "dur": 3700}])json";
  const SwimlaneTrace tr = swimlane_from_json(nlohmann::json::parse(text), "t", 1850);
  ASSERT_EQ(tr.tasks.size(), 1u);
  EXPECT_DOUBLE_EQ(tr.tasks[0].start_us, 0.0);  // times count from the first task
  EXPECT_DOUBLE_EQ(tr.tasks[0].end_us, 2.0);
  EXPECT_EQ(tr.lanes[0].name, "pid 0 tid 0");
}

// ../shared/hostile-t3 swim_epoch_us_timestamps, swim_epoch_ns_timestamps,
// swim_epoch_to_measurements: msprof's epoch-sized stamps (~1.8e15 us, ~1.8e18 ns) were summed
// with dur in doubles (a step of 0.25 us, 256 ns there): 2.25 us read for 2.13. Each literal is
// read exactly and times count from the first task, so a shift of every stamp changes nothing.
// (The hostile cases' own files were written through doubles: their literals already carry the
// rounding, which no reader can undo; these literals are exact.)
TEST(Swimlane, EpochSizedTimestampsGiveTheFiguresOfRelativeOnes) {
  auto trace = [](const std::string& t0, const std::string& t1, const std::string& t2,
                  const std::string& dur, double units) {
    const std::string text = fmt::format(R"json([
      {{"ph": "X", "name": "0-0-1-0-0(a)", "pid": 0, "tid": 0, "ts": {}, "dur": {}}},
      {{"ph": "X", "name": "0-0-2-0-0(a)", "pid": 0, "tid": 1, "ts": {}, "dur": {}}},
      {{"ph": "X", "name": "0-0-3-0-0(a)", "pid": 0, "tid": 2, "ts": {}, "dur": {}}}])json",
                                         t0, dur, t1, dur, t2, dur);
    return analyze_swimlane(swimlane_from_text(text, "t", units)).metrics;
  };
  const Metrics rel = trace("99.2", "100.14", "100.27", "1.12", 1);
  EXPECT_NEAR(rel.gen_time_us, 100.27 + 1.12 - 99.2, 1e-12);
  for (const Metrics& m :
       {trace("1784177144515042.7", "1784177144515043.64", "1784177144515043.77", "1.12", 1),
        trace("1.78417714451504270e15", "1784177144515043640e-3", "1784177144515043.77", "1.12", 1),
        trace("1784177144515042700", "1784177144515043640", "1784177144515043770", "1120", 1000)}) {
    EXPECT_NEAR(m.gen_time_us, rel.gen_time_us, 1e-9);
    ASSERT_EQ(m.psg.size(), 1u);
    EXPECT_NEAR(m.psg[0].sum_dur_us, rel.psg[0].sum_dur_us, 1e-9);
  }
}

// ../shared/hostile-t3 swim_epoch_us_timestamps, swim_epoch_ns_timestamps,
// swim_epoch_to_measurements as their files hold them: each stamp printed from a double
// (1784177144515043.8, the shortest text of ...043.75; 1.7841771445150436e+18 ns), whose step there
// (0.25 us, 256 ns) is coarser than any board's: the figures (2.18 or 1.98 us where the board's
// are 2.13) depend on where the clock started. Refused naming the event; an exact literal of the
// same magnitude reads exactly.
TEST(Swimlane, StampsPrintedFromCoarseDoublesAreRefused) {
  const auto one = [](const std::string& ts) {
    return R"j([{"ph": "X", "name": "0-0-1-0-0(a)", "pid": 0, "tid": 0, "ts": )j" + ts +
           R"j(, "dur": 1}])j";
  };
  EXPECT_EQ(error_of([&] { swimlane_from_text(one("1784177144515043.8"), "t"); }),
            "t: event 0: ts 1784177144515043.8 was printed from a 64-bit float whose step there "
            "is 0.25 us: the stamp is off by up to half of it, and every figure with it (write "
            "the timestamps relative to the first task, or as exact decimals)");
  EXPECT_NE(error_of([&] {
              swimlane_from_text(one("1.7841771445150436e+18"), "t", 1000);
            }).find("step there is 0.256 us"),
            std::string::npos);
  for (const std::string exact : {"1784177144515043.77", "1784177144515043.5", "1784177144515043",
                                  "1784177144514943.520", "100.14"})
    EXPECT_EQ(error_of([&] { swimlane_from_text(one(exact), "t"); }), "(no error)") << exact;
}

// Overlapping tasks of one core, on one thread (../shared/hostile-t4 swim_overlap_negative_wait:
// a wait of -5 us and 20 us of busy time in a 15 us span, which calibrate then fitted) or on tids
// of one name (PyPTO draws a core's overlapping tasks so): the core's busy time is the union of
// its tasks' spans, its wait never negative. 0-10 and 5-15 us, then 20-25 us: 20 us busy in a
// 25 us span, 5 us of wait.
TEST(Swimlane, OverlappingTasksOfOneCoreCountTheUnionOfTheirSpans) {
  for (const int tid : {1, 2}) {  // the second task on the first task's thread, or another
    const std::string text = fmt::format(R"j([
      {{"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {{"name": "AIV_0"}}}},
      {{"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {{"name": "AIV_0"}}}},
      {{"ph": "X", "name": "0-add", "pid": 1, "tid": 1, "ts": 0, "dur": 10, "args": {{"taskId": 1}}}},
      {{"ph": "X", "name": "0-add", "pid": 1, "tid": {}, "ts": 5, "dur": 10, "args": {{"taskId": 2}}}},
      {{"ph": "X", "name": "0-add", "pid": 1, "tid": 1, "ts": 20, "dur": 5, "args": {{"taskId": 3}}}}])j",
                                         tid);
    const Metrics m = analyze_swimlane(swimlane_from_text(text, "s.json")).metrics;
    ASSERT_EQ(m.per_core.size(), 1u) << tid;
    EXPECT_DOUBLE_EQ(m.gen_time_us, 25.0) << tid;
    EXPECT_DOUBLE_EQ(m.per_core[0].busy_us, 20.0) << tid;
    EXPECT_DOUBLE_EQ(m.per_core[0].total_wait_time_us, 5.0) << tid;
  }
}

// ../shared/hostile-t3 swim_dur_1e308, swim_ts_dur_1e308, swim_dur_1e308_to_measurements: a
// dur of 1e308 printed 310 digits or inf (ts + dur overflowed to an internal error). A dur, or a
// ts after the first task, beyond 10^12 us is refused naming the event.
TEST(Swimlane, DurationsAndSpansBeyondAnyRunAreRefused) {
  const struct {
    const char* text;
    const char* needle;
  } cases[] = {
      {R"j([{"ph": "X", "name": "0-0-1-0-0(a)", "pid": 0, "tid": 0, "ts": 0, "dur": 1e308}])j",
       "t: event 0: dur 1e+308 is out of range (at most 1e+12 us: no task runs that long)"},
      {R"j([{"ph": "X", "name": "0-0-1-0-0(a)", "pid": 0, "tid": 0, "ts": 1e308, "dur": 1}])j",
       "t: event 0: ts 1e308 is out of range (its whole units fit 64 bits)"},
      {R"j([{"ph": "X", "name": "0-0-1-0-0(a)", "pid": 0, "tid": 0, "ts": 0, "dur": 1},
           {"ph": "X", "name": "0-0-2-0-0(a)", "pid": 0, "tid": 0, "ts": 9e18, "dur": 1}])j",
       "t: event 1: ts is 9e+18 us after the trace's first task (at most 1e+12 us: one trace, "
       "one run)"},
  };
  for (const auto& c : cases) {
    const std::string msg = error_of([&] { swimlane_from_text(c.text, "t"); });
    EXPECT_EQ(msg, c.needle);
  }
}

// ../shared/hostile-t3 swim_bom and swim_1e7_events: a UTF-8 byte-order mark read as "malformed
// JSON" (the graph loader said "unexpected ... at byte 0"); an 888 MB trace ran out of memory and
// was called malformed. The mark is skipped; the size is bounded before anything is read.
TEST(Swimlane, AByteOrderMarkIsSkippedAndTheSizeIsBoundedFirst) {
  const std::string bom = "\xEF\xBB\xBF";
  const SwimlaneTrace tr = load_swimlane(
      temp_file("bom_trace.json", bom + R"j([{"ph": "X", "name": "0-0-1-0-0(a)", "pid": 0,
                                              "tid": 0, "ts": 0, "dur": 2}])j"));
  ASSERT_EQ(tr.tasks.size(), 1u);
  EXPECT_EQ(tr.tasks[0].end_us, 2.0);
  std::string graph;
  std::getline(std::ifstream(source_path("configs/pypto/example_graph.json")), graph, '\0');
  EXPECT_EQ(load_pypto_graph(temp_file("bom_graph.json", bom + graph)).graph.tasks.size(),
            load_pypto_graph(source_path("configs/pypto/example_graph.json")).graph.tasks.size());
  const std::string big = temp_file("big_trace.json", "[]");
  std::filesystem::resize_file(big, kMaxSwimlaneBytes + 1);  // sparse: nothing is written
  EXPECT_EQ(error_of([&] { load_swimlane(big); }),
            big +
                ": 268435457 bytes, more than a swimlane trace's 256 MiB (at most 1048576 "
                "events: cut it to fewer runs or cores)");
  std::filesystem::remove(big);
}

TEST(Swimlane, MalformedTracesGiveOneClearError) {
  const struct {
    const char* text;
    const char* needle;
  } cases[] = {
      {"42", "trace.json: top level: expected a Chrome trace"},
      {R"({"events": []})",
       "trace.json: top level: expected a Chrome trace: an object with a \"traceEvents\" array"},
      {R"j([1])j", "trace.json: event 0: expected an event object, got number"},
      {R"j([{"ph": "X", "pid": 1, "tid": 1, "dur": 1, "args": {"taskId": 1}}])j",
       "trace.json: event 0: complete event (ph X) needs a numeric 'ts'"},
      {R"j([{"ph": "M"}, {"ph": "X", "pid": 1, "tid": 1, "ts": "3", "dur": 1}])j",
       "trace.json: event 1: complete event (ph X) needs a numeric 'ts'"},
      {R"j([{"ph": "X", "pid": 1, "tid": 1, "ts": 3, "dur": -1, "args": {"taskId": 1}}])j",
       "trace.json: event 0: complete event (ph X) has negative dur -1"},
  };
  for (const auto& c : cases) {
    const std::string msg = error_of([&] { trace_of(c.text); });
    EXPECT_NE(msg.find(c.needle), std::string::npos) << "got: " << msg;
  }
  const std::string bad = temp_file("bad_trace.json", R"({"traceEvents": [)");
  const std::string msg = error_of([&] { load_swimlane(bad); });
  EXPECT_NE(msg.find(bad + ": malformed JSON in swimlane trace"), std::string::npos) << msg;
}

TEST(Swimlane, GraphAndTraceMismatchesWarn) {
  const PyptoGraph pg = graph_of(kSmallGraph);
  const SwimlaneTrace tr = trace_of(R"([
    {"ph": "X", "pid": 0, "tid": 0, "ts": 0, "dur": 1, "args": {"taskId": 10}},
    {"ph": "X", "pid": 0, "tid": 1, "ts": 0.5, "dur": 1, "args": {"taskId": 20}},
    {"ph": "X", "pid": 0, "tid": 0, "ts": 2, "dur": 1, "args": {"taskId": 99}}
  ])");
  const SwimlaneAnalysis a = analyze_swimlane(tr, &pg);
  std::string all;
  for (const auto& w : a.warnings) all += w + "\n";
  EXPECT_NE(all.find("1 trace task(s) are not in the graph (first: taskId 99)"), std::string::npos)
      << all;
  EXPECT_NE(all.find("3 graph task(s) are not in the trace"), std::string::npos) << all;
  EXPECT_NE(all.find("1 task(s) start before a predecessor ends (first: taskId 20)"),
            std::string::npos)
      << all;
  // Lane types come from the graph when the trace does not name them.
  EXPECT_EQ(a.lanes[1].type, CoreType::kAic);
  EXPECT_TRUE(a.lanes[1].type_known);
}

// tilesim's own trace, analysed with the exported graph, gives back the run's metrics.
TEST(Swimlane, OwnTraceWithExportedGraphReproducesTheRunMetrics) {
  RunConfig rc = load_run_config(source_path("configs/examples/add_pypto.json"));
  rc.spec.loop_count = 4;
  const Hardware hw = load_hardware(rc.hardware);
  SimOptions opt;
  opt.record_aicpu = true;
  const RunOutcome run = run_kernel(rc.spec, hw, opt);
  std::stringstream trace;
  write_chrome_trace(trace, run.kernel.graph, run.sim, hw);
  const SwimlaneTrace tr = swimlane_from_json(nlohmann::json::parse(trace.str()), "own");
  EXPECT_EQ(tr.skipped.at("X events on AICPU lanes"),
            static_cast<int64_t>(run.sim.aicpu_spans.size()));
  const PyptoGraph pg = pypto_graph_from_json(
      nlohmann::json::parse(pypto_graph_to_json(run.kernel.graph, run.sim).dump()), "export");
  const SwimlaneAnalysis a = analyze_swimlane(tr, &pg);
  EXPECT_TRUE(a.warnings.empty());
  EXPECT_NEAR(a.metrics.gen_time_us, run.metrics.gen_time_us, 1e-3);
  ASSERT_EQ(a.metrics.per_core.size(), run.metrics.per_core.size());
  for (size_t i = 0; i < a.metrics.per_core.size(); ++i) {
    const CoreMetrics &got = a.metrics.per_core[i], &want = run.metrics.per_core[i];
    const std::string name = a.lanes[static_cast<size_t>(got.core)].name;
    EXPECT_EQ(name, "AIV" + std::to_string(want.core));
    EXPECT_EQ(got.execute_task_num, want.execute_task_num) << name;
    EXPECT_NEAR(got.core_total_work_time_us, want.core_total_work_time_us, 1e-3) << name;
    EXPECT_NEAR(got.total_wait_time_us, want.total_wait_time_us, 1e-2) << name;
    EXPECT_NEAR(got.wait_schedule_time_us, want.wait_schedule_time_us, 1e-2) << name;
  }
  for (size_t p = 0; p < run.metrics.psg.size(); ++p) {
    const PsgMetrics* got = psg_named(a.metrics, run.metrics.psg[p].name);
    ASSERT_TRUE(got);
    EXPECT_EQ(got->count, run.metrics.psg[p].count);
    // The trace prints times to 1e-4 us: each duration is off by up to 1e-4.
    EXPECT_NEAR(got->sum_dur_us, run.metrics.psg[p].sum_dur_us,
                1e-4 * static_cast<double>(got->count));
  }
}

TEST(TimelineMetrics, RejectsRecordsEndingBeforeTheyStart) {
  Timeline tl;
  tl.core_types = {CoreType::kAiv};
  tl.psg_names = {"p"};
  tl.records.push_back({0, 0, 5, 4});
  EXPECT_THROW(timeline_metrics(tl), InternalError);  // the trace reader rejects negative dur
}

// ---------------------------------------------------------------- the CLI

TEST(Cli, ReplayAndAnalyzeTheShippedExamples) {
  const std::string graph = source_path("configs/pypto/example_graph.json");
  const std::string swim = source_path("configs/pypto/example_swimlane.json");
  CmdResult r = run_cli("replay " + graph + " --json", false);
  ASSERT_EQ(r.code, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_GT(j.at("gen_time_us").get<double>(), 9.0);
  EXPECT_EQ(j.at("tasks"), 8);
  EXPECT_EQ(j.at("kinds"), 4);
  EXPECT_TRUE(j.at("per_core")[0].contains("wait_schedule_time_us"));

  r = run_cli("replay " + graph);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("gen_time_us"), std::string::npos);
  EXPECT_NE(r.out.find("bias_add"), std::string::npos);

  r = run_cli("analyze " + swim + " --graph " + graph + " --json", false);
  ASSERT_EQ(r.code, 0) << r.out;
  j = nlohmann::json::parse(r.out);
  EXPECT_NEAR(j.at("gen_time_us").get<double>(), 12.0, 1e-9);
  EXPECT_EQ(j.at("per_core")[2].at("lane"), "AIV_25");
  EXPECT_NEAR(j.at("per_core")[2].at("wait_schedule_time_us").get<double>(), 1.3, 1e-9);
  EXPECT_EQ(j.at("skipped").at("counter events (ph C)"), 1);

  r = run_cli("analyze " + swim, false);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("no graph"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("AIV_27"), std::string::npos) << r.out;
}

TEST(Cli, ExportThenReplayKeepsGenTimeWithinOnePercent) {
  const std::string exported = temp_file("exported_graph.json");
  CmdResult r = run_cli("run " + source_path("configs/examples/add_pypto.json") +
                            " --json --export-graph " + exported,
                        false);
  ASSERT_EQ(r.code, 0) << r.out;
  const double run_gen = nlohmann::json::parse(r.out).at("gen_time_us").get<double>();
  r = run_cli("replay " + exported + " --json", false);
  ASSERT_EQ(r.code, 0) << r.out;
  const double replay_gen = nlohmann::json::parse(r.out).at("gen_time_us").get<double>();
  EXPECT_NEAR(replay_gen, run_gen, 0.01 * run_gen);
  EXPECT_TRUE(nlohmann::json::parse(r.out).at("warnings").empty());
}

TEST(Cli, MalformedInputsExitTwoWithOneLine) {
  const std::string bad_graph = temp_file("cli_bad_graph.json", R"([{"taskId": 1}])");
  const std::string bad_trace = temp_file("cli_bad_trace.json", R"({"traceEvents": 5})");
  for (const std::string& args : {"replay " + bad_graph, "analyze " + bad_trace,
                                  "analyze " + source_path("configs/pypto/example_swimlane.json") +
                                      " --graph " + bad_graph}) {
    const CmdResult r = run_cli(args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out;
    EXPECT_EQ(std::count(r.out.begin(), r.out.end(), '\n'), 1) << r.out;
    EXPECT_EQ(r.out.rfind("tilesim: error: ", 0), 0u) << r.out;
  }
}

}  // namespace
}  // namespace tilesim
