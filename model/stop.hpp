#pragma once
// A cooperative stop for work that runs long on one thread (lowering a candidate, simulating
// it): whoever runs the work points this thread at a flag (StopWhen, a scope), and the loops that
// grow with the work call check_stop() now and then, which throws Stopped once the flag is set.
// A sweep cancelled by Ctrl-C stops its running candidates this way, not after them.

#include <atomic>
#include <exception>

namespace tilesim {

struct Stopped : std::exception {
  const char* what() const noexcept override { return "stopped"; }
};

namespace detail {
inline thread_local const std::atomic<bool>* t_stop_flag = nullptr;
}

// Throws Stopped when this thread's flag is set.
inline void check_stop() {
  if (const auto* flag = detail::t_stop_flag; flag && flag->load(std::memory_order_relaxed))
    throw Stopped();
}

// While it lives, check_stop() on this thread watches `flag` (nullptr: nothing).
class StopWhen {
 public:
  explicit StopWhen(const std::atomic<bool>* flag) : saved_(detail::t_stop_flag) {
    detail::t_stop_flag = flag;
  }
  ~StopWhen() { detail::t_stop_flag = saved_; }
  StopWhen(const StopWhen&) = delete;
  StopWhen& operator=(const StopWhen&) = delete;

 private:
  const std::atomic<bool>* saved_;
};

}  // namespace tilesim
