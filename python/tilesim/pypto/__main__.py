"""python3 -m tilesim.pypto kernel.py|-m MODULE --json program.json [--call EXPR]: runs a PyPTO
kernel file (or a package's module) with tilesim.pypto in place of pypto and tilesim's torch
stand-in in place of torch (its ``import pypto`` / ``import torch`` unchanged), evaluates
``--call`` (the wrapper call fixing dynamic shapes) and writes the program of the kernel it
traces. ``tilesim trace-pypto`` calls this with ``--result-fd``: the verdict goes back on that
descriptor and the command writes the program (tools/cli/cmd_trace_pypto.cpp). A kernel whose
call is refused keeps its refusal while the file runs on (another kernel of it still traces).

However the kernel file fails (it raises, calls sys.exit, runs out of memory) the verdict is one
line naming the kernel file, never a traceback."""
import argparse
import importlib
import os
import runpy
import sys
import traceback
import types

from .. import torch_standin
from .._refusal import Refusal
from . import JitKernel, UnsupportedError, _kernel, _options
from . import _trace as _T
from ._trace import TraceFailure

HEADER = b"tilesim.pypto 1\n"  # the result descriptor's first line (cmd_trace_pypto.cpp)
MAX_MESSAGE = 400




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


def _failure(source, error, command="trace-pypto", traced="kernel"):
    """The one line saying how running the kernel file (or tracing its kernels) failed."""
    path = str(source)
    if isinstance(error, TraceFailure):
        return error
    if isinstance(error, (UnsupportedError, torch_standin.StandInError, Refusal)):
        return TraceFailure(one_line(error, 4000))
    if isinstance(error, SystemExit):
        return TraceFailure(f"{source.where(error)}: the kernel file called "
                            f"sys.exit({one_line(repr(error.code), 80)}) before any {traced} "
                            "was traced")
    if isinstance(error, SyntaxError):
        return TraceFailure(f"{path}:{error.lineno}: the kernel file is not valid Python: "
                            f"{one_line(error.msg)}")
    if isinstance(error, MemoryError):
        return TraceFailure(f"{source.where(error)}: the kernel file ran out of memory "
                            f"({command} --max-memory bounds the tracer)")
    said = f": {one_line(error)}" if str(error) else ""
    return TraceFailure(f"{source.where(error)}: the kernel file raised "
                        f"{type(error).__name__}{said}")


class _Source:
    """What the tracer runs: a kernel file (path) or a module on PYTHONPATH (-m NAME)."""

    def __init__(self, path=None, module=None):
        self.path, self.module = path, module

    def __str__(self):
        return self.path if self.module is None else f"module {self.module}"

    def execute(self, run_name, as_main):
        """Runs the file (as module `run_name`) or the module; its globals. sys.argv and
        sys.path are the caller's to restore. ``self.namespace`` holds the globals while it
        runs (a file that exits early leaves what it defined)."""
        if self.module is None:
            sys.argv = [self.path]
            sys.path.insert(0, os.path.dirname(os.path.abspath(self.path)))
            module = types.ModuleType(run_name)
            module.__file__ = self.path
            sys.modules[run_name] = module
            self.namespace = module.__dict__
            with open(self.path, "rb") as f:
                code = compile(f.read(), self.path, "exec")
            exec(code, self.namespace)
            return self.namespace
        sys.argv = [self.module]
        sys.path.insert(0, os.getcwd())
        if as_main:
            self.namespace = runpy.run_module(self.module, run_name=run_name, alter_sys=True)
        else:  # the package's own copy, as its users import it (its __init__ may import it too)
            self.namespace = importlib.import_module(self.module).__dict__
        return self.namespace

    def where(self, error):
        """source:line of the innermost frame of this source in `error`'s traceback."""
        if self.module is not None:
            for frame in reversed(traceback.extract_tb(error.__traceback__)):
                name = os.path.abspath(frame.filename)
                if not name.startswith(_T._PACKAGE + os.sep) and os.path.isfile(name) and \
                        "importlib" not in name and not name.endswith("runpy.py"):
                    return f"{frame.filename}:{frame.lineno}"
            return str(self)
        return _where(self.path, error)


def _evaluate(call, namespace):
    """--call's expression in the file's namespace (with torch and pypto); its own mistakes (a
    syntax error, a name the file does not define) are one line naming it."""
    try:
        code = compile(call, "--call", "eval")
    except SyntaxError as e:
        raise TraceFailure(f"--call {one_line(call, 200)}: not a Python expression "
                           f"({one_line(e.msg)})") from None
    # torch and pypto are the call's names too where the file does not import them itself
    # (a kernel file whose wrapper lives elsewhere): the stand-in and tilesim.pypto
    scope = {n: sys.modules[n] for n in ("torch", "pypto") if n in sys.modules}
    try:
        eval(code, {**scope, **namespace})
    except (NameError, AttributeError, TypeError) as e:
        if traceback.extract_tb(e.__traceback__)[-1].filename != "--call":
            raise
        raise TraceFailure(f"--call {one_line(call, 200)}: {type(e).__name__}: "
                           f"{one_line(e)}") from None


