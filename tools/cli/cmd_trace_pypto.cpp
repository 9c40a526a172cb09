// tilesim trace-pypto KERNEL.py|-m MODULE --json FILE [--call EXPR] [--kernel NAME] [--main]
//                     [--timeout S] [--max-memory M]
// tilesim trace-triton KERNEL.py|-m MODULE --json FILE [--call EXPR] [--kernel NAME] [--main]
//                     [--hardware H] [--timeout S] [--max-memory M]
// Traces a PyPTO kernel file (or a module of a package on PYTHONPATH) into a tile program: runs
// `python3 -m tilesim.pypto` (the Python module's tracer, python/tilesim/pypto/) on it, with its
// `import pypto` served by tilesim.pypto and `import torch` / `torch_npu` by tilesim's torch
// stand-in (python/tilesim/torch_standin/); --call's expression (the wrapper call whose tensors
// fix the kernel's dynamic shapes) runs after the file. trace-triton does the same for a
// Triton(-Ascend) kernel file with `python3 -m tilesim.triton` (python/tilesim/triton/): its
// `import triton` is served by tilesim.triton, --call launches the kernel, and what is written is
// the launch's run config (the program inline, the spmd partition, "source": "triton", the
// hardware --hardware names, whose core counts the device-properties query answered). The tracer is
// a child whose lifetime is the command's (child_process.hpp): killed with it, bounded in time and
// memory; the kernel file's own stdout goes to stderr. It hands its verdict back on a pipe, and the
// program is written here, through the writer every output takes (atomic, never over the kernel
// file). The program written is what `run` and `sweep` take ("program": FILE). Exit codes: 0
// written; 2 bad input: the file, an unsupported PyPTO call, the kernel file raising, exiting or
// dying, over its time or memory (one line naming the kernel file), or no tilesim module for this
// python3; 3 a bug.
#include <signal.h>
#include <string.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "model/error.hpp"
#include "model/input_files.hpp"
#include "model/printable.hpp"
#include "tools/cli/child_process.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/options.hpp"

extern char** environ;

