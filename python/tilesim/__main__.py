"""The ``tilesim`` command of an installed package (pip's console script, or ``python3 -m
tilesim``): runs the C++ command the package carries (tilesim/bin/tilesim, built with the
module) with the package's configs and this python3 for ``trace-pypto``. From a build tree
(PYTHONPATH=build/python) or a ``cmake --install`` prefix it runs the command built or installed
beside the package."""
import os
import sys

import tilesim


def command():
    """The tilesim executable for this package, or None."""
    here = os.path.dirname(os.path.abspath(tilesim.__file__))
    # a wheel (meson.build); a build tree (build/python/tilesim beside build/tools/tilesim);
    # cmake --install (PREFIX/lib/python3.X/dist-packages/tilesim beside PREFIX/bin/tilesim)
    for path in (os.path.join(here, "bin", "tilesim"),
                 os.path.join(here, "..", "..", "tools", "tilesim"),
                 os.path.join(here, "..", "..", "..", "..", "bin", "tilesim")):
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return os.path.normpath(path)
    return None


def main():
    exe = command()
    if exe is None:
        here = os.path.dirname(tilesim.__file__)
        sys.stderr.write(f"tilesim: error: the tilesim package in {here} carries no tilesim "
                         "command (bin/tilesim): install it with pip install .\n")
        sys.exit(2)
    # TILESIM_CONFIG_DIR is the package's configs (tilesim/__init__.py); trace-pypto runs its
    # tracer with this python3, which imports this package.
    env = dict(os.environ)
    env.setdefault("TILESIM_PYTHON3", sys.executable)
    os.execve(exe, ["tilesim", *sys.argv[1:]], env)


if __name__ == "__main__":
    main()
