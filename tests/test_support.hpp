#pragma once
// Helpers shared by the test programs.

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <functional>
#include <string>

#include "model/error.hpp"
#include "model/hardware.hpp"

// The first line of a case that walks every shipped config of a kind (each sweep, each program),
// whose code other cases run on a few: a build without the figure tests (the sanitizer pass,
// tests/CMakeLists.txt) skips it.
#define TILESIM_EVERY_SHIPPED_CONFIG() \
  if (!TILESIM_FIGURE_TESTS) GTEST_SKIP() << "every shipped config: the Release pass"

namespace tilesim::test {

inline Hardware default_hw() {
  return load_hardware(default_hardware_path());
}

// The default machine with every runtime overhead set to zero, so closed forms are exact.
inline Hardware ideal_runtime_hw() {
  Hardware hw = default_hw();
  hw.scheduler.dispatch_cycles = hw.scheduler.resolve_cycles = hw.scheduler.resolve_last_cycles =
      hw.scheduler.completion_cycles = 0;
  hw.scheduler.poll_ns = hw.scheduler.notify_ns = hw.scheduler.completion_notify_ns =
      hw.scheduler.task_gap_ns = hw.scheduler.block_start_ns = 0;
  hw.control.root_build_ns = hw.control.task_build_ns = hw.control.device_task_submit_ns = 0;
  hw.kernel.core_start_ns = 0;
  return hw;
}

inline std::string source_path(const std::string& rel) {
  return std::string(TILESIM_SOURCE_DIR) + "/" + rel;
}

// Runs the tilesim binary with `args`; stdout (and stderr unless told otherwise) captured.
struct CmdResult {
  int code;
  std::string out;
};

// Runs the shell command `command`; stdout (and stderr unless told otherwise) captured.
inline CmdResult run_command(const std::string& command, bool with_stderr = true) {
  const std::string cmd = command + (with_stderr ? " 2>&1" : " 2>/dev/null");
  FILE* p = popen(cmd.c_str(), "r");
  std::string out;
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) out.append(buf.data(), n);
  const int status = pclose(p);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, out};
}

inline CmdResult run_cli(const std::string& args, bool with_stderr = true) {
  return run_command(std::string(TILESIM_BINARY) + " " + args, with_stderr);
}

// The message of the tilesim::Error `f` throws, or "(no error)".
inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

}  // namespace tilesim::test