namespace tilesim {

namespace {

// What differs between the two tracers: the Python module, its result header, the words.
struct FrontEnd {
  std::string command;  // trace-pypto
  std::string module;   // tilesim.pypto
  std::string header;   // the result descriptor's first line
  std::string file;     // "a PyPTO kernel file (python)"
  std::string written;  // "the program"
  std::string hint;     // what the written file is for
};

const FrontEnd kPypto{"trace-pypto",       "tilesim.pypto",
                      "tilesim.pypto 1\n", "a PyPTO kernel file (python)",
                      "the program",       "a run or sweep config's \"program\""};
const FrontEnd kTriton{"trace-triton",       "tilesim.triton",
                       "tilesim.triton 1\n", "a Triton kernel file (python)",
                       "the launch",         "a run config"};

struct TraceArgs {
  std::string kernel_file, module, json, kernel, call, hardware;
  bool as_main = false;
  bool quiet = false;
  bool sweep = false;  // trace-triton: sweep the meta-parameters too
  double timeout_s = 600;
  int64_t max_memory_mib = 8192;
};

// What the tracer writes on its result pipe (python/tilesim/pypto/__main__.py answer): the
// header when it starts, then "error\n<message>" or "program\n<summary>\n<JSON>".
constexpr int64_t kMaxProgramBytes = int64_t{1} << 30;

// The python3 the module was built for (TILESIM_PYTHON3 overrides it).
std::string python3() {
  if (const char* p = std::getenv("TILESIM_PYTHON3"); p && *p) return p;
  return TILESIM_PYTHON3_PATH;
}

// The folder holding the tilesim package beside the command: build/python in a build tree
// (build/tools/tilesim), PREFIX/lib/python3*/dist-packages after `cmake --install` to PREFIX.
std::string module_dir() {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const fs::path up = exe.parent_path().parent_path();
  std::vector<fs::path> dirs = {up / "python", up / "lib/python3/dist-packages"};
  for (const auto& e : fs::directory_iterator(up / "lib", ec))
    if (e.path().filename().string().rfind("python3.", 0) == 0)
      dirs.push_back(e.path() / "dist-packages");
  for (const auto& d : dirs)
    if (fs::exists(d / "tilesim" / "pypto" / "__main__.py", ec)) return d.string();
  return "";
}

std::vector<std::string> child_environment() {
  std::string path = module_dir();
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string var = *e;
    if (var.rfind("PYTHONPATH=", 0) != 0)
      env.push_back(var);
    else if (var.size() > 11)
      path += (path.empty() ? "" : ":") + var.substr(11);
  }
  if (!path.empty()) env.push_back("PYTHONPATH=" + path);
  return env;
}

std::string signal_name(int sig) {
  const char* abbrev = ::sigabbrev_np(sig);
  return abbrev ? std::string("SIG") + abbrev : fmt::format("signal {}", sig);
}

// The tracer ended without its verdict: how, as one line naming the kernel file.
std::string how_it_ended(const FrontEnd& fe, const TraceArgs& a, const ChildOutcome& o,
                         bool started) {
  const std::string file = a.kernel_file.empty() ? "module " + a.module : a.kernel_file;
  if (o.timed_out)
    return fmt::format(
        "{}: the kernel file ran longer than --timeout {} s; its tracer was "
        "stopped (raise --timeout if it needs longer)",
        file, a.timeout_s);
  if (o.result_too_large)
    return fmt::format("{}: the traced program is over {} bytes", file, kMaxProgramBytes);
  if (!started)
    return fmt::format(
        "{}: {} -m {} could not start its tracer ({}): the tilesim "
        "module is not installed for this python3 (see above; TILESIM_PYTHON3 "
        "names another)",
        file, python3(), fe.module,
        o.exited ? fmt::format("exit {}", o.exit_code) : signal_name(o.signal));
  if (!o.exited)
    return fmt::format(
        "{}: python3 died of {} while running the kernel file{}", file, signal_name(o.signal),
        o.signal == SIGKILL
            ? fmt::format(" (out of memory? --max-memory is {} MiB)", a.max_memory_mib)
            : "");
  return fmt::format("{}: the kernel file ended python3 (exit {}) before any kernel was traced",
                     file, o.exit_code);
}

int trace(const FrontEnd& fe, const TraceArgs& a) {
  if (a.kernel_file.empty() == a.module.empty())
    throw Error(fe.command + ": give a kernel file or -m MODULE (one of them)");
  std::vector<std::string> args = {python3(), "-m", fe.module, "--result-fd", "3"};
  if (!a.kernel_file.empty()) {
    if (!std::filesystem::is_regular_file(a.kernel_file))
      throw Error(a.kernel_file + ": no such file (" + fe.file + ")");
    note_input_file(a.kernel_file);
    check_outputs_not_inputs({{"--json", a.json}}, {a.kernel_file});
    args.push_back(a.kernel_file);
  } else {
    args.insert(args.end(), {"-m", a.module});
  }
  if (!a.call.empty()) args.insert(args.end(), {"--call", a.call});
  if (!a.kernel.empty()) args.insert(args.end(), {"--kernel", a.kernel});
  if (a.as_main) args.push_back("--main");
  if (!a.hardware.empty()) args.insert(args.end(), {"--hardware", a.hardware});
  if (a.sweep) args.push_back("--sweep");
  std::cout.flush();
  const ChildOutcome o = run_child(args, child_environment(),
                                   {a.timeout_s, a.max_memory_mib << 20, kMaxProgramBytes + 4096});
  if (o.exec_errno)
    throw Error(
        fmt::format("{}: cannot start {} ({}); set TILESIM_PYTHON3 to the python3 "
                    "the tilesim module is installed for",
                    fe.command, args[0], std::strerror(o.exec_errno)));
  const bool started = o.result.rfind(fe.header, 0) == 0;
  const std::string verdict = started ? o.result.substr(fe.header.size()) : "";
  const bool clean = o.exited && o.exit_code == 0 && !o.timed_out && !o.result_too_large;
  if (clean && verdict.rfind("error\n", 0) == 0) throw Error(verdict.substr(6));
  const size_t summary_end = verdict.find('\n', 8);
  if (!clean || verdict.rfind("program\n", 0) != 0 || summary_end == std::string::npos)
    throw Error(how_it_ended(fe, a, o, started));
  write_output(a.json, verdict.substr(summary_end + 1), fe.written.c_str());
  if (!a.quiet && a.json != "-")
    std::cout << fmt::format("  {}; {} is in {} ({})\n",
                             printable(verdict.substr(8, summary_end - 8)), fe.written,
                             printable(a.json), fe.hint);
  return 0;
}

// The options both commands take.
CLI::App* add_trace_command(CLI::App& app, const FrontEnd& fe, const std::string& description,
                            TraceArgs& args, const std::string& call, const std::string& kernel) {
  auto* cmd = app.add_subcommand(fe.command, description);
  cmd->add_option("kernel_file", args.kernel_file, "the kernel file: " + fe.file);
  cmd->add_option("-m,--module", args.module,
                  "a module to trace instead of a file (a package's module on PYTHONPATH or "
                  "below the current folder; its relative imports work)");
  cmd->add_option("--call", args.call,
                  "a Python expression run after the file, in its namespace: " + call);
  cmd->add_option("--json", args.json,
                  "where " + fe.written + " traced goes ('-': standard output)")
      ->required();
  cmd->add_option("--kernel", args.kernel, kernel);
  cmd->add_flag("--main", args.as_main,
                "run the file as __main__ (when it calls its kernel only under `if __name__ == "
                "\"__main__\":`)");
  cmd->add_option("--timeout", args.timeout_s,
                  "seconds the kernel file may run before its tracer is stopped (default 600)")
      ->check(positive_finite(1e7));
  cmd->add_option("--max-memory", args.max_memory_mib,
                  "MiB of memory the tracer may take (default 8192)")
      ->check(integer_in(64, int64_t{1} << 30));
  add_quiet_option(cmd, args.quiet);
  return cmd;
}

}  // namespace

