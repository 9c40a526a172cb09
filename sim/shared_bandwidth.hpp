#pragma once
// Shared global-memory bandwidth as a fluid (processor-sharing) resource.
//
// Every running task is a flow that, alone, would move its GM bytes over its idle-machine
// duration: its demand is bytes / duration. While the summed demand exceeds the capacity, every
// flow is slowed by the same factor capacity / demand (HBM serves all cores' requests
// interleaved, so each sees the same stretch). Because all flows share one factor, progress is
// one virtual clock: a task finishes when the virtual clock has advanced by its duration, so each
// start and finish costs O(log n).

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "sim/dary_heap.hpp"

namespace tilesim {

class SharedBandwidth {
 public:
  explicit SharedBandwidth(double capacity_bytes_per_cycle) : capacity_(capacity_bytes_per_cycle) {}

  void start(int32_t task, double now, double duration, double gm_bytes);
  // Time of the next finish, +inf when nothing runs.
  double next_finish() const;
  // Removes the flow finishing next; call at time next_finish().
  int32_t finish_next();
  double slowdown() const { return 1.0 / rate_; }
  size_t running() const { return heap_.size(); }

 private:
  void advance(double now);
  void update_rate();

  struct Flow {
    double vfinish;
    int32_t task;
    double demand;
  };
  struct FlowBefore {
    bool operator()(const Flow& a, const Flow& b) const {
      return a.vfinish != b.vfinish ? a.vfinish < b.vfinish : a.task < b.task;
    }
  };
  double capacity_;
  double now_ = 0;
  double vclock_ = 0;
  double rate_ = 1;
  double demand_ = 0;
  DaryHeap<Flow, FlowBefore> heap_;
};

}  // namespace tilesim
