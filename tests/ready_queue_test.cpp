// sim/ready_queue.hpp: the two ready orders, by hand.
#include <gtest/gtest.h>

#include <vector>

#include "sim/ready_queue.hpp"

namespace tilesim {
namespace {

// Pushes (task, root) pairs, popping whenever the task is -1; returns the tasks in pop order.
template <class Queue>
std::vector<int32_t> order(int32_t roots, const std::vector<std::pair<int32_t, int32_t>>& script) {
  Queue q;
  q.init(roots, 0);
  std::vector<int32_t> out;
  double t = 0;
  for (const auto& [task, root] : script) {
    if (task < 0)
      out.push_back(q.pop().task);
    else
      q.push({task, t++}, root);
  }
  while (!q.empty()) out.push_back(q.pop().task);
  return out;
}

// Roots 0 and 1 release tasks 10, 11 (root 0) and 20, 21 (root 1); one pop takes 10; then root
// 0's second pass (12) becomes ready, then root 2's first task (30).
const std::vector<std::pair<int32_t, int32_t>> kScript = {{10, 0}, {11, 0}, {20, 1}, {21, 1},
                                                          {-1, 0}, {12, 0}, {30, 2}};

TEST(ReadyQueue, FifoServesByReadyTime) {
  EXPECT_EQ(order<FifoReadyQueue>(3, kScript), (std::vector<int32_t>{10, 11, 20, 21, 12, 30}));
}

TEST(ReadyQueue, OldestRootFirstLetsAnOlderRootOvertake) {
  EXPECT_EQ(order<OldestRootFirstReadyQueue>(3, kScript),
            (std::vector<int32_t>{10, 11, 12, 20, 21, 30}));
}

TEST(ReadyQueue, KeepsTheReadyTime) {
  OldestRootFirstReadyQueue q;
  q.init(2, 0);
  q.push({7, 1.5}, 1);
  q.push({8, 2.5}, 0);
  const Ready r = q.pop();
  EXPECT_EQ(r.task, 8);
  EXPECT_EQ(r.at, 2.5);
  EXPECT_FALSE(q.empty());
  EXPECT_EQ(q.pop().at, 1.5);
  EXPECT_TRUE(q.empty());
}

// A FIFO grows past its initial room and keeps its order across the ring's wrap-around.
TEST(ReadyQueue, FifoGrowsAndWrapsInOrder) {
  FifoReadyQueue q;
  q.init(1, 0);
  int32_t pushed = 0, popped = 0;
  for (int round = 0; round < 50; ++round) {
    for (int i = 0; i < 100; ++i) q.push({pushed++, 0}, 0);
    for (int i = 0; i < 60; ++i) ASSERT_EQ(q.pop().task, popped++);
  }
  while (!q.empty()) ASSERT_EQ(q.pop().task, popped++);
  EXPECT_EQ(popped, pushed);
}

// Roots above 64 use later words of the non-empty set; an emptied bucket is reused.
TEST(ReadyQueue, OldestRootFirstAcrossManyRoots) {
  OldestRootFirstReadyQueue q;
  q.init(200, 0);
  for (int32_t r : {150, 70, 3, 199, 64}) q.push({r, 0}, r);
  EXPECT_EQ(q.pop().task, 3);
  q.push({1000, 0}, 3);
  q.push({1001, 0}, 100);
  std::vector<int32_t> out;
  while (!q.empty()) out.push_back(q.pop().task);
  EXPECT_EQ(out, (std::vector<int32_t>{1000, 64, 70, 1001, 150, 199}));
}

}  // namespace
}  // namespace tilesim
