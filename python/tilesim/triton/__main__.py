"""python3 -m tilesim.triton kernel.py|-m MODULE --json launch.json [--call EXPR] [--kernel NAME]
[--hardware H]: runs a Triton(-Ascend) kernel file (or a package's module) with tilesim.triton
in place of triton and tilesim's torch stand-in in place of torch and torch_npu (its imports
unchanged), evaluates ``--call`` (the wrapper call, or kernel[grid](...)) and writes the run
config of the launch it traced: an spmd launch ("source": "triton") of a tile program.
``tilesim trace-triton`` calls this with ``--result-fd``: the verdict goes back on that
descriptor and the command writes the run config (tools/cli/cmd_trace_pypto.cpp).

However the kernel file fails (it raises, calls sys.exit, runs out of memory) the verdict is one
line naming the kernel file, never a traceback."""
import argparse
import sys

from .. import torch_standin
from ..pypto import __main__ as pypto_main
from ..pypto.__main__ import _evaluate, _Source, answer, one_line, write_answer
from ..pypto._trace import TraceFailure
from . import LAUNCHES, installed, set_hardware

HEADER = b"tilesim.triton 1\n"  # the result descriptor's first line (cmd_trace_pypto.cpp)


def _failure(source, error):
    return pypto_main._failure(source, error, "trace-triton", "launch")


def _run(source, as_main, call):
    """Runs the file or module with the stand-ins, then `call`; the launches it traced, and a
    note when it stopped on a call needing tensor values once its launches were traced."""
    run_name = "__main__" if as_main else "__tilesim_trace__"
    before = set(sys.modules)
    saved_argv, saved_path = sys.argv, list(sys.path)
    saved_main = sys.modules.get(run_name)
    del LAUNCHES[:]
    stopped = None
    try:
        with installed():
            try:
                namespace = source.execute(run_name, as_main)
                if call:
                    _evaluate(call, namespace)
            except SystemExit as e:
                if e.code not in (None, 0) or not LAUNCHES:
                    raise
            except torch_standin.NeedsValues as e:
                if not LAUNCHES:
                    raise
                stopped = f"the kernel file stopped at {e.file}:{e.line} ({e.call} needs tensor " \
                          "values, which the torch stand-in does not have): its launches were " \
                          "traced before"
    finally:
        sys.argv = saved_argv
        sys.path[:] = saved_path
        for k in set(sys.modules) - before:
            if not k.startswith(("triton", "tilesim")):
                sys.modules.pop(k, None)
        if saved_main is not None:
            sys.modules[run_name] = saved_main
    return list(LAUNCHES), stopped


def trace_file(path, kernel=None, as_main=False, call=None, module=None, hardware=None):
    """The traced launches of the file or module ([TracedLaunch]); raises TraceFailure."""
    source = _Source(path, module)
    set_hardware(hardware)
    try:
        launches, stopped = _run(source, as_main, call)
    except BaseException as e:  # whatever the kernel file does, one line naming it
        raise _failure(source, e) from None
    if kernel is not None:
        names = sorted({la.name for la in launches})
        launches = [la for la in launches if la.name == kernel]
        if not launches:
            raise TraceFailure(f"--kernel {one_line(kernel)}: no launch of it in {source} "
                               f"(launched: {', '.join(names) or 'none'})")
    if not launches:
        raise TraceFailure(f"{source}: no kernel was launched (give --call with the wrapper "
                           "call, or --main when the file launches under __main__)")
    if stopped:
        for la in launches:
            la.notes.append(stopped)
    return launches


def summary(launch, count):
    notes = "".join(f"; note: {n}" for n in launch.notes)
    ops = len([e for e in launch.program["body"] if "op" in e])
    more = f" (launch 1 of {count}: --kernel picks another)" if count > 1 else ""
    return one_line(f"{launch.name}{more}: grid {launch.grid}, {ops} ops on "
                    f"{', '.join(i['name'] for i in launch.program['inputs'])} -> "
                    f"{', '.join(launch.program['outputs'])}{notes}", 4000)


def _pick(launches):
    names = {la.name for la in launches}
    if len(names) > 1:
        raise TraceFailure(f"the call launched {len(names)} kernels ({', '.join(sorted(names))}):"
                           " pick one with --kernel")
    return launches[0]


def _traced(a):
    launches = trace_file(a.kernel_file, a.kernel, a.main, a.call, a.module, a.hardware)
    launch = _pick(launches)
    said = summary(launch, len(launches))
    if a.sweep:
        from .._refusal import Refusal
        try:
            said = one_line(f"{said}; {launch.sweep().brief}", 4000)
        except Refusal as e:
            raise TraceFailure(one_line(e, 4000)) from None
    return said, launch.to_json()


def main(argv=None):
    p = argparse.ArgumentParser(prog="tilesim trace-triton", description=__doc__.split("\n\n")[0])
    p.add_argument("kernel_file", nargs="?", help="a Triton kernel file (python)")
    p.add_argument("-m", dest="module", metavar="MODULE",
                   help="a module to import instead of a file (its relative imports work)")
    p.add_argument("--call", metavar="EXPR",
                   help="a Python expression evaluated in the file's namespace after it ran: "
                        "the wrapper call (or kernel[grid](...)) that launches the kernel")
    out = p.add_mutually_exclusive_group(required=True)
    out.add_argument("--json", metavar="FILE", help="where the launch's run config goes "
                     "('-': stdout)")
    out.add_argument("--result-fd", type=int, help=argparse.SUPPRESS)
    p.add_argument("--kernel", metavar="NAME", help="which kernel's launch (when it launches "
                   "several)")
    p.add_argument("--hardware", metavar="H", help="the hardware file or shipped name the "
                   "device properties come from and the run config names")
    p.add_argument("--main", action="store_true", help="run the file as __main__")
    p.add_argument("--sweep", action="store_true", help="also sweep the launch's meta-parameters "
                   "(its autotune configs, else powers of two around each BLOCK-like constexpr) "
                   "and say which to paste")
    p.add_argument("-q", "--quiet", action="store_true", help="no summary line on stdout")
    a = p.parse_args(argv)
    if (a.kernel_file is None) == (a.module is None):
        p.error("give a kernel file or -m MODULE (one of them)")
    if a.result_fd is not None:
        answer(a.result_fd, HEADER, lambda: _traced(a))
    return write_answer(a, lambda: _traced(a), "the launch", "a run config")


if __name__ == "__main__":
    sys.exit(main())