def _run(source, as_main, call):
    """Runs the kernel file or module with pypto served by tilesim.pypto and torch (torch_npu,
    ...) by tilesim's stand-in, then evaluates `call` in its namespace: (its globals, where it
    called sys.exit(0) or None, and a note when it stopped on a call needing tensor values once
    its kernels were traced).
    Modules it imported are dropped after, so a second trace imports them afresh."""
    import tilesim.pypto

    run_name = "__main__" if as_main else "__tilesim_trace__"
    before = set(sys.modules)
    saved = {k: sys.modules.get(k) for k in ("pypto", run_name)}
    saved_argv, saved_path = sys.argv, list(sys.path)
    sys.modules["pypto"] = tilesim.pypto
    ended = stopped = None
    answered = []  # the scalar reads answered before any kernel ran (_scalar_answer)
    namespace = {}
    _kernel.CREATED.clear()
    _options.GLOBAL[0] = _options.Options()
    _kernel.KEEP_GOING[0] = True
    try:
        with torch_standin.installed():
            torch_standin.SCALAR_ANSWER[0] = lambda call: _scalar_answer(call, answered)
            try:
                namespace = source.execute(run_name, as_main)
                if call:
                    _evaluate(call, namespace)
            except SystemExit as e:
                if e.code not in (None, 0):
                    raise
                ended = source.where(e)
            except torch_standin.NeedsValues as e:
                if not any(k.traced is not None or k.error is not None for k in _kernel.CREATED):
                    raise
                stopped = f"the kernel file stopped at {e.file}:{e.line} ({e.call} needs tensor " \
                        "values, which the torch stand-in does not have): its kernels were " \
                        "traced before"
    finally:
        torch_standin.SCALAR_ANSWER[0] = None
        _kernel.KEEP_GOING[0] = False
        sys.argv = saved_argv
        sys.path[:] = saved_path
        for k in set(sys.modules) - before:
            if k not in ("pypto",):
                sys.modules.pop(k, None)
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v
    namespace = getattr(source, "namespace", None) or namespace
    if answered:
        reads = ", ".join(dict.fromkeys(answered))
        note = (f"scalar reads of torch tensors before the kernel ran ({reads}) were answered "
                f"{SCALAR_ANSWER}: the torch stand-in holds no data; as a kernel's scalar "
                "operand the value changes no work, but a shape, loop count or branch taken "
                "from it is traced for that value")
        stopped = note if not stopped else f"{note}; {stopped}"
    return namespace, ended, stopped


# The value a scalar read (Tensor.item(), float(tensor)) of a torch tensor gets before any
# kernel ran: the stand-in has no data. 1.0 leaves a product or quotient it scales defined.
SCALAR_ANSWER = 1.0


def _scalar_answer(call, answered):
    """Answers a scalar read with SCALAR_ANSWER before any kernel traced (a wrapper's
    alpha[0].item() passed to the kernel, a golden's range printed first), recording where;
    after, None: the read checks results, so NeedsValues stops the file there."""
    if any(k.traced is not None or k.error is not None for k in _kernel.CREATED):
        return None
    file, line = _T.caller()
    answered.append(f"{call} at {os.path.basename(file)}:{line}")
    return SCALAR_ANSWER


def _labels(found, names):
    """{kernel: the name --kernel picks it by}: its function's name, or where a factory made
    several of one name (q_rope = make(16); k_rope = make(8)), the module name bound to it."""
    label, seen = {}, {}
    for k in found:
        seen[k.__name__] = seen.get(k.__name__, 0) + 1
    for i, k in enumerate(found):
        if seen[k.__name__] == 1:
            label[k] = k.__name__
        else:
            bound = [n for n, v in names.items() if v is k]
            label[k] = bound[0] if bound else f"{k.__name__}_{i}"
    return label


def traced_kernels(source, as_main=False, call=None):
    """({name: TracedKernel or UnsupportedError} of the jit kernels the kernel file or module
    defines: the ones it called (a refused call is kept as its error and the file runs on), and
    the others traced from their annotations; where it called sys.exit(0), or None; the names
    of the kernels it called). A note says where the file stopped on a call needing tensor
    values, after its kernels ran."""
    if isinstance(source, (str, os.PathLike)):
        source = _Source(os.fspath(source))
    try:
        names, ended, stopped = _run(source, as_main, call)
        found = list(_kernel.CREATED)
        found += [k for k in names.values() if isinstance(k, JitKernel) and k not in found]
        label = _labels(found, names)
        called = [label[k] for k in found if k.error is not None or k.traced is not None]
        kernels = {}
        for k in found:
            if k.error is not None:
                kernels[label[k]] = k.error
            elif k.traced is not None:
                kernels[label[k]] = k.traced
            else:  # with the file's module-level settings still in force
                try:
                    kernels[label[k]] = k.trace()
                except UnsupportedError as e:
                    kernels[label[k]] = e
    finally:
        _options.GLOBAL[0] = _options.Options()
    if stopped:
        for t in kernels.values():
            if not isinstance(t, Exception):
                t.notes.append(stopped)
    return kernels, ended, called


