"""What the CLI has and Python gained with it: hardware what-ifs (set=), a sweep's progress
callback and Ctrl-C, the degenerate-fit refusal, board profiles in (measurements_from_*) and
analyze --compare (tilesim.compare); each equal to the CLI's output for the same input."""
import json
import os
import re
import warnings

import pytest

import tilesim
from conftest import source

ADD = source("configs/examples/add_pypto.json")
SPMD = source("configs/sweeps/spmd_add_grid_910b4.json")
BOARD = source("configs/measurements/board/")


def test_set_is_the_clis_what_if(cli):
    what_if = {"gm.hbm_bandwidth_gbps": 200, "l2.bandwidth_gbps": 400.5}
    res = tilesim.run(ADD, set=what_if)
    assert res.to_dict() == cli.json("run", ADD, "--set", "gm.hbm_bandwidth_gbps=200", "--set",
                                     "l2.bandwidth_gbps=400.5")
    assert res.hardware == "ascend910b1 (what-if: gm.hbm_bandwidth_gbps=200, l2.bandwidth_gbps=400.5)"
    assert res.gen_time_us > 1.5 * tilesim.run(ADD).gen_time_us
    assert tilesim.run(ADD, set=["gm.hbm_bandwidth_gbps=200", "l2.bandwidth_gbps=400.5"]).to_dict() \
        == res.to_dict()
    sw = tilesim.sweep(SPMD, jobs=2, set={"gm.hbm_bandwidth_gbps": 400})
    assert sw.to_dict() == cli.json("sweep", SPMD, "-j", "2", "--set", "gm.hbm_bandwidth_gbps=400")
    with pytest.raises(tilesim.ConfigError, match=r"--set: parameters.cores.aiv.value: expected an "
                                                  r"integer \(1 to 1024 cores\), got 2.5"):
        tilesim.run(ADD, set={"cores.aiv": 2.5})
    with pytest.raises(tilesim.ConfigError, match="'NaN' is not a number"):
        tilesim.run(ADD, set={"gm.hbm_bandwidth_gbps": float("nan")})
    with pytest.raises(tilesim.ConfigError, match="did you mean gm.hbm_bandwidth_gbps"):
        tilesim.rules(only=["rule1.example_a"], set={"gm.hbm_bandwith_gbps": 1})


def test_a_sweep_draws_a_bar_on_a_terminal_and_nothing_elsewhere(monkeypatch, capsys):
    # Issue 48: long sweeps show progress on a terminal (tqdm), silent when not a terminal.
    import io
    import sys as _sys

    tilesim.sweep(SPMD, jobs=1)  # stderr captured: not a terminal
    assert capsys.readouterr().err == ""

    class Terminal(io.StringIO):
        def isatty(self):
            return True

    term = Terminal()
    monkeypatch.setattr(_sys, "stderr", term)
    res = tilesim.sweep(SPMD, jobs=1)
    total = len(res.candidates)
    assert "tilesim sweep" in term.getvalue() and f"/{total} " in term.getvalue()
    term2 = Terminal()
    monkeypatch.setattr(_sys, "stderr", term2)
    tilesim.sweep(SPMD, jobs=1, progress=None)
    assert term2.getvalue() == ""
    with pytest.raises(ValueError, match="progress: expected a callable"):
        tilesim.sweep(SPMD, jobs=1, progress="bar")


def test_progress_reports_every_candidate_and_can_stop_the_sweep():
    seen = []
    res = tilesim.sweep(SPMD, jobs=1, progress=lambda done, total: seen.append((done, total)))
    total = len(res.candidates)
    assert seen[-1] == (total, total)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)
    assert all(t == total for _, t in seen)

    class Stop(Exception):
        pass

    def stop(done, total):
        raise Stop()

    with pytest.raises(Stop):
        tilesim.sweep(SPMD, jobs=1, progress=stop)
    # Chunks (no client: evaluated here) report as each finishes.
    chunked = []
    tilesim.sweep(SPMD, jobs=1, chunks=3, progress=lambda d, t: chunked.append((d, t)))
    assert chunked[-1] == (total, total) and len(chunked) == 3


