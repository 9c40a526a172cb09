#include "tools/cli/progress.hpp"

#include <unistd.h>

#include <chrono>
#include <iostream>

#include <fmt/format.h>

namespace tilesim {

ProgressBar::ProgressBar(std::string what, const std::atomic<int64_t>& done,
                         const std::atomic<int64_t>& total, bool quiet)
    : what_(std::move(what)), done_(done), total_(total) {
  if (quiet || !isatty(STDERR_FILENO)) return;
  thread_ = std::thread([this] { loop(); });
}

ProgressBar::~ProgressBar() {
  stop();
}

void ProgressBar::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void ProgressBar::loop() {
  const auto start = std::chrono::steady_clock::now();
  const auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  bool drawn = false;
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, std::chrono::milliseconds(100), [this] { return stopped_; })) {
    if (seconds() < 1.0 || total_.load(std::memory_order_relaxed) <= 1) continue;
    draw(seconds());
    drawn = true;
  }
  if (drawn) {
    draw(seconds());
    std::cerr << "\n";
  }
}

void ProgressBar::draw(double seconds) const {
  const int64_t total = total_.load(std::memory_order_relaxed);
  const int64_t n = std::min(done_.load(std::memory_order_relaxed), total);
  constexpr int kWidth = 40;
  const int filled = total > 0 ? static_cast<int>(kWidth * n / total) : 0;
  std::cerr << fmt::format("\r  [{}{}] {}/{} {}  {:.1f} s", std::string(filled, '#'),
                           std::string(kWidth - filled, ' '), n, total, what_, seconds)
            << std::flush;
}

}  // namespace tilesim