def trace_file(path, kernel=None, as_main=False, call=None, module=None):
    """(name, TracedKernel) of the kernel file's (or module's) kernel; raises TraceFailure."""
    source = _Source(path, module)
    try:
        kernels, ended, called = traced_kernels(source, as_main, call)
    except BaseException as e:  # whatever the kernel file does, one line naming it
        raise _failure(source, e) from None
    if not kernels and ended:
        raise TraceFailure(f"{ended}: the kernel file called sys.exit(0) before any @pypto.jit "
                           "kernel was defined")
    if not kernels:
        raise TraceFailure(f"{source}: no @pypto.jit kernel found")
    if kernel is None and len(kernels) > 1 and len(set(called)) == 1:
        # the wrapper call (or __main__) ran one of the file's kernels: that one, as on a board
        kernel = called[0]
        if not isinstance(kernels[kernel], Exception):
            others = ", ".join(sorted(n for n in kernels if n != kernel))
            kernels[kernel].notes.append(f"the file's other kernels ({others}) were not called; "
                                         "--kernel picks one")
    if kernel is None and len(kernels) > 1:
        listed = ", ".join(f"{n}{' (refused)' if isinstance(k, Exception) else ''}"
                           for n, k in sorted(kernels.items()))
        raise TraceFailure(f"{source} has kernels {listed}: pick one with --kernel")
    name = kernel or next(iter(kernels))
    if name not in kernels:
        raise TraceFailure(f"--kernel {one_line(name)}: not in {source} (its kernels: "
                           f"{', '.join(sorted(kernels))})")
    if isinstance(kernels[name], Exception):
        raise TraceFailure(one_line(kernels[name], 4000))
    return name, kernels[name]


def summary(name, traced):
    tiles = ", ".join(t["name"] for t in traced.tiles) or "none"
    loops = ", ".join(f"{lp['name']} ({lp['count']})" for lp in traced.loops) or "none"
    notes = "".join(f"; note: {n}" for n in traced.notes)
    return one_line(f"{name}: tiles {tiles}; loops {loops}{notes}", 4000)


def answer(fd, header, produce):
    """A tracer's answer on descriptor `fd` (the tilesim command's child): `header`, then
    "program\n<summary>\n<text>" from produce() or "error\n<message>" from its TraceFailure;
    then exit at once (the kernel file's threads and atexit handlers do not outlive it)."""
    out = os.fdopen(fd, "wb")
    out.write(header)
    out.flush()
    try:
        said, text = produce()
        message = b"program\n" + said.encode() + b"\n" + text.encode()
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


def write_answer(a, produce, what, hint):
    """The tracer run by hand: produce() -> (summary, text) written to a.json ('-': stdout),
    the summary line after; a TraceFailure is one error line, exit 2."""
    if a.module is None and not os.path.isfile(a.kernel_file):
        print(f"tilesim: error: {one_line(a.kernel_file)}: no such file", file=sys.stderr)
        return 2
    from .. import api

    sources = [a.kernel_file] if a.kernel_file else []
    try:
        api._check_output("json", a.json, sources)
        said, text = produce()
        if a.json == "-":
            sys.stdout.write(text)
            return 0
        api._write_text(a.json, text, what, sources)
    except (TraceFailure, ValueError) as e:
        print(f"tilesim: error: {one_line(e, 4000)}", file=sys.stderr)
        return 2
    if not a.quiet:
        print(f"  {said}; {what} is in {a.json} ({hint})")
    return 0


def _traced(a):
    name, traced = trace_file(a.kernel_file, a.kernel, a.main, a.call, a.module)
    return summary(name, traced), traced.to_json()


def main(argv=None):
    p = argparse.ArgumentParser(prog="tilesim trace-pypto", description=__doc__.split("\n\n")[0])
    p.add_argument("kernel_file", nargs="?", help="a PyPTO kernel file (python)")
    p.add_argument("-m", dest="module", metavar="MODULE",
                   help="a module to import instead of a file (a package's module on "
                        "PYTHONPATH or below the current folder; its relative imports work)")
    p.add_argument("--call", metavar="EXPR",
                   help="a Python expression evaluated in the file's namespace after it ran: "
                        "the wrapper call whose tensors fix the kernel's dynamic shapes, e.g. "
                        "\"rms_norm(torch.randn(7, 3072, dtype=torch.float16), 1e-6)\"")
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
    if (a.kernel_file is None) == (a.module is None):
        p.error("give a kernel file or -m MODULE (one of them)")
    if a.result_fd is not None:
        answer(a.result_fd, HEADER, lambda: _traced(a))
    return write_answer(a, lambda: _traced(a), "the program",
                        "a run or sweep config's \"program\"")


if __name__ == "__main__":
    sys.exit(main())