def test_a_degenerate_fit_is_refused_as_the_cli_refuses_it(cli, tmp_path):
    relu = tmp_path / "relu.json"
    cli("measurements", "from-msprof", BOARD + "relu_op_summary.csv", "--map",
        BOARD + "relu_msprof_map.json", "-o", relu)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        c = tilesim.calibrate(str(relu), jobs=2)
    assert c.calibrated_hardware is None
    assert re.match(r"degenerate fit \(condition number (inf|[0-9.e+]+) > 10000\): the "
                    r"measurements cannot separate ", c.refused), c.refused
    assert any(c.refused in str(x.message) for x in w)
    p = cli("calibrate", relu, "-j", "2", "-q", code=1)
    assert p.stderr.strip().endswith(c.refused + " (--allow-degenerate keeps the fit)")
    kept = tilesim.calibrate(str(relu), jobs=2, allow_degenerate=True)
    assert kept.calibrated_hardware["name"] and "refused" not in kept.to_dict()


def test_board_profiles_in_and_compare_equal_the_cli(cli, tmp_path):
    csv, mapping = BOARD + "relu_op_summary.csv", BOARD + "relu_msprof_map.json"
    out = tmp_path / "relu.json"
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        m = tilesim.measurements_from_msprof(csv, mapping, output=out)
    assert "match no kernel" in str(w[0].message)  # the AI_CPU MemSet row
    cli("measurements", "from-msprof", csv, "--map", mapping, "-o", tmp_path / "cli.json")
    assert out.read_text() == (tmp_path / "cli.json").read_text()
    assert m.to_dict() == json.loads(out.read_text())
    assert "relu_b1: msprof op_summary" in m.summary
    v = tilesim.measurements_from_msprof([csv], mapping, as_="validate",
                                         metrics=["task_duration_us"])
    assert v.to_dict() == json.loads(cli("measurements", "from-msprof", csv, "--map", mapping,
                                         "--as", "validate", "--metric",
                                         "task_duration_us").stdout)
    lane, cfg = BOARD + "add_pypto_16x4096_swimlane.json", BOARD + "add_pypto_16x4096.json"
    s = tilesim.measurements_from_swimlane(lane, cfg)
    assert s.to_dict() == json.loads(cli("measurements", "from-swimlane", lane, "--config",
                                         cfg).stdout)
    assert tilesim.compare(lane, cfg).to_dict() == cli.json("analyze", lane, "--compare", cfg)
    b1 = BOARD + "relu_910b4_b1.json"
    got = tilesim.compare(csv, b1, match={"Input Shapes": "1,12,256,32"}, skip_first=1)
    assert got.to_dict() == cli.json("analyze", csv, "--compare", b1, "--match",
                                     "Input Shapes=1,12,256,32", "--skip-first", "1")
    with pytest.raises(tilesim.ConfigError, match="as 'x': allowed calibrate"):
        tilesim.measurements_from_msprof(csv, mapping, as_="x")


def test_dask_is_an_attribute_without_its_own_import():
    assert tilesim.dask.NoWorkersError.__name__ == "NoWorkersError"


def test_svg_map_equals_the_cli(cli, tmp_path):
    cfg = source("configs/sweeps/spmd_softmax_grid_subtile_4096x4096.json")
    res = tilesim.sweep(cfg, jobs=2)
    cli("sweep", cfg, "-j", "2", "-q", "--svg-map", tmp_path / "m.svg")
    assert res.to_svg_map() == (tmp_path / "m.svg").read_text()
    one = tilesim.sweep(source("configs/sweeps/rule2_groupnorm_16x64x256x256_loops.json"), jobs=2)
    with pytest.raises(tilesim.ConfigError, match="only loop count varies"):
        one.to_svg_map()


