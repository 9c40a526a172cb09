"""python3 -m tilesim.pypto kernel.py --json program.json: runs a PyPTO kernel file with
tilesim.pypto in place of pypto (its ``import pypto`` unchanged) and writes the program of the
kernel it traces. ``tilesim trace-pypto`` calls this with ``--result-fd``: the verdict goes back
on that descriptor and the command writes the program (tools/cli/cmd_trace_pypto.cpp).

However the kernel file fails (it raises, calls sys.exit, runs out of memory) the verdict is one
line naming the kernel file, never a traceback."""
import argparse
import os
import sys
import traceback
import types

from . import JitKernel, UnsupportedError

HEADER = b"tilesim.pypto 1\n"  # the result descriptor's first line (cmd_trace_pypto.cpp)
MAX_MESSAGE = 400


class TraceFailure(Exception):
    """The kernel file cannot be traced: a one-line message naming it."""


def one_line(text, limit=MAX_MESSAGE):
    """`text` with control characters escaped, cut at `limit` characters."""
    out = "".join(c if c.isprintable() else repr(c)[1:-1] for c in str(text)[:limit + 1])
    return out if len(out) <= limit else out[:limit] + "..."


def _where(path, error):
    """path:line of the innermost frame of the kernel file in `error`'s traceback (path alone
    when the kernel file has none there)."""
    line = None
    target = os.path.abspath(path)
    for frame in traceback.extract_tb(error.__traceback__):
        if os.path.abspath(frame.filename) == target:
            line = frame.lineno
    return f"{path}:{line}" if line else path


def _failure(path, error):
    """The one line saying how running the kernel file (or tracing its kernels) failed."""
    if isinstance(error, UnsupportedError):
        return TraceFailure(one_line(error, 4000))
    if isinstance(error, SystemExit):
        return TraceFailure(f"{_where(path, error)}: the kernel file called "
                            f"sys.exit({one_line(repr(error.code), 80)}) before any kernel was "
                            "traced")
    if isinstance(error, SyntaxError):
        return TraceFailure(f"{path}:{error.lineno}: the kernel file is not valid Python: "
                            f"{one_line(error.msg)}")
    if isinstance(error, MemoryError):
        return TraceFailure(f"{_where(path, error)}: the kernel file ran out of memory "
                            "(trace-pypto --max-memory bounds the tracer)")
    said = f": {one_line(error)}" if str(error) else ""
    return TraceFailure(f"{_where(path, error)}: the kernel file raised "
                        f"{type(error).__name__}{said}")


def _run_file(path, run_name):
    """Runs the kernel file as module `run_name` (what runpy.run_path does) with pypto served by
    tilesim.pypto: (its globals, where it called sys.exit(0) or None). A sys.exit(0) ends the
    file as its end would."""
    import tilesim.pypto

    module = types.ModuleType(run_name)
    module.__file__ = path
    saved = {k: sys.modules.get(k) for k in ("pypto", run_name)}
    saved_argv = sys.argv
    sys.modules["pypto"], sys.modules[run_name] = tilesim.pypto, module
    sys.argv = [path]
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    ended = None
    try:
        with open(path, "rb") as f:
            code = compile(f.read(), path, "exec")
        exec(code, module.__dict__)
    except SystemExit as e:
        if e.code not in (None, 0):
            raise
        ended = _where(path, e)
    finally:
        sys.path.pop(0)
        sys.argv = saved_argv
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    return module.__dict__, ended


def traced_kernels(path, as_main):
    """({name: TracedKernel} of the jit kernels a kernel file defines: the ones it called, and
    the others traced from their annotations; where the file called sys.exit(0) or None)."""
    names, ended = _run_file(path, "__main__" if as_main else "__tilesim_trace__")
    kernels = {}
    for k in list(names.values()):
        if isinstance(k, JitKernel):
            kernels[k.__name__] = k.traced if k.traced is not None else k.trace()
    return kernels, ended


def trace_file(path, kernel=None, as_main=False):
    """(name, TracedKernel) of the kernel file's kernel; raises TraceFailure."""
    try:
        kernels, ended = traced_kernels(path, as_main)
    except BaseException as e:  # whatever the kernel file does, one line naming it
        raise _failure(path, e) from None
    if not kernels and ended:
        raise TraceFailure(f"{ended}: the kernel file called sys.exit(0) before any @pypto.jit "
                           "kernel was defined")
    if not kernels:
        raise TraceFailure(f"{path}: no @pypto.jit kernel found")
    if kernel is None and len(kernels) > 1:
        raise TraceFailure(f"{path} has kernels {', '.join(sorted(kernels))}: pick one with "
                           "--kernel")
    name = kernel or next(iter(kernels))
    if name not in kernels:
        raise TraceFailure(f"--kernel {one_line(name)}: not in {path} (its kernels: "
                           f"{', '.join(sorted(kernels))})")
    return name, kernels[name]


def summary(name, traced):
    tiles = ", ".join(t["name"] for t in traced.tiles) or "none"
    loops = ", ".join(f"{lp['name']} ({lp['count']})" for lp in traced.loops) or "none"
    return one_line(f"{name}: tiles {tiles}; loops {loops}", 2000)


def _to_command(fd, a):
    """tilesim trace-pypto's child: the verdict on descriptor `fd`, then exit at once (the kernel
    file's threads and atexit handlers do not outlive the verdict)."""
    out = os.fdopen(fd, "wb")
    out.write(HEADER)
    out.flush()
    try:
        name, traced = trace_file(a.kernel_file, a.kernel, a.main)
        message = (b"program\n" + summary(name, traced).encode() + b"\n" +
                   traced.to_json().encode())
    except TraceFailure as e:
        message = b"error\n" + str(e).encode()
    out.write(message)
    out.close()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(0)


def main(argv=None):
    p = argparse.ArgumentParser(prog="tilesim trace-pypto", description=__doc__.split("\n\n")[0])
    p.add_argument("kernel_file", help="a PyPTO kernel file (python)")
    out = p.add_mutually_exclusive_group(required=True)
    out.add_argument("--json", metavar="FILE",
                     help="where the traced tile program goes ('-': stdout)")
    out.add_argument("--result-fd", type=int, help=argparse.SUPPRESS)
    p.add_argument("--kernel", metavar="NAME", help="which jit kernel (when the file has several)")
    p.add_argument("--main", action="store_true",
                   help="run the file as __main__ (when it calls its kernel only under "
                        "`if __name__ == \"__main__\":`)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no summary line on stdout (errors still on stderr)")
    a = p.parse_args(argv)
    if a.result_fd is not None:
        _to_command(a.result_fd, a)
    if not os.path.isfile(a.kernel_file):
        print(f"tilesim: error: {one_line(a.kernel_file)}: no such file", file=sys.stderr)
        return 2
    from .. import api

    try:
        api._check_output("json", a.json, [a.kernel_file])
        name, traced = trace_file(a.kernel_file, a.kernel, a.main)
        text = traced.to_json()
        if a.json == "-":
            sys.stdout.write(text)
            return 0
        api._write_text(a.json, text, "the program", [a.kernel_file])
    except (TraceFailure, ValueError) as e:
        print(f"tilesim: error: {one_line(e, 4000)}", file=sys.stderr)
        return 2
    if not a.quiet:
        print(f"  {summary(name, traced)}; the program is in {a.json} (a run or sweep config's "
              "\"program\")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
