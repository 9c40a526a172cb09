#include "tools/formats/output_file.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <system_error>
#include <vector>

#include "model/error.hpp"
#include "model/input_files.hpp"

namespace tilesim {

namespace {

// ---- the open transaction, and what a signal handler may see of it ----

struct Staged {
  std::filesystem::path tmp, target;
};
bool g_open = false;
std::vector<Staged> g_staged;  // the open transaction's temporaries, in the order written

// The temporaries' names as the signal handler reads them: fixed slots of C strings, published
// and cleared atomically, so the handler never sees a half-built container. A command writes far
// fewer files than there are slots; past them a temporary is still removed on error, only not on
// a kill.
constexpr size_t kSignalSlots = 1024;
std::array<std::atomic<char*>, kSignalSlots> g_slots{};
std::atomic<bool> g_committed{false};
static_assert(std::atomic<char*>::is_always_lock_free, "the signal handler reads it");

void publish_temporary(const std::filesystem::path& tmp) {
  for (auto& slot : g_slots) {
    char* expected = nullptr;
    char* name = ::strdup(tmp.c_str());
    if (slot.compare_exchange_strong(expected, name)) return;
    std::free(name);
  }
}

void forget_temporaries() {
  for (auto& slot : g_slots) std::free(slot.exchange(nullptr));
}

// A stop signal may land on any thread (TBB keeps its workers), so the handler and the commit
// agree through one atomic state instead of a signal mask: a signal during the commit is held
// until every rename is done, and a commit never starts once a stop has begun.
enum State : int { kIdle, kCommitting, kStopping };
std::atomic<int> g_state{kIdle};
std::atomic<int> g_held_signal{0};
std::atomic<int> g_child_group{0};  // killed by a stop signal before the command exits
static_assert(std::atomic<int>::is_always_lock_free, "the signal handler uses it");

[[noreturn]] void stop_by(int sig, bool written) {
  const char* name = sig == SIGTERM ? "SIGTERM" : sig == SIGINT ? "SIGINT" : "SIGHUP";
  const char* what = written ? " after its outputs were written\n"
                             : "; no output file written (old outputs kept)\n";
  for (const char* part : {"tilesim: stopped by ", name, what})
    if (::write(STDERR_FILENO, part, std::strlen(part)) < 0) break;
  ::_exit(128 + sig);  // as a stopped sweep exits
}

extern "C" void remove_temporaries_and_stop(int sig) {
  int expected = kIdle;
  if (!g_state.compare_exchange_strong(expected, kStopping)) {
    if (expected == kCommitting) g_held_signal = sig;  // the commit ends the process when done
    return;                                            // or another thread is already stopping
  }
  if (const int group = g_child_group.load(); group > 0) ::kill(-group, SIGKILL);
  for (auto& slot : g_slots)
    if (const char* name = slot.load()) ::unlink(name);
  stop_by(sig, g_committed.load());
}

// ---- where a path leads ----

// The descriptor `p` names: /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N,
// /proc/thread-self/fd/N or /proc/<this process>/fd/N.
std::optional<int> descriptor_of(const std::filesystem::path& p) {
  const std::string s = p.lexically_normal().string();
  if (s == "/dev/stdout") return STDOUT_FILENO;
  if (s == "/dev/stderr") return STDERR_FILENO;
  for (const std::string& prefix :
       {std::string("/dev/fd/"), std::string("/proc/self/fd/"),
        std::string("/proc/thread-self/fd/"), fmt::format("/proc/{}/fd/", ::getpid())}) {
    if (s.rfind(prefix, 0) != 0) continue;
    int fd = -1;
    const char* end = s.data() + s.size();
    const auto [ptr, ec] = std::from_chars(s.data() + prefix.size(), end, fd);
    if (ec == std::errc() && ptr == end && fd >= 0) return fd;
  }
  return std::nullopt;
}

struct Target {
  std::filesystem::path path;  // the file the last link points to
  std::optional<int> fd;       // or the open descriptor a link into /proc/self/fd names
};

Target resolve(const std::filesystem::path& file) {
  constexpr int kMaxLinks = 40;  // Linux's own limit
  std::filesystem::path p = file;
  for (int hop = 0; hop <= kMaxLinks; ++hop) {
    if (const auto fd = descriptor_of(p)) return {p, fd};
    std::error_code ec;
    if (!std::filesystem::is_symlink(p, ec)) return {p, std::nullopt};
    const auto next = std::filesystem::read_symlink(p, ec);
    if (ec) return {p, std::nullopt};
    p = next.is_absolute() ? next : p.parent_path() / next;
  }
  throw Error(fmt::format("{}: more than {} symbolic links lead from it (a loop of links?)",
                          file.string(), kMaxLinks));
}

// To an open descriptor, after what the process wrote there before.
void write_descriptor(int fd, const std::filesystem::path& file,
                      const std::function<void(std::ostream&)>& write, const std::string& what) {
  const auto fail = [&] {
    throw Error(file.string() + ": cannot write " + what + ": " + std::strerror(errno));
  };
  if (fd == STDOUT_FILENO || fd == STDERR_FILENO) {
    std::ostream& out = fd == STDOUT_FILENO ? std::cout : std::cerr;
    write(out);
    out.flush();
    if (!out) fail();
    return;
  }
  std::cout.flush();
  std::ostringstream text;
  write(text);
  const std::string s = std::move(text).str();
  for (size_t done = 0; done < s.size();) {
    const ssize_t n = ::write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail();
    done += static_cast<size_t>(n);
  }
}

}  // namespace

void write_file_atomically(const std::filesystem::path& file,
                           const std::function<void(std::ostream&)>& write,
                           const std::string& what) {
  // However the input was reached (a program a config names, a hardware file's base, a point's
  // config_file): an output never replaces a file this command read.
  if (const auto input = read_as_input(file))
    throw Error(file.string() + ": is one of the command's input files (read as " + *input +
                "): " + what + " not written (write it elsewhere)");
  const Target target = resolve(file);
  if (target.fd) return write_descriptor(*target.fd, file, write, what);
  std::error_code ec;
  if (std::filesystem::exists(target.path, ec) &&
      !std::filesystem::is_regular_file(target.path, ec)) {
    // A device or a pipe: written in place, its errors still checked.
    std::ofstream out(target.path, std::ios::binary);
    if (out) write(out);
    out.flush();
    if (!out) throw Error(file.string() + ": cannot write " + what + ": " + std::strerror(errno));
    return;
  }
  std::filesystem::path tmp = target.path;
  tmp += ".tilesim-tmp-" + std::to_string(::getpid());
  const auto fail = [&](const std::string& why) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw Error(file.string() + ": cannot write " + what + ": " + why);
  };
  if (g_open) {
    publish_temporary(tmp);  // before the file exists, so a kill cannot leave it behind
    g_staged.push_back({tmp, target.path});
    while (g_state.load() == kStopping) ::pause();  // another thread is ending the process
  }
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) fail(std::strerror(errno));
    write(out);
    out.flush();
    if (!out) fail(std::strerror(errno));
    out.close();
    if (out.fail()) fail(std::strerror(errno));
  }
  if (g_open) return;  // renamed at the commit
  std::filesystem::rename(tmp, target.path, ec);
  if (ec) fail(ec.message());
}