def test_python_arguments_are_checked_as_the_cli_checks_them():
    # ../shared/hostile-t3 py_run_tile_zero_sigfpe, py_run_tile_negative_internal,
    # py_silent_coercions, py_sweep_chunks_20000: a ConfigError naming the argument, never a
    # crash, an internal error or a silent coercion.
    cfg = {"op": "add", "shape": [64, 64], "tile": [8, 64]}
    for tile in ([0, 64], [8, 0], [-8, 64]):
        with pytest.raises(tilesim.ConfigError, match=r"tile: .* overrides it with a dim") as e:
            tilesim.run(cfg, tile=tile)
        assert e.value.key == "tile" and e.value.kind == "input"
    for kwargs in ({"loop": 1.9}, {"loop": "2"}, {"loop": -1}, {"loop": 0}, {"loop": True}):
        with pytest.raises(tilesim.ConfigError, match="loop: .* is not an integer >= 1"):
            tilesim.run(cfg, **kwargs)
    for kwargs in ({"jobs": -1}, {"jobs": 1.5}, {"jobs": "2"}, {"chunks": 0}, {"chunks": 2.5}):
        with pytest.raises(tilesim.ConfigError, match=f"{next(iter(kwargs))}: .* is not an integer"):
            tilesim.sweep(SPMD, **kwargs)
    with pytest.raises(tilesim.ConfigError, match="jobs: '-2' is not an integer >= 0"):
        tilesim.rules(jobs=-2)
    with pytest.raises(tilesim.ConfigError, match="jobs: '-1' is not an integer >= 0"):
        tilesim.validate(jobs=-1)
    m = source("configs/measurements/a2_calibration.json")
    for kwargs, what in (({"fd_step": float("nan")}, "fd_step"), ({"fd_step": -0.1}, "fd_step"),
                         ({"digits": -1}, "digits"), ({"max_iter": -5}, "max_iter")):
        with pytest.raises(tilesim.ConfigError, match=f"{what}: "):
            tilesim.calibrate(m, **kwargs)
    # More chunks than candidates: one chunk per candidate, the local sweep's result.
    s = source("configs/sweeps/rule2_matmul_16384_loops.json")
    assert tilesim.sweep(s, chunks=20000).to_dict() == tilesim.sweep(s).to_dict()
    # One check serves both (tools/formats/option_values.hpp): Python's words are the CLI's.
    import subprocess
    for option, kwargs in (("--max-iter 200000", {"max_iter": 200000}),
                           ("--fd-step 0.7", {"fd_step": 0.7}), ("-j -1", {"jobs": -1})):
        cli = subprocess.run([os.environ["TILESIM_BINARY"], "calibrate", m] + option.split(),
                             capture_output=True, text=True)
        with pytest.raises(tilesim.ConfigError) as e:
            tilesim.calibrate(m, **kwargs)
        name = next(iter(kwargs))
        assert cli.stderr.splitlines()[0].split(": ", 3)[3] == str(e.value)[len(name) + 2:]
    # py_core_merge_internal_error: the private calls tilesim.dask makes refuse bad input as
    # ConfigError too, never an internal error or a raw parse error.
    with pytest.raises(tilesim.ConfigError, match=r"merge: 1 shard texts but 0 origins"):
        tilesim._core.merge(["{}"], [])
    with pytest.raises(tilesim.ConfigError, match=r"<job>: not a job document \("):
        tilesim._core.job_from_doc("x")


def test_ctrl_c_stops_a_sweep_without_waiting_for_its_end():
    # ../shared/hostile-t3 py_keyboardinterrupt_sweep: SIGINT while C++ runs raises
    # KeyboardInterrupt at the next poll and cancels the workers, not at the sweep's end.
    import os
    import signal
    import threading

    big = source("configs/sweeps/softmax_16x16384_exhaustive.json")
    seen = []

    def progress(done, total):
        seen.append((done, total))
        if len(seen) == 1:  # once: the signal comes from another thread while C++ runs
            threading.Thread(target=os.kill, args=(os.getpid(), signal.SIGINT)).start()

    with pytest.raises(KeyboardInterrupt):
        tilesim.sweep(big, jobs=1, progress=progress)
    done, total = seen[-1]
    assert done < total, seen[-3:]


