// sim/ready_orders.hpp: a ready-queue policy is one class and one line. A toy policy (last ready,
// first out), defined and registered here, becomes a run config's ready_order and runs through
// the simulator like the built-ins.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/error.hpp"
#include "sim/ready_orders.hpp"
#include "sim/simulator.hpp"
#include "test_support.hpp"
#include "tools/formats/run_config.hpp"

namespace tilesim {
namespace {

// Last ready, first out: the newest ready task first.
class LifoReadyQueue {
 public:
  static constexpr std::string_view kName = "lifo";
  void init(int32_t /*roots*/, size_t /*ready_at_release*/) {}
  bool empty() const { return stack_.empty(); }
  void push(Ready r, int32_t /*root*/) { stack_.push_back(r); }
  Ready pop() {
    const Ready r = stack_.back();
    stack_.pop_back();
    return r;
  }

 private:
  std::vector<Ready> stack_;
};

// The one line.
const ReadyOrder kLifo = register_ready_order<LifoReadyQueue>();

static_assert(ReadyQueuePolicy<LifoReadyQueue>);
static_assert(ReadyQueuePolicy<FifoReadyQueue> && ReadyQueuePolicy<OldestRootFirstReadyQueue>);

// Four independent tasks of one root on one core, zero runtime overheads, each `d` long: all are
// ready at release; the core takes one to run and one pending, then one more as each ends.
std::vector<double> starts(ReadyOrder order, double d = 1000) {
  Hardware hw = test::ideal_runtime_hw();
  hw.cores.aiv = 1;
  TaskGraph g;
  g.add_psg("fixed");
  TaskKind k;
  k.label = "fixed";
  k.core = CoreType::kAiv;
  g.add_kind(k);
  for (int i = 0; i < 4; ++i) g.add_task(0, 0);
  g.finalize();
  TaskCost c;
  c.cycles = d;
  SimOptions opt;
  opt.ready_order = order;
  const SimResult r = simulate_costed(g, {c}, hw, opt);
  std::vector<double> out;
  for (const auto& t : r.tasks) out.push_back(t.start);
  return out;
}

TEST(ReadyOrderPolicies, AToyPolicyTakesTheNextValueAndItsName) {
  EXPECT_EQ(kLifo, static_cast<ReadyOrder>(2));
  EXPECT_EQ(std::string(ready_order_name(kLifo)), "lifo");
  EXPECT_EQ(ready_order_named("lifo"), kLifo);
  EXPECT_EQ(ready_order_named("fifo"), ReadyOrder::kFifo);
  EXPECT_EQ(ready_order_names(), (std::vector<std::string>{"oldest_root_first", "fifo", "lifo"}));
  EXPECT_EQ(std::string(ready_order_name(static_cast<ReadyOrder>(3))), "?");
}

// By hand: FIFO runs tasks 0, 1, 2, 3 in turn; LIFO takes 3 to run and 2 pending at release,
// then 1 and 0 as cores free: the reverse.
TEST(ReadyOrderPolicies, AToyPolicyRunsThroughTheSimulator) {
  const double d = 1000;
  EXPECT_EQ(starts(ReadyOrder::kFifo), (std::vector<double>{0, d, 2 * d, 3 * d}));
  EXPECT_EQ(starts(ReadyOrder::kOldestRootFirst), starts(ReadyOrder::kFifo));  // one root
  EXPECT_EQ(starts(kLifo), (std::vector<double>{3 * d, 2 * d, d, 0}));
}

// The run config reads the one list: the toy's name is a ready_order, and an unknown name lists it.
TEST(ReadyOrderPolicies, TheRunConfigNamesAToyPolicy) {
  auto doc = nlohmann::json::parse(
      R"({"op": "add", "shape": [64, 1024], "tile": [8, 1024], "runtime": {"ready_order": "lifo"}})");
  const SimOptions opt = runtime_options_from_json(doc, "a.json");
  EXPECT_EQ(opt.ready_order, kLifo);
  EXPECT_EQ(starts(opt.ready_order), starts(kLifo));
  doc["runtime"]["ready_order"] = "random";
  try {
    runtime_options_from_json(doc, "a.json");
    ADD_FAILURE() << "accepted ready_order random";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "a.json: runtime.ready_order: \"random\" is not allowed (allowed: "
              "oldest_root_first, fifo, lifo)");
  }
}

TEST(ReadyOrderPolicies, ANameIsRegisteredOnce) {
  EXPECT_THROW(register_ready_order<LifoReadyQueue>(), InternalError);
  EXPECT_THROW(register_ready_order("fifo", &simulate_ready_queue<LifoReadyQueue>), InternalError);
  EXPECT_EQ(ready_order_names().size(), 3u);
}

}  // namespace
}  // namespace tilesim
