#pragma once
// A child process whose lifetime is the command's: it runs in a process group of its own, which
// the stop signals (SIGINT, SIGTERM, SIGHUP) kill before the command exits, and it dies with the
// command however the command ends (PR_SET_PDEATHSIG); it is bounded in wall time and memory.
// The child's stdout goes to the command's stderr, its stdin is /dev/null, and what it writes to
// descriptor 3 is its result, collected here.

#include <cstdint>
#include <string>
#include <vector>

namespace tilesim {

struct ChildLimits {
  double seconds = 0;        // wall time; then the group is killed (SIGKILL)
  int64_t memory_bytes = 0;  // RLIMIT_DATA of the child (0: none of our own)
  int64_t result_bytes = 0;  // the most it may write to descriptor 3; then it is killed
};

struct ChildOutcome {
  std::string result;   // what it wrote to descriptor 3
  bool exited = false;  // exit_code is valid
  int exit_code = 0;
  int signal = 0;          // the signal that ended it (when !exited)
  bool timed_out = false;  // killed at ChildLimits::seconds
  bool result_too_large = false;
  int exec_errno = 0;  // the program could not be started (errno of execve)
};

// Runs argv[0] (a path) with `env`; throws tilesim::InternalError when no process can be made.
ChildOutcome run_child(const std::vector<std::string>& argv, const std::vector<std::string>& env,
                       const ChildLimits& limits);

}  // namespace tilesim