CommandAction add_trace_pypto_command(CLI::App& app) {
  auto args = std::make_shared<TraceArgs>();
  auto* cmd = add_trace_command(
      app, kPypto,
      "trace a PyPTO kernel file into a tile program (python3 -m tilesim.pypto; `import pypto` "
      "in the file is served by tilesim.pypto)",
      *args,
      "the wrapper call whose tensors fix the kernel's dynamic shapes (torch is tilesim's "
      "stand-in)",
      "which @pypto.jit kernel, when the file has several");
  return [cmd, args]() { return *cmd ? trace(kPypto, *args) : -1; };
}

CommandAction add_trace_triton_command(CLI::App& app) {
  auto args = std::make_shared<TraceArgs>();
  auto* cmd = add_trace_command(
      app, kTriton,
      "trace a Triton(-Ascend) kernel's launch into an spmd run config of a tile program "
      "(python3 -m tilesim.triton; `import triton` in the file is served by tilesim.triton)",
      *args,
      "the wrapper call, or the launch itself (kernel[grid] applied to its arguments; torch is "
      "tilesim's stand-in)",
      "which @triton.jit kernel's launch, when the call launches several");
  cmd->add_option("--hardware", args->hardware,
                  "hardware file or shipped name (ascend910b4): what the device-properties "
                  "query answers and the run config names");
  cmd->add_flag("--sweep", args->sweep,
                "also run the launch's meta-parameter sweep (its triton.autotune configs, else "
                "powers of two around each BLOCK-like constexpr, the grid from the launch's "
                "lambda) and name the values to paste, with file:line");
  return [cmd, args]() { return *cmd ? trace(kTriton, *args) : -1; };
}

}  // namespace tilesim
