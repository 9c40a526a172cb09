"""tilesim from Python: the same engine, results and errors as the ``tilesim`` CLI.

    import tilesim
    res = tilesim.sweep("configs/sweeps/rule2_groupnorm_16x64x256x256_loops.json", jobs=2)
    res.recommended["tile"], res.to_dataframe().head(), res.plot()

Configs are dicts or file paths. Bad input raises :class:`ConfigError` (a ``ValueError``) with
the CLI's one-line message, ``.key`` (the key path it names, or None) and ``.kind``.
From the build tree: ``PYTHONPATH=build/python /usr/bin/python3``.
"""
import os as _os

# An installed package carries the shipped configs (hardware files) beside it; a build-tree
# module finds them in the source tree it was built from.
_here = _os.path.join(_os.path.dirname(__file__), "configs")
if _os.path.isdir(_here) and "TILESIM_CONFIG_DIR" not in _os.environ:
    _os.environ["TILESIM_CONFIG_DIR"] = _here

from ._core import ConfigError, __version__  # noqa: E402
from .api import (  # noqa: E402
    analyze,
    calibrate,
    compare,
    measurements_from_msprof,
    measurements_from_swimlane,
    merge,
    replay,
    rule_chapters,
    rules,
    run,
    sweep,
    validate,
)
from .results import JsonResult, Result, SweepResult  # noqa: E402

ConfigError.__module__ = __name__  # raised as tilesim.ConfigError


def __getattr__(name):
    # tilesim.dask without its own import (it imports dask.distributed only when used).
    if name == "dask":
        import importlib

        return importlib.import_module(".dask", __name__)
    raise AttributeError(f"module 'tilesim' has no attribute '{name}'")

__all__ = [
    "ConfigError",
    "JsonResult",
    "Result",
    "SweepResult",
    "__version__",
    "analyze",
    "calibrate",
    "compare",
    "measurements_from_msprof",
    "measurements_from_swimlane",
    "merge",
    "replay",
    "rule_chapters",
    "rules",
    "run",
    "sweep",
    "validate",
]
