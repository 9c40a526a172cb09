#include "sim/shared_bandwidth.hpp"

#include <algorithm>

namespace tilesim {

void SharedBandwidth::advance(double now) {
  if (now > now_) vclock_ += (now - now_) * rate_;
  now_ = std::max(now_, now);
}

void SharedBandwidth::update_rate() {
  if (heap_.empty()) demand_ = 0;  // drop accumulated rounding
  rate_ = demand_ > capacity_ ? capacity_ / demand_ : 1.0;
}

void SharedBandwidth::start(int32_t task, double now, double duration, double gm_bytes) {
  advance(now);
  const double demand = duration > 0 ? gm_bytes / duration : 0.0;
  demand_ += demand;
  heap_.push(Flow{vclock_ + std::max(duration, 0.0), task, demand});
  update_rate();
}

double SharedBandwidth::next_finish() const {
  if (heap_.empty()) return std::numeric_limits<double>::infinity();
  return now_ + std::max(0.0, heap_.top().vfinish - vclock_) / rate_;
}

int32_t SharedBandwidth::finish_next() {
  const double t = next_finish();
  advance(t);
  const Flow f = heap_.top();
  heap_.pop();
  demand_ -= f.demand;
  update_rate();
  return f.task;
}

}  // namespace tilesim
