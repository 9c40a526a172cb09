#include "sim/simulator.hpp"

#include <deque>
#include <mutex>

#include "model/error.hpp"
#include "sim/ready_orders.hpp"
#include "sim/spmd_runtime.hpp"
#include "sim/task_engine.hpp"

namespace tilesim {

namespace {

template <class Runtime>
SimResult run(const TaskGraph& graph, std::vector<TaskCost> kind_costs, const Hardware& hw,
              const SimOptions& options) {
  Runtime runtime(graph, std::move(kind_costs), hw, options);
  return runtime.run();
}

// The built-in policies' runners, in ReadyOrder order (kReadyOrderNames holds their names).
template <class... Q>
constexpr std::array<ReadyOrderRun, sizeof...(Q)> builtin_runs(ReadyQueueList<Q...>) {
  return {&simulate_ready_queue<Q>...};
}
constexpr auto kBuiltinRuns = builtin_runs(BuiltinReadyQueues{});
constexpr auto kBuiltins = static_cast<int32_t>(kBuiltinRuns.size());

// The registered policies, after the built-ins. A deque: a name handed out stays where it is.
struct Registered {
  std::string name;
  ReadyOrderRun run;
};
struct Registry {
  std::mutex mutex;
  std::deque<Registered> policies;
};
Registry& registry() {
  static Registry r;
  return r;
}

const Registered* registered(ReadyOrder order, Registry& r) {
  const auto i = static_cast<int64_t>(order) - kBuiltins;
  return i >= 0 && i < static_cast<int64_t>(r.policies.size()) ? &r.policies[static_cast<size_t>(i)]
                                                               : nullptr;
}

std::optional<ReadyOrder> registered_named(std::string_view name, const Registry& r) {
  for (size_t i = 0; i < r.policies.size(); ++i)
    if (r.policies[i].name == name)
      return static_cast<ReadyOrder>(kBuiltins + static_cast<int32_t>(i));
  return std::nullopt;
}

ReadyOrderRun ready_order_run(ReadyOrder order) {
  const auto i = static_cast<int32_t>(order);
  if (i >= 0 && i < kBuiltins) return kBuiltinRuns[static_cast<size_t>(i)];
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  if (const Registered* p = registered(order, r)) return p->run;
  throw InternalError("simulate: ready order " + std::to_string(i) + " is no policy");
}

}  // namespace

const char* ready_order_name(ReadyOrder order) {
  if (static_cast<int32_t>(order) < kBuiltins) return enum_name(kReadyOrderNames, order);
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  const Registered* p = registered(order, r);
  return p ? p->name.c_str() : "?";
}

std::vector<std::string> ready_order_names() {
  std::vector<std::string> names = enum_names(kReadyOrderNames);
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  for (const auto& p : r.policies) names.push_back(p.name);
  return names;
}

std::optional<ReadyOrder> ready_order_named(std::string_view name) {
  if (const auto order = enum_named(kReadyOrderNames, name)) return order;
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  return registered_named(name, r);
}

ReadyOrder register_ready_order(std::string_view name, ReadyOrderRun run) {
  if (!run) throw InternalError("ready order " + std::string(name) + ": no runner");
  Registry& r = registry();
  const std::lock_guard lock(r.mutex);
  if (enum_named(kReadyOrderNames, name) || registered_named(name, r))
    throw InternalError("ready order registered twice: " + std::string(name));
  r.policies.push_back({std::string(name), run});
  return static_cast<ReadyOrder>(kBuiltins + static_cast<int32_t>(r.policies.size()) - 1);
}

SimResult simulate_costed(const TaskGraph& graph, std::vector<TaskCost> kind_costs,
                          const Hardware& hw, const SimOptions& options) {
  if (!graph.finalized()) throw InternalError("task graph: simulate() needs a finalized graph");
  if (kind_costs.size() != graph.kinds.size())
    throw InternalError("task graph: one cost per task kind is required");
  // The runtime and its ready order are chosen here, once: each is a type, so the event loop is
  // compiled for it (sim/ready_orders.hpp).
  const auto pass = [&](const SimOptions& opt, std::vector<TaskCost> costs) {
    if (graph.runtime == RuntimeStyle::kSpmd)
      return run<SpmdRuntime>(graph, std::move(costs), hw, opt);
    return ready_order_run(opt.ready_order)(graph, std::move(costs), hw, opt);
  };
  // Cores reading one block at once queue for its lines together, the first to start as much as
  // the last, but a pass knows only who started before. Where blocks are shared (and L2 queues),
  // a second pass counts each block's co-readers on both sides from the first pass's starts.
  if (!graph.has_accesses()) return pass(options, std::move(kind_costs));
  SimOptions opt = options;
  if (!opt.l2_blocks) opt.l2_blocks = std::make_shared<const L2Blocks>(graph);
  if (!opt.prior_starts.empty() || hw.l2.same_line_request_ns <= 0 || !opt.l2_blocks->shared())
    return pass(opt, std::move(kind_costs));
  opt.find_co_readers = true;
  SimResult first = pass(opt, kind_costs);
  if (!first.l2_co_readers) return first;  // the second pass would repeat the first
  opt.find_co_readers = false;
  opt.prior_starts.reserve(first.tasks.size());
  for (const TaskRecord& r : first.tasks) opt.prior_starts.push_back(r.start);
  return pass(opt, std::move(kind_costs));
}

SimResult simulate(const TaskGraph& graph, const Hardware& hw, const SimOptions& options) {
  std::vector<TaskCost> costs;
  costs.reserve(graph.kinds.size());
  for (const auto& k : graph.kinds) costs.push_back(cost_task_kind(k, hw));
  return simulate_costed(graph, std::move(costs), hw, options);
}

}  // namespace tilesim
