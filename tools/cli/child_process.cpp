#include "tools/cli/child_process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include <fmt/format.h>

#include "model/error.hpp"
#include "tools/formats/output_file.hpp"

namespace tilesim {

namespace {

struct Pipe {
  int read = -1, write = -1;
  Pipe() {
    int fds[2];
    if (::pipe2(fds, O_CLOEXEC) != 0)
      throw InternalError(std::string("trace-pypto: pipe failed: ") + std::strerror(errno));
    read = fds[0];
    write = fds[1];
  }
  ~Pipe() {
    for (int fd : {read, write})
      if (fd >= 0) ::close(fd);
  }
  Pipe(const Pipe&) = delete;
  Pipe& operator=(const Pipe&) = delete;
  void close_write() {
    ::close(write);
    write = -1;
  }
};

// In the child, between fork and exec: async-signal-safe calls only.
[[noreturn]] void exec_child(char* const* argv, char* const* envp, const ChildLimits& limits,
                             pid_t parent, int devnull, int result_fd, int exec_error_fd) {
  ::setpgid(0, 0);
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (::getppid() != parent) ::_exit(127);  // the command is already gone
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (limits.memory_bytes > 0) {
    rlimit r{};
    ::getrlimit(RLIMIT_DATA, &r);
    const auto want = static_cast<rlim_t>(limits.memory_bytes);
    if (r.rlim_max == RLIM_INFINITY || want < r.rlim_max) r.rlim_max = want;
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_DATA, &r);
  }
  ::dup2(devnull, STDIN_FILENO);
  ::dup2(STDERR_FILENO, STDOUT_FILENO);
  if (result_fd == 3)
    ::fcntl(3, F_SETFD, 0);
  else
    ::dup2(result_fd, 3);
  ::execve(argv[0], argv, envp);
  const int err = errno;
  if (::write(exec_error_fd, &err, sizeof err) < 0) ::_exit(127);
  ::_exit(127);
}

// Reads what is there on `fd` (non-blocking) into `out`; false at end of file.
bool read_available(int fd, std::string& out) {
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno == EAGAIN;
  }
}

void record_status(int status, ChildOutcome& o) {
  o.exited = WIFEXITED(status);
  if (o.exited) o.exit_code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) o.signal = WTERMSIG(status);
}

}  // namespace

ChildOutcome run_child(const std::vector<std::string>& argv_text,
                       const std::vector<std::string>& env_text, const ChildLimits& limits) {
  std::vector<std::string> args = argv_text, env = env_text;
  std::vector<char*> argv, envp;
  for (auto& s : args) argv.push_back(s.data());
  for (auto& s : env) envp.push_back(s.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  const int devnull = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  Pipe result, exec_error;
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(devnull);
    throw InternalError(std::string("trace-pypto: fork failed: ") + std::strerror(errno));
  }
  if (pid == 0)
    exec_child(argv.data(), envp.data(), limits, parent, devnull, result.write, exec_error.write);
  ::setpgid(pid, pid);  // as the child does, so the group exists before either runs on
  stop_child_with_the_command(pid);
  ::close(devnull);
  result.close_write();
  exec_error.close_write();

  ChildOutcome o;
  int err = 0;
  while (::read(exec_error.read, &err, sizeof err) < 0 && errno == EINTR) {
  }
  int status = 0;
  if (err != 0) {
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    stop_child_with_the_command(0);
    o.exec_errno = err;
    return o;
  }
  ::fcntl(result.read, F_SETFL, O_NONBLOCK);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                            std::chrono::duration<double>(limits.seconds));
  bool open = true;
  for (;;) {
    if (open) {
      pollfd p{result.read, POLLIN, 0};
      ::poll(&p, 1, 50);
      open = read_available(result.read, o.result);
    } else {
      ::poll(nullptr, 0, 20);
    }
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    o.result_too_large =
        limits.result_bytes > 0 && static_cast<int64_t>(o.result.size()) > limits.result_bytes;
    o.timed_out = limits.seconds > 0 && std::chrono::steady_clock::now() > deadline;
    if (o.result_too_large || o.timed_out) {
      ::kill(-pid, SIGKILL);
      while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      break;
    }
  }
  if (open) read_available(result.read, o.result);  // what it wrote just before it ended
  ::kill(-pid, SIGKILL);                            // whatever it left running in its group
  stop_child_with_the_command(0);
  record_status(status, o);
  return o;
}

}  // namespace tilesim
