"""The tilesim commands as functions: each calls the C++ path its CLI command calls."""
import json
import os
import sys
import warnings

from . import _core
from ._jobs import source as _source
from ._jobs import sweep_job
from ._jobs import integer as _integer
from ._jobs import number as _number
from ._jobs import what_ifs as _what_ifs
from ._jobs import dims as _dims
from ._jobs import hardware_name as _hardware
from ._jobs import path as _path
from ._jobs import check_output as _check_output
from ._jobs import write_text as _write_text
from .results import JsonResult, Result, SweepResult


def _paths(items):
    if items is None:
        return []
    if isinstance(items, (str, os.PathLike)):
        items = [items]
    return [_path("path", p) for p in items]


def _warn(data):
    for w in data.get("warnings", []):
        warnings.warn(w, stacklevel=3)


def run(config, tile=None, loop=None, hardware=None, set=None):
    """Simulates one candidate (``tilesim run``): a :class:`Result`. ``set``: hardware what-ifs
    (``--set``), a dict {key: value} or "key=value" strings."""
    text, is_file = _source(config)
    loop = _integer("loop", loop, 1)
    data, trace = _core.run(text, is_file, _dims("tile", tile), loop or 0, _hardware(hardware),
                            _what_ifs(set))
    return Result(json.loads(data), json.loads(trace), [text] if is_file else [])


def _progress_bar(progress, what):
    """``progress`` as sweep takes it: a callable, None or False (none), or "auto": a tqdm bar on
    stderr when it is a terminal (as the CLI's bar), else nothing."""
    if isinstance(progress, str):
        if progress != "auto":
            raise ValueError(f'progress: expected a callable, None or "auto" (got {progress!r})')
        if not sys.stderr.isatty():
            return None
        from tqdm import tqdm

        bar = None

        def update(done, total):
            nonlocal bar
            if bar is None:
                bar = tqdm(total=total, desc=what, unit="candidate", leave=False, file=sys.stderr)
            bar.update(done - bar.n)
            if done >= total:
                bar.close()
        return update
    if progress is None or progress is False:
        return None
    if not callable(progress):
        raise ValueError(f'progress: expected a callable, None or "auto" (got {progress!r})')
    return progress


def sweep(config, jobs=0, client=None, hardware=None, chunks=None, results_dir=None, retries=2,
          objective=None, timeout=60, set=None, progress="auto"):
    """Evaluates, ranks and zones a candidate space (``tilesim sweep``): a :class:`SweepResult`.

    jobs: C++ threads (0: every core; per chunk with a client, where 0 means 1). With a
    ``dask.distributed`` client the candidates are split into ``chunks`` shards (``tilesim sweep
    --shard K/N``) evaluated on the workers and merged (``tilesim merge``): the same result as a
    local sweep. ``objective`` ranks by another figure than the config's (default kernel_time_us, launch to end; ``tilesim sweep
    --objective``): "gen_time_us", "kernel_time_us", "mte2_us", "vec_us", ... ``results_dir`` keeps the finished chunks, so an interrupted sweep resumes (also
    without a client: the chunks then run here); a failed chunk is retried ``retries`` times.
    ``timeout`` (seconds; None: forever): no worker joining the client's cluster in time raises
    tilesim.dask.NoWorkersError instead of waiting silently. ``set``: hardware what-ifs
    (``--set``). ``progress(done, total)``: called as candidates finish (locally about every
    0.1 s, with a client as chunks finish); an exception it raises, or Ctrl-C, stops the sweep.
    The default, "auto", draws a tqdm bar on stderr when it is a terminal; None: no progress.
    """
    jobs = _integer("jobs", jobs, 0, none_ok=False)
    chunks = _integer("chunks", chunks, 1)
    retries = _integer("retries", retries, 0, none_ok=False)
    job = sweep_job(config, hardware, objective, settings=set)
    progress = _progress_bar(progress, "tilesim sweep")
    if client is None and chunks is None and results_dir is None:
        return SweepResult(_core.sweep(job, jobs, progress))
    from . import dask as _dask

    return _dask.sweep_job_on(job, client, chunks=chunks, results_dir=results_dir,
                              retries=retries, jobs=jobs, timeout=timeout, progress=progress)


def merge(shards):
    """The shard files of one sweep (``tilesim sweep --shard K/N -o f``, or a results_dir's
    chunks) ranked as one sweep (``tilesim merge``): a :class:`SweepResult`."""
    paths = _paths(shards)
    if not paths:
        raise ValueError("shards: expected one or more shard files")
    texts = []
    for p in paths:
        with open(p) as f:
            texts.append(f.read())
    return SweepResult(_core.merge(texts, paths))


def rules(hardware="ascend910b1", compare=None, only=None, jobs=0, set=None, lang="en"):
    """Checks the rulebook's claims against the model (``tilesim rules``); ``lang="zh"`` states
    the claims in the rulebook's own language."""
    names = [hardware] + _paths(compare)
    jobs = _integer("jobs", jobs, 0, none_ok=False)
    text, _ = _core.rules(names, _paths(only), jobs, _what_ifs(set), lang, False)
    return JsonResult(json.loads(text))


def rule_chapters(hardware="ascend910b1", jobs=0, set=None, lang="en"):
    """Rules 4 and 5 as the rulebook's chapters, Markdown written from a run (``tilesim rules
    --only rule4 --only rule5 --chapters -``)."""
    jobs = _integer("jobs", jobs, 0, none_ok=False)
    _, chapters = _core.rules([hardware], ["rule4", "rule5"], jobs, _what_ifs(set), lang, True)
    return chapters


