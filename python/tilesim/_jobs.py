"""Arguments as the C++ core takes them (configs, paths, numbers) and outputs written as the CLI
writes them, for api.py, dask.py, results.py and tilesim.pypto (which do not import each other)."""
import json
import os

from . import _core


def path(name, value):
    """`value` (a str or os.PathLike) as the path C++ opens: a NUL would cut it there (running
    another file than the one named), and an empty one names nothing: ConfigError naming the
    argument."""
    text = os.fspath(value)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    if "\x00" in text:
        refuse(name, f"{text!r}: a path with a NUL character (no file has one)")
    if not text:
        refuse(name, "an empty path (give a file)")
    return text


def hardware_name(value):
    """The hardware argument as the CLI's --hardware takes it: None for the default, else a
    non-empty file or shipped name."""
    if value is None:
        return ""
    if not isinstance(value, (str, os.PathLike)):
        raise TypeError(f"hardware: expected a file or a shipped name, got {type(value).__name__}")
    if not os.fspath(value):
        refuse("hardware", "an empty name (give a hardware file or a shipped name, or leave it "
                           "out for the default)")
    return path("hardware", value)


def dim_error(values, minimum=None):
    """Why `values` is not a tile or shape (a list or tuple of ints, each >= minimum when given),
    else None: no bool (True is not a dim of 1), no float, no text, no lone number. The one check
    of dims for the Python API and tilesim.pypto (which raise ConfigError / UnsupportedError)."""
    if not isinstance(values, (list, tuple)):
        return f"{values!r} is not a list of integer dims"
    for v in values:
        if isinstance(v, bool) or not isinstance(v, int):
            return f"{v!r} is not an integer dim"
        if minimum is not None and v < minimum:
            return f"{v} is not a dim (dims are integers >= {minimum})"
    return None


def dims(name, values):
    """A tile as a list of ints (None: none), else ConfigError naming the argument."""
    if values is None:
        return []
    message = dim_error(values)
    if message:
        refuse(name, message)
    return list(values)


def dim_lists(name, values):
    """A list of tiles (a sweep's tiles), each checked as dims: ConfigError naming name[i]."""
    if not isinstance(values, (list, tuple)):
        refuse(name, f"{values!r} is not a list of tiles")
    return [dims(f"{name}[{i}]", v) for i, v in enumerate(values)]


def selector(name, value):
    """A tile or loop picked by its name (str) or its source line (int), or None: a bool is
    not line 1."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, (str, int))):
        refuse(name, f"{value!r} is not a name or a line number")
    return value


def check_output(argument, target, inputs):
    """Refuses, before any work, writing `target` over one of `inputs` (ConfigError naming
    `argument`), as the CLI refuses an output over one of its inputs."""
    if target is not None and target != "-":
        _core.check_output(path(argument, target), argument, [os.fspath(i) for i in inputs])


def write_text(target, text, what, inputs=(), argument="path"):
    """Writes `text` to `target` as the CLI writes every output: a temporary renamed over the
    target (a failure leaves the old file), through a link to its target, never over one of
    `inputs` nor a file this process has read as an input (ConfigError)."""
    _core.write_output(path(argument, target), text, what, argument,
                       [os.fspath(i) for i in inputs])


def source(config):
    """(text or path, is_file) of a config given as a dict or a file path."""
    if isinstance(config, dict):
        try:
            return json.dumps(config, allow_nan=False), False
        except (TypeError, ValueError, RecursionError) as e:
            # nan / inf, a set, an object, a cycle: what no config file can hold.
            refuse("config", f"the dict is not JSON: {e}")
    if isinstance(config, (str, os.PathLike)):
        return path("config", config), True
    raise TypeError(f"config: expected a dict or a file path, got {type(config).__name__}")


def _option_text(value):
    """`value` as the CLI would see it on its command line: an int as digits, a float in full
    ("nan", "inf" included), anything else as a literal the checks refuse."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return json.dumps(value) if isinstance(value, str) else repr(value)
    return repr(value)


def refuse(name, message):
    """Raises tilesim.ConfigError "name: message" naming the argument (.key = name)."""
    err = _core.ConfigError(f"{name}: {message}")
    err.key, err.kind = name, "input"
    raise err


def integer(name, value, minimum, none_ok=True, maximum=None):
    """`value` as an int from minimum (to maximum), checked by the CLI's own check of its integer
    options (tools/formats/option_values.hpp): no bool, no float, no text. None passes when
    none_ok. Else tilesim.ConfigError naming the argument."""
    if value is None and none_ok:
        return None
    # Only an int's text reads as an integer: a float's has a point, an exponent, inf or nan.
    text = _option_text(value)
    message = _core.integer_option_error(*((text, minimum) if maximum is None
                                           else (text, minimum, maximum)))
    if message:
        refuse(name, message)
    return value


def number(name, value, above, at_most=None):
    """`value` as a finite number above < value <= at_most, checked as the CLI checks its number
    options. None passes. Else tilesim.ConfigError naming the argument."""
    if value is None:
        return None
    message = _core.number_option_error(*((_option_text(value), above) if at_most is None
                                          else (_option_text(value), above, at_most)))
    if message:
        refuse(name, message)
    return float(value)


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
    return _core.sweep_job(text, is_file, hardware_name(hardware), objective or "",
                           what_ifs(settings))