def test_ctrl_c_stops_the_running_candidates_not_after_them():
    # Issue 50: Ctrl-C took 7.7-11.8 s on a sweep whose candidates take seconds (the workers
    # stopped only between candidates). The running candidate's lowering and simulation stop
    # too (model/stop.hpp). A candidate here (a million tiles) takes about 1.9 s on the 2-core
    # machine in a Release build (the [256, 8192] one of 0.4 s finished before the signal once
    # a stage's tile kinds were built once per extent); KeyboardInterrupt comes within 0.5 s (a
    # stopped candidate still freeing its state ends in the background).
    import signal
    import threading
    import time

    cfg = {"op": "add", "shape": [1024, 8192], "tile": [1, 8],
           "candidates": {"loop_counts": [128, 256], "constraints": {"prune_over_limits": False}}}
    sent = []

    def interrupt():
        sent.append(time.monotonic())
        os.kill(os.getpid(), signal.SIGINT)

    timer = threading.Timer(1.0, interrupt)
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        tilesim.sweep(cfg, jobs=1)
    timer.join()
    assert time.monotonic() - sent[0] < 0.5


def test_paths_names_and_dims_are_checked_as_the_cli_checks_them(tmp_path):
    # ../shared/hostile-t4 py_path_with_nul_runs_other_file: "c.json\x00x" ran c.json (the path
    # was cut at the NUL on its way to C++). py_silent_coercions_t4: tile=[True, 1024] ran tile
    # (1, 1024); hardware="" ran the default hardware.
    cfg = tmp_path / "c.json"
    cfg.write_text('{"op": "add", "shape": [64, 1024], "tile": [8, 1024]}')
    with pytest.raises(ValueError, match="config: .* a path with a NUL character"):
        tilesim.run(str(cfg) + "\x00anything-here")
    spec = {"op": "add", "shape": [64, 1024], "tile": [8, 1024]}
    with pytest.raises(tilesim.ConfigError, match="tile: True is not an integer dim"):
        tilesim.run(spec, tile=[True, 1024])
    with pytest.raises(tilesim.ConfigError, match="tile: True is not a list of integer dims"):
        tilesim.run(spec, tile=True)  # a lone value: not a TypeError from iterating it
    # The Hypothesis suite's find: set="\n" raised a two-line ConfigError (the CLI escapes it).
    with pytest.raises(tilesim.ConfigError) as e:
        tilesim.run(spec, set="\n")
    assert str(e.value).startswith("--set \\n: expected KEY=VALUE"), str(e.value)
    # ... and a dict config holding nan raised json's ValueError, not a ConfigError.
    with pytest.raises(tilesim.ConfigError, match="config: the dict is not JSON: Out of range"):
        tilesim.run({"op": "add", "shape": [64, float("nan")]})
    with pytest.raises(tilesim.ConfigError, match="hardware: an empty name"):
        tilesim.run(spec, hardware="")
    with pytest.raises(tilesim.ConfigError, match="hardware: an empty name"):
        tilesim.sweep({"op": "add", "shape": [64, 1024], "candidates": {"tiles": [[8, 1024]]}},
                      hardware="")