OutputTransaction::OutputTransaction() {
  if (g_open) throw InternalError("an output transaction is already open");
  g_open = true;
  g_committed = false;
}

OutputTransaction::~OutputTransaction() {
  std::error_code ignored;
  for (const auto& s : g_staged) std::filesystem::remove(s.tmp, ignored);
  g_staged.clear();
  forget_temporaries();
  g_open = false;
}

void OutputTransaction::commit() {
  int expected = kIdle;
  if (!g_state.compare_exchange_strong(expected, kCommitting))
    for (;;) ::pause();  // a stop signal is removing the temporaries and ends the process
  std::string failure;
  for (size_t i = 0; i < g_staged.size() && failure.empty(); ++i) {
    std::error_code ec;
    std::filesystem::rename(g_staged[i].tmp, g_staged[i].target, ec);
    // Renames within one folder fail only on a broken file system; say what changed.
    if (ec)
      failure = fmt::format(
          "{}: cannot replace it ({}); {} of the command's {} output files were replaced before it",
          g_staged[i].target.string(), ec.message(), i, g_staged.size());
  }
  g_committed = failure.empty();
  g_state = kIdle;
  if (const int sig = g_held_signal.exchange(0)) {
    for (auto& slot : g_slots)
      if (const char* name = slot.load()) ::unlink(name);
    stop_by(sig, g_committed);
  }
  if (!failure.empty()) throw Error(failure);
  g_staged.clear();
  forget_temporaries();
}

void remove_temporaries_on_stop_signals() {
  struct sigaction sa {};
  sa.sa_handler = remove_temporaries_and_stop;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

void stop_child_with_the_command(int process_group) {
  g_child_group = process_group;
}

void check_not_an_input(const std::filesystem::path& output, const std::string& option,
                        const std::filesystem::path& input) {
  std::error_code ec;
  if (output.string() != "-" && std::filesystem::exists(output, ec) &&
      std::filesystem::equivalent(output, input, ec))
    throw Error(option + " " + output.string() +
                ": is the command's own input file (write the output elsewhere)");
}

}  // namespace tilesim
