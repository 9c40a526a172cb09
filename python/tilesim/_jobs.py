"""Configs as the C++ core takes them, for api.py and dask.py (which do not import each other)."""
import json
import os

from . import _core


def source(config):
    """(text or path, is_file) of a config given as a dict or a file path."""
    if isinstance(config, dict):
        return json.dumps(config, allow_nan=False), False
    if isinstance(config, (str, os.PathLike)):
        return os.fspath(config), True
    raise TypeError(f"config: expected a dict or a file path, got {type(config).__name__}")


def integer(name, value, minimum, none_ok=True):
    """`value` as an int >= minimum, as the CLI checks its integer options (no bool, no float,
    no text); None passes when none_ok. Else tilesim.ConfigError naming the argument."""
    if value is None and none_ok:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        err = _core.ConfigError(f"{name}: {value!r} is not an integer >= {minimum}")
        err.key, err.kind = name, "input"
        raise err
    return value


def _value(v):
    # json.dumps writes ints as ints and floats in full ("NaN" for nan, which --set refuses).
    return json.dumps(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else str(v)


def what_ifs(values):
    """The CLI's --set list from a dict {key: value} or "key=value" strings (None: none)."""
    if values is None:
        return []
    if isinstance(values, dict):
        return [f"{k}={_value(v)}" for k, v in values.items()]
    if isinstance(values, str):
        return [values]
    return [str(v) for v in values]


def sweep_job(config, hardware=None, objective=None, settings=None):
    """The sweep of a config as every shard sees it (the C++ SweepJob); `objective` replaces
    the config's ("gen_time_us", "kernel_time_us", a pipe's "mte2_us", ...); `settings` are
    hardware what-ifs (the CLI's --set), carried in the job."""
    text, is_file = source(config)
    return _core.sweep_job(text, is_file, hardware or "", objective or "",
                           what_ifs(settings))