def test_python_writers_keep_the_rules_every_cli_output_keeps(tmp_path):
    # ../shared/hostile-t4 py_outputs_over_inputs: measurements_from_msprof(output=map),
    # Result.write_trace(config) and TracedKernel.write(kernel file) replaced the inputs they were
    # made from. Each is refused (ConfigError), and each writes as the CLI does: through a link to
    # its target, never a half-written file.
    import tilesim.pypto as pypto

    (tmp_path / "p.csv").write_text("Op Name,Task Duration(us)\nrelu_kernel,1.5\n")
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps({"hardware": "ascend910b4", "kernels": [{
        "id": "r", "match": {"Op Name": "relu_kernel"}, "mapping": "m", "sweep": "s", "x": 1,
        "config": {"op": "relu", "shape": [64, 1024], "tile": [8, 1024]}}]}))
    cfg = tmp_path / "c.json"
    cfg.write_text('{"op": "add", "shape": [64, 1024], "tile": [8, 1024]}')

    @pypto.jit
    def k(x: pypto.Tensor((16, 1024), pypto.DT_FP32), y: pypto.Tensor((16, 1024), pypto.DT_FP32)):
        pypto.set_vec_tile_shapes(1, 1024)
        y[:] = pypto.exp(x)

    traced = k.trace()
    here = __file__
    before = {p: open(p).read() for p in (mapping, cfg, here)}
    with pytest.raises(tilesim.ConfigError, match="output .*map.json: is the command's own input"):
        tilesim.measurements_from_msprof(tmp_path / "p.csv", mapping, output=mapping)
    with pytest.raises(tilesim.ConfigError, match="c.json: is the command's own input"):
        tilesim.run(str(cfg)).write_trace(cfg)
    with pytest.raises(tilesim.ConfigError, match="test_parity.py: is the command's own input"):
        traced.write(here)
    assert {p: open(p).read() for p in before} == before
    # Through a link: the target gets the text, the link stays a link.
    (tmp_path / "real.json").write_text("OLD")
    os.symlink("real.json", tmp_path / "link.json")
    traced.write(tmp_path / "link.json")
    assert os.path.islink(tmp_path / "link.json")
    assert json.loads((tmp_path / "real.json").read_text())["program"] == "k"
    with pytest.raises(tilesim.ConfigError, match="nodir/t.json: cannot write the trace"):
        tilesim.run(str(cfg)).write_trace(tmp_path / "nodir" / "t.json")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c.json", "link.json", "map.json",
                                                          "p.csv", "real.json"]


def _stderr_on_a_terminal(*args):
    """What `tilesim ARGS` writes on its stderr when that is a terminal (a pty)."""
    import pty
    import subprocess

    master, slave = pty.openpty()
    p = subprocess.Popen([os.environ["TILESIM_BINARY"], *args], stdout=subprocess.DEVNULL,
                         stderr=slave)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    p.wait()
    os.close(master)
    return out.decode(errors="replace")


def test_validate_shows_its_progress_on_a_terminal_unless_quiet(cli):
    # Every shipped dataset on one thread runs for more than the second the bar waits.
    shown = _stderr_on_a_terminal("validate", "-j", "1")
    assert re.search(r"\] (\d+)/\1 points", shown), shown[-300:]
    assert "points" not in _stderr_on_a_terminal("validate", "-j", "1", "-q")
    # Not a terminal: nothing (cli captures stderr through a pipe).
    assert "points" not in cli("validate", "-j", "1").stderr


def test_calibrate_shows_its_iterations_on_a_terminal_unless_quiet(tmp_path):
    # ../shared issue 48: -q silenced the report but not the fit's progress line.
    m = tmp_path / "m.json"
    m.write_text(json.dumps({
        "hardware": "ascend910b1", "free": [{"key": "vector.issue_cycles"}],
        "measurements": [{"id": "a", "metric": "vec_time_us", "measured": 20.0, "config": {
            "op": "add", "shape": [384, 2048], "tile": [8, 256], "buffer_count": 2,
            "partition": {"style": "ascendc", "cores": 48}}}]}))
    assert "calibrate: iteration" in _stderr_on_a_terminal("calibrate", str(m), "-j", "1")
    assert "iteration" not in _stderr_on_a_terminal("calibrate", str(m), "-j", "1", "-q")
