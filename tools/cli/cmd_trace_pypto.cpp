// tilesim trace-pypto KERNEL.py --json FILE [--kernel NAME] [--main]
// Traces a PyPTO kernel file into a tile program: runs `python3 -m tilesim.pypto` (the Python
// module's tracer, python/tilesim/pypto/) on it, with the file's `import pypto` served by
// tilesim.pypto. The program written is what `run` and `sweep` take ("program": FILE). Exit codes:
// 0 written, 2 bad input (the file, an unsupported PyPTO call: one line naming its file and line;
// also the kernel file raising, or no tilesim module for this python3, after python's own
// message), 3 when python3 cannot be started or is killed.
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "model/error.hpp"
#include "tools/cli/commands.hpp"
#include "tools/cli/options.hpp"

extern char** environ;

namespace tilesim {

namespace {

struct TraceArgs {
  std::string kernel_file, json, kernel;
  bool as_main = false;
  bool quiet = false;
};

// The python3 the module was built for (TILESIM_PYTHON3 overrides it).
std::string python3() {
  if (const char* p = std::getenv("TILESIM_PYTHON3"); p && *p) return p;
  return TILESIM_PYTHON3_PATH;
}

// A build tree keeps the module beside the tools (build/tools/tilesim, build/python/tilesim): it
// goes first on PYTHONPATH. An installed tilesim finds the installed module on python's path.
std::string python_path() {
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  std::string path;
  if (!ec) {
    const auto dir = exe.parent_path().parent_path() / "python";
    if (std::filesystem::exists(dir / "tilesim" / "pypto" / "__main__.py", ec)) path = dir.string();
  }
  if (const char* p = std::getenv("PYTHONPATH"); p && *p)
    path += (path.empty() ? "" : ":") + std::string(p);
  return path;
}

int trace_pypto(const TraceArgs& a) {
  if (!std::filesystem::is_regular_file(a.kernel_file))
    throw Error(a.kernel_file + ": no such file (a PyPTO kernel file, python)");
  std::vector<std::string> args = {python3(),     "-m",     "tilesim.pypto",
                                   a.kernel_file, "--json", a.json};
  if (!a.kernel.empty()) args.insert(args.end(), {"--kernel", a.kernel});
  if (a.as_main) args.push_back("--main");
  if (a.quiet) args.push_back("--quiet");
  std::vector<std::string> env;
  for (char** e = environ; *e; ++e)
    if (std::string(*e).rfind("PYTHONPATH=", 0) != 0) env.emplace_back(*e);
  if (const std::string p = python_path(); !p.empty()) env.push_back("PYTHONPATH=" + p);
  std::vector<char*> argv, envp;
  for (auto& s : args) argv.push_back(s.data());
  for (auto& s : env) envp.push_back(s.data());
  argv.push_back(nullptr);
  envp.push_back(nullptr);
  std::cout.flush();
  pid_t pid = 0;
  if (const int rc = posix_spawn(&pid, argv[0], nullptr, nullptr, argv.data(), envp.data()))
    throw InternalError(
        fmt::format("trace-pypto: cannot start {} ({}); set TILESIM_PYTHON3 to "
                    "the python3 the tilesim module is installed for",
                    argv[0], std::strerror(rc)));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw InternalError("trace-pypto: waitpid failed");
  if (!WIFEXITED(status)) throw InternalError(fmt::format("trace-pypto: {} was killed", argv[0]));
  const int code = WEXITSTATUS(status);
  if (code == 0 || code == 2) return code;  // the tracer's own verdict (its message printed)
  // Python's own failure: the module missing (exit 1, "No module named"), or the kernel file
  // raising; what python printed above says which.
  std::cerr << fmt::format(
      "tilesim: error: trace-pypto: {} -m tilesim.pypto exited {} (the kernel file raised, or "
      "the tilesim Python module is not installed for this python3: see above)\n",
      argv[0], code);
  return 2;
}

}  // namespace

CommandAction add_trace_pypto_command(CLI::App& app) {
  auto args = std::make_shared<TraceArgs>();
  auto* cmd = app.add_subcommand(
      "trace-pypto",
      "trace a PyPTO kernel file into a tile program (python3 -m tilesim.pypto; `import pypto` "
      "in the file is served by tilesim.pypto)");
  cmd->add_option("kernel_file", args->kernel_file, "the PyPTO kernel file (python)")->required();
  cmd->add_option("--json", args->json, "where the traced program goes ('-': standard output)")
      ->required();
  cmd->add_option("--kernel", args->kernel, "which @pypto.jit kernel, when the file has several");
  cmd->add_flag("--main", args->as_main,
                "run the file as __main__ (when it calls its kernel only under `if __name__ == "
                "\"__main__\":`)");
  add_quiet_option(cmd, args->quiet);
  return [cmd, args]() { return *cmd ? trace_pypto(*args) : -1; };
}

}  // namespace tilesim
