// sim/event_queue.hpp: events pop in (time, push order), whatever lane they were pushed on and
// however far out of order they arrive.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <vector>

#include "sim/event_queue.hpp"

namespace tilesim {
namespace {

struct Pushed {
  double t;
  int32_t id;  // push order
};

std::vector<int32_t> drain(EventQueue& q) {
  std::vector<int32_t> ids;
  while (q.next_time() != std::numeric_limits<double>::infinity()) ids.push_back(q.pop().id);
  return ids;
}

TEST(EventQueue, EmptyQueueIsAtInfinity) {
  EventQueue q;
  EXPECT_EQ(q.next_time(), std::numeric_limits<double>::infinity());
}

TEST(EventQueue, PopsByTimeThenPushOrder) {
  EventQueue q;
  // (time, lane) in push order; ids are the push order.
  const std::pair<double, int> pushes[] = {{5, 0}, {3, 1}, {5, 2}, {3, 0}, {1, 6}, {5, 1}, {3, 2}};
  for (int32_t i = 0; i < 7; ++i) q.push(pushes[i].second, pushes[i].first, 1, i);
  EXPECT_EQ(q.next_time(), 1);
  // Time 1: #4; time 3: #1, #3, #6 in push order; time 5: #0, #2, #5.
  EXPECT_EQ(drain(q), (std::vector<int32_t>{4, 1, 3, 6, 0, 2, 5}));
}

TEST(EventQueue, TiesOnOneLaneKeepPushOrder) {
  EventQueue q;
  for (int32_t i = 0; i < 100; ++i) q.push(3, 7.0, 2, i);
  std::vector<int32_t> want(100);
  for (int32_t i = 0; i < 100; ++i) want[static_cast<size_t>(i)] = i;
  EXPECT_EQ(drain(q), want);
}

TEST(EventQueue, CarriesTypeAndTime) {
  EventQueue q;
  q.push(0, 2.5, 3, 42);
  EXPECT_EQ(q.next_time(), 2.5);
  const Event e = q.pop();
  EXPECT_EQ(e.id, 42);
  EXPECT_EQ(e.type, 3);
  EXPECT_EQ(e.key.t(), 2.5);
}

// Far out-of-order pushes (beyond a lane's insertion window, into the overflow heap) and pops
// interleaved with pushes give the same order as a stable sort by time.
TEST(EventQueue, MatchesAStableSortUnderRandomPushesAndPops) {
  std::mt19937 rng(3);
  EventQueue q;
  std::vector<Pushed> pending;
  std::vector<int32_t> got, want;
  double now = 0;
  int32_t next_id = 0;
  for (int round = 0; round < 2000; ++round) {
    const int pushes = static_cast<int>(rng() % 4);
    for (int p = 0; p < pushes; ++p) {
      // Mostly near now, sometimes far ahead; coarse times make ties common.
      const double ahead =
          rng() % 5 == 0 ? static_cast<double>(rng() % 200) : static_cast<double>(rng() % 8);
      const double t = now + ahead;
      q.push(static_cast<int>(rng() % EventQueue::kLanes), t, 0, next_id);
      pending.push_back({t, next_id++});
    }
    if (rng() % 2 == 0 && !pending.empty()) {
      const auto first = std::min_element(pending.begin(), pending.end(), [](auto& a, auto& b) {
        return a.t < b.t || (a.t == b.t && a.id < b.id);
      });
      want.push_back(first->id);
      now = first->t;
      pending.erase(first);
      ASSERT_EQ(q.next_time(), now);
      got.push_back(q.pop().id);
    }
  }
  std::stable_sort(pending.begin(), pending.end(), [](auto& a, auto& b) { return a.t < b.t; });
  for (const auto& p : pending) want.push_back(p.id);
  const auto rest = drain(q);
  got.insert(got.end(), rest.begin(), rest.end());
  EXPECT_EQ(got, want);
}

}  // namespace
}  // namespace tilesim