def calibrate(measurements, hardware=None, free=None, jobs=0, max_iter=None, fd_step=None,
              digits=4, fresh_lowering=False, allow_degenerate=False):
    """Fits hardware parameters to measurements (``tilesim calibrate``). The result's
    ``calibrated_hardware`` is the calibrated hardware file (what ``-o`` writes) as a dict. A
    degenerate fit is refused as the CLI refuses it (exit 1): ``calibrated_hardware`` is None,
    ``refused`` says which parameters to hold, and a warning repeats it; ``allow_degenerate``
    keeps the fit."""
    jobs = _integer("jobs", jobs, 0, none_ok=False)
    max_iter = _integer("max_iter", max_iter, 1, maximum=100000)
    digits = _integer("digits", digits, 0, none_ok=False)
    fd_step = _number("fd_step", fd_step, 0, 0.5)
    data, hw = _core.calibrate(_path("measurements", measurements), _hardware(hardware), _paths(free), jobs,
                               max_iter or 0, float(fd_step or 0), digits,
                               bool(fresh_lowering), bool(allow_degenerate))
    res = JsonResult(json.loads(data))
    res.calibrated_hardware = json.loads(hw) if hw else None
    if not hw:
        warnings.warn(f"{os.fspath(measurements)}: {res.refused}", stacklevel=2)
    for warning in res.warnings:  # a fit that barely helps, as the CLI warns on stderr
        warnings.warn(f"{os.fspath(measurements)}: {warning}", stacklevel=2)
    return res


def validate(files=None, hardware=None, jobs=0, sensitivity=False, sensitivity_keys=None,
             sensitivity_step=0.5, set=None):
    """Runs measured datasets and scores the model (``tilesim validate``); ``.within`` says
    whether every dataset is within its own tolerances (the CLI's exit code 0). ``sensitivity``
    (or ``sensitivity_keys``, a list of hardware parameters) adds what ``--sensitivity`` reports
    under ``"sensitivity"``: each parameter moved by -/+ ``sensitivity_step``, one at a time."""
    keys = ",".join(sensitivity_keys) if sensitivity_keys else ""
    jobs = _integer("jobs", jobs, 0, none_ok=False)
    data, within = _core.validate(_paths(files), _hardware(hardware), jobs,
                                  bool(sensitivity or keys), keys, float(sensitivity_step),
                                  _what_ifs(set))
    res = JsonResult(json.loads(data))
    res.within = within
    return res


def replay(graph, hardware=None, set=None):
    """Simulates a PyPTO fixed-latency task graph (``tilesim replay``): a :class:`Result`."""
    graph = _path("graph", graph)
    data, trace = _core.replay(graph, _hardware(hardware), _what_ifs(set))
    data = json.loads(data)
    _warn(data)
    return Result(data, json.loads(trace), [graph])


def analyze(trace, graph=None, time_unit="us", hardware=None):
    """PyPTO's swimlane metrics of a trace (``tilesim analyze``)."""
    data = json.loads(_core.analyze(_path("trace", trace), _path("graph", graph) if graph else "",
                                    time_unit, _hardware(hardware)))
    _warn(data)
    return JsonResult(data)


def compare(profile, config, hardware=None, set=None, time_unit="us", graph=None, op_name=None,
            match=None, skip_first=0):
    """A board profile beside the model's run of a run config (``tilesim analyze PROFILE
    --compare CONFIG``): an msprof op_summary (.csv; ``op_name``, ``match`` {column: text} or
    "COLUMN=TEXT" strings, ``skip_first``) or a swimlane (``time_unit``, ``graph``)."""
    if isinstance(match, dict):
        match = [f"{k}={v}" for k, v in match.items()]
    data, warns = _core.compare(_path("profile", profile), _path("config", config), _hardware(hardware),
                                _what_ifs(set), time_unit,
                                _path("graph", graph) if graph else "", op_name or "",
                                [str(m) for m in (match or [])], int(skip_first))
    for w in warns:
        warnings.warn(w, stacklevel=2)
    return JsonResult(json.loads(data))


def _imported(imp, output, inputs):
    for w in imp.warnings:
        warnings.warn(w, stacklevel=3)
    if output is not None:
        _write_text(output, imp.json, "the measurements", inputs, argument="output")
    res = JsonResult(json.loads(imp.json))
    res.summary = imp.summary
    return res


def measurements_from_msprof(csvs, map, as_="calibrate", metrics=None, output=None):
    """msprof op_summary CSVs with a mapping file to measurements (``tilesim measurements
    from-msprof``): the measurements file (``as_="validate"``: a validation dataset) as a
    :class:`JsonResult` with ``.summary``, written to ``output`` when given (its relative
    paths are placed for that file's folder)."""
    inputs = {"csv": _paths(csvs), "map": [_path("map", map)]}
    files = inputs["csv"] + inputs["map"]
    _check_output("output", output, files)
    imp = _core.measurements_from("msprof", inputs, as_, list(metrics or []),
                                  _path("output", output) if output else "")
    return _imported(imp, output, files)


def measurements_from_swimlane(traces, config, graph=None, time_unit="us", hardware=None,
                               id=None, as_="calibrate", metrics=None, output=None):
    """PyPTO swimlanes of one run config to measurements (``tilesim measurements
    from-swimlane``), as :func:`measurements_from_msprof` returns them."""
    inputs = {"trace": _paths(traces), "config": [_path("config", config)],
              "graph": [_path("graph", graph) if graph else ""], "time-unit": [time_unit],
              "hardware": [_hardware(hardware)], "id": [id or ""]}
    files = inputs["trace"] + inputs["config"] + [g for g in inputs["graph"] if g]
    _check_output("output", output, files)
    imp = _core.measurements_from("swimlane", inputs, as_, list(metrics or []),
                                  _path("output", output) if output else "")
    return _imported(imp, output, files)
