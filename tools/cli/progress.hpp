#pragma once
// A progress bar on stderr for a long command (sweep, validate): drawn once the work has run for
// a second, when stderr is a terminal and the command is not quiet (-q); nothing otherwise. The
// workers count `done` against `total` (set at the start, or once the work is counted).

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

namespace tilesim {

class ProgressBar {
 public:
  // `what` names the units ("candidates", "points"); the counters outlive the bar.
  ProgressBar(std::string what, const std::atomic<int64_t>& done, const std::atomic<int64_t>& total,
              bool quiet);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  // Draws the last state (when drawn at all) and ends the line; the destructor does it too.
  void stop();

 private:
  void loop();
  void draw(double seconds) const;

  std::string what_;
  const std::atomic<int64_t>& done_;
  const std::atomic<int64_t>& total_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopped_ = false;
};

}  // namespace tilesim
