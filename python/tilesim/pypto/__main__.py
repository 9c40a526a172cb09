"""python3 -m tilesim.pypto kernel.py --json program.json: runs a PyPTO kernel file with
tilesim.pypto in place of pypto (its ``import pypto`` unchanged) and writes the program of the
kernel it traces. ``tilesim trace-pypto`` calls this."""
import argparse
import os
import runpy
import sys

from . import JitKernel, UnsupportedError


def traced_kernels(path, as_main):
    """{name: TracedKernel} of the jit kernels a kernel file defines: the ones it called, and
    the others traced from their annotations."""
    import tilesim.pypto

    saved = sys.modules.get("pypto")
    sys.modules["pypto"] = tilesim.pypto
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    try:
        names = runpy.run_path(path, run_name="__main__" if as_main else "__tilesim_trace__")
    finally:
        sys.path.pop(0)
        if saved is None:
            sys.modules.pop("pypto", None)
        else:
            sys.modules["pypto"] = saved
    kernels = {}
    for name, k in names.items():
        if isinstance(k, JitKernel):
            kernels[k.__name__] = k.traced if k.traced is not None else k.trace()
    return kernels


def main(argv=None):
    p = argparse.ArgumentParser(prog="tilesim trace-pypto", description=__doc__.split("\n\n")[0])
    p.add_argument("kernel_file", help="a PyPTO kernel file (python)")
    p.add_argument("--json", metavar="FILE", required=True,
                   help="where the traced tile program goes ('-': stdout)")
    p.add_argument("--kernel", metavar="NAME", help="which jit kernel (when the file has several)")
    p.add_argument("--main", action="store_true",
                   help="run the file as __main__ (when it calls its kernel only under "
                        "`if __name__ == \"__main__\":`)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no summary line on stdout (errors still on stderr)")
    a = p.parse_args(argv)
    if not os.path.isfile(a.kernel_file):
        print(f"tilesim: error: {a.kernel_file}: no such file", file=sys.stderr)
        return 2
    try:
        kernels = traced_kernels(a.kernel_file, a.main)
    except UnsupportedError as e:
        print(f"tilesim: error: {e}", file=sys.stderr)
        return 2
    if not kernels:
        print(f"tilesim: error: {a.kernel_file}: no @pypto.jit kernel found",
              file=sys.stderr)
        return 2
    if a.kernel is None and len(kernels) > 1:
        print(f"tilesim: error: {a.kernel_file} has kernels {', '.join(sorted(kernels))}: "
              "pick one with --kernel", file=sys.stderr)
        return 2
    name = a.kernel or next(iter(kernels))
    if name not in kernels:
        print(f"tilesim: error: --kernel {name}: not in {a.kernel_file} (its kernels: "
              f"{', '.join(sorted(kernels))})", file=sys.stderr)
        return 2
    traced = kernels[name]
    text = traced.to_json()
    if a.json == "-":
        sys.stdout.write(text)
    else:
        with open(a.json, "w") as f:
            f.write(text)
        if not a.quiet:
            tiles = ", ".join(t["name"] for t in traced.tiles) or "none"
            loops = ", ".join(f"{lp['name']} ({lp['count']})" for lp in traced.loops) or "none"
            print(f"  {name}: tiles {tiles}; loops {loops}; the program is in {a.json} "
                  f"(a run or sweep config's \"program\")")
    return 0


if __name__ == "__main__":
    sys.exit(main())
