"""tilesim from Python gives what the CLI gives: the same --json content, CSV, SVG and table,
the same one-line errors (as tilesim.ConfigError with the key), never an interpreter crash."""
import json
import sys
import threading

import pytest

import tilesim
from conftest import source

SOFTMAX = source("configs/examples/softmax_16x16384.json")
LOOPS = source("configs/sweeps/rule2_groupnorm_16x64x256x256_loops.json")
SPMD = source("configs/sweeps/spmd_add_grid_910b4.json")


def test_run_equals_cli_json(cli):
    res = tilesim.run(SOFTMAX)
    assert res.to_dict() == cli.json("run", SOFTMAX)
    assert res.gen_time_us == res.to_dict()["gen_time_us"] > 0
    assert res.candidate["op"] == "softmax"


def test_run_from_a_dict_equals_the_file(cli):
    with open(SOFTMAX) as f:
        doc = json.load(f)
    doc["hardware"] = "ascend910b1"  # a dict has no folder: name the hardware by its shipped name
    assert tilesim.run(doc, tile=[2, 8192], loop=1).to_dict() == cli.json(
        "run", SOFTMAX, "--tile", "2,8192", "--loop", "1")


def test_sweep_outputs_equal_the_cli_byte_for_byte(cli, tmp_path):
    res = tilesim.sweep(SPMD, jobs=2)
    p = cli("sweep", SPMD, "-j", "2", "--top", "0", "--csv", tmp_path / "s.csv", "--json",
            tmp_path / "s.json", "--svg", tmp_path / "s.svg")
    assert res.to_json() == (tmp_path / "s.json").read_text()
    assert res.to_csv() == (tmp_path / "s.csv").read_text()
    assert res.to_svg() == (tmp_path / "s.svg").read_text()
    assert p.stdout.startswith(res.table(top=0))
    assert res.to_dict() == json.loads((tmp_path / "s.json").read_text())


def test_sweep_dataframe_has_a_row_per_candidate_and_a_column_per_tile_dim():
    res = tilesim.sweep(LOOPS, jobs=2)
    df = res.to_dataframe()
    d = res.to_dict()
    assert len(df) == d["counts"]["candidates"]
    rank = len(d["sweep"]["shape"])
    for col in ["op", "shape", "dtype", "hardware", "loop_count", "gen_time_us"] + [
            f"tile{i}" for i in range(rank)]:
        assert col in df.columns
    best = df.iloc[0]
    assert best["rank"] == 1 and best["recommended"] == 1
    assert [int(best[f"tile{i}"]) for i in range(rank)] == res.recommended["tile"]
    assert best["gen_time_us"] == pytest.approx(res.recommended["gen_time_us"], rel=1e-6)
    assert (df["op"] == "groupnorm").all()
    assert res.why.startswith("tile ")


def test_sweep_plot_u_curve_marks_the_best():
    ax = tilesim.sweep(LOOPS, jobs=2).plot()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert any(lab.startswith("best: ") for lab in labels)
    assert "sweet spot" in labels
    assert ax.get_xlabel().startswith("loop_count")


def _star(ax):
    """The (x, y) of the plot's star (the recommendation)."""
    for c in ax.collections:
        if c.get_label().startswith("best: "):
            return tuple(c.get_offsets()[0])
    raise AssertionError("no star")


@pytest.mark.parametrize("objective", ["kernel_time_us", "gen_time_us"])
def test_sweep_plot_draws_the_objective_with_the_star_on_the_recommendation(objective):
    # The plot is the --svg's data: its y is the objective the sweep ranks by, so the star sits on
    # the recommended candidate at its objective value (it drew gen_time_us whatever the ranking).
    res = tilesim.sweep(LOOPS, jobs=2, objective=objective)
    ax = res.plot()
    x, y = _star(ax)
    assert x == res.recommended["loop_count"]
    assert y == pytest.approx(res.recommended["metrics"][objective], rel=1e-9)
    assert objective in ax.get_ylabel()


def test_sweep_plot_heat_map_for_a_tile_dim_and_the_loop_count():
    with open(LOOPS) as f:
        doc = json.load(f)
    doc["hardware"] = "ascend910b1"
    doc["candidates"]["tiles"] = [[1, 8, 2, 256], [1, 8, 4, 256], [1, 8, 8, 256]]
    doc["candidates"]["loop_counts"] = [1, 4, 16]
    doc["candidates"].pop("generate_loop_counts", None)
    res = tilesim.sweep(doc, jobs=2)
    ax = res.plot()
    assert len(ax.images) == 1
    assert ax.images[0].get_array().shape == (3, 3)  # loop counts x tile[2] values
    assert ax.get_xlabel() == "tile[2]" and ax.get_ylabel() == "loop count"


def test_timeline_has_a_lane_per_core_that_ran_a_task():
    # ... and the AICPU threads' lanes (build+stitch, dispatch), as `tilesim run --trace` has them.
    res = tilesim.run(SOFTMAX)
    labels = [t.get_text() for t in res.timeline().get_yticklabels()]
    assert len([n for n in labels if n.startswith(("AIV", "AIC"))]) == len(res.per_core)
    assert len(labels) > len(res.per_core)


BAD = [
    ({"op": "softmax", "shape": [16, 16384], "dtype": "fp32", "dim": 1, "tile": [1, 8192],
      "tilee": 1}, "tilee"),
    ({"op": "softmax", "shape": [16, 16384], "dtype": "fp33", "dim": 1, "tile": [1, 8192]},
     "dtype"),
    ({"op": "softmax", "shape": [16, -4], "dtype": "fp32", "dim": 1, "tile": [1, 8192]},
     None),
]


@pytest.mark.parametrize("doc,key", BAD)
def test_bad_input_raises_the_cli_error_with_its_key(cli, tmp_path, doc, key):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    expected = cli("run", path, code=2).stderr
    assert expected.startswith("tilesim: error: ") and expected.count("\n") == 1
    with pytest.raises(tilesim.ConfigError) as e:
        tilesim.run(str(path))
    assert "tilesim: error: " + str(e.value) + "\n" == expected
    assert isinstance(e.value, ValueError)
    if key is not None:
        assert e.value.key == key
    with pytest.raises(tilesim.ConfigError) as d:  # a dict: the same text, named <dict>
        tilesim.run(doc)
    assert str(d.value) == str(e.value).replace(str(path), "<dict>")


def test_sweep_errors_are_the_cli_errors(cli, tmp_path):
    path = tmp_path / "bad_sweep.json"
    path.write_text(json.dumps({"op": "softmax", "shape": [16, 16384], "dtype": "fp32", "dim": 1,
                                "candidates": {"tiles": [[1, 8192]], "axis": "tile:9"}}))
    expected = cli("sweep", path, code=2).stderr
    with pytest.raises(tilesim.ConfigError) as e:
        tilesim.sweep(str(path))
    assert "tilesim: error: " + str(e.value) + "\n" == expected
    assert e.value.key == "candidates.axis"


def test_other_bad_arguments_raise_never_crash():
    with pytest.raises(tilesim.ConfigError, match="cannot open"):
        tilesim.run("/nonexistent/config.json")
    with pytest.raises(TypeError):
        tilesim.run(42)
    with pytest.raises(tilesim.ConfigError):
        tilesim.run(SOFTMAX, tile=[3, 5])  # misaligned: the kernel's own check
    with pytest.raises(tilesim.ConfigError):
        tilesim.sweep(LOOPS, hardware="no_such_chip")
    with pytest.raises(ValueError):
        tilesim.run({"op": "softmax", "shape": [16, float("nan")]})
    with pytest.raises(tilesim.ConfigError):
        tilesim.replay(SOFTMAX)  # not a task graph


def test_replay_and_analyze_equal_the_cli(cli, tmp_path):
    graph, trace = tmp_path / "g.json", tmp_path / "t.json"
    cli("run", SOFTMAX, "--export-graph", graph, "--trace", trace)
    rep = tilesim.replay(str(graph))
    assert rep.to_dict() == cli.json("replay", graph)
    assert len(rep.timeline().get_yticklabels()) == len(rep.per_core)
    assert tilesim.analyze(str(trace), graph=str(graph)).to_dict() == cli.json(
        "analyze", trace, "--graph", graph)


def test_rules_validate_calibrate_equal_the_cli(cli, tmp_path):
    assert tilesim.rules(only=["rule1.example_a"], jobs=2).to_dict() == cli.json(
        "rules", "--only", "rule1.example_a", "-j", "2")
    zh = tilesim.rules(only=["rule5.fp32_accumulate"], jobs=2, lang="zh").to_dict()
    assert zh == cli.json("rules", "--only", "rule5.fp32_accumulate", "-j", "2", "--lang", "zh")
    assert zh["results"][0]["checks"][0]["claim"].startswith("规则 5")
    with open(source("docs/rules_4_5.md"), encoding="utf-8") as f:
        assert tilesim.rule_chapters(jobs=2) == f.read()
    with pytest.raises(tilesim.ConfigError, match="unknown language"):
        tilesim.rules(only=["rule5"], lang="fr")
    ds = source("configs/validation/ascendc_elementwise_batch_910b.json")
    v = tilesim.validate([ds], jobs=2)
    assert v.to_dict() == cli.json("validate", ds, "-j", "2")
    assert v.within is True
    kb = source("configs/validation/kernelbench_elementwise_910b4.json")
    keys = ["kernel.vector_launch_us", "cube.fp16_cycles_per_fractal"]
    s = tilesim.validate([kb], jobs=2, sensitivity_keys=keys)
    assert s.to_dict() == cli.json("validate", kb, "-j", "2", "--sensitivity-keys", ",".join(keys))
    assert [p["key"] for p in s.to_dict()["sensitivity"]["datasets"][0]["params"]] == keys
    # Two of the shipped measurements: the calibration path in little time.
    with open(source("configs/measurements/a2_calibration.json")) as f:
        shipped = json.load(f)
    runs = shipped["measurements"][6:8]  # add_8192 case 1: a run of milliseconds
    for r in runs:
        r["config_file"] = source("configs/measurements/" + r["config_file"])
    m = tmp_path / "m.json"
    m.write_text(json.dumps({"hardware": "ascend910b1", "measurements": runs}))
    c = tilesim.calibrate(str(m), free=["dma.read.issue_cycles"], max_iter=1, jobs=2)
    got, want = c.to_dict(), cli.json("calibrate", m, "--free", "dma.read.issue_cycles",
                                      "--max-iter", "1", "-j", "2")
    assert "seconds" not in got["fit"]  # no wall clock: the same input gives the same JSON
    assert got == want
    assert c.calibrated_hardware["name"]


def test_the_gil_is_released_while_cpp_runs():
    # With a switch interval far longer than the sweep, this thread can run before the sweep's
    # thread finishes only if that thread releases the GIL: in C++ (tilesim._core's nogil).
    old = sys.getswitchinterval()
    sys.setswitchinterval(100.0)
    try:
        entered, done = threading.Event(), []

        def work():
            entered.set()
            tilesim.sweep(SPMD, jobs=1)
            done.append(True)

        t = threading.Thread(target=work)
        t.start()
        entered.wait()
        assert not done
        t.join()
        assert done
    finally:
        sys.setswitchinterval(old)


def test_sweep_objective_matches_the_cli(cli):
    cfg = source("configs/sweeps/rule2_groupnorm_16x64x256x256_loops.json")
    res = tilesim.sweep(cfg, jobs=2, objective="kernel_time_us")
    assert res.sweep["objective"] == "kernel_time_us"
    by_cli = cli.json("sweep", cfg, "--objective", "kernel_time_us")
    assert res.to_dict()["recommended"] == by_cli["recommended"]
    assert [c["index"] for c in res.candidates] == [c["index"] for c in by_cli["candidates"]]
    times = [c["metrics"]["kernel_time_us"] for c in res.candidates if c["status"] == "ok"]
    assert times == sorted(times)
    with pytest.raises(tilesim.ConfigError, match="unknown objective 'energy'"):
        tilesim.sweep(cfg, objective="energy")


def test_merge_of_cli_shards_is_the_sweep_and_traces_write(cli, tmp_path):
    cfg = source("configs/sweeps/rule1_a_softmax_16x16384.json")
    shards = []
    for k in (1, 2, 3):
        out = tmp_path / f"s{k}.json"
        cli("sweep", cfg, "--shard", f"{k}/3", "-o", out)
        shards.append(out)
    merged = tilesim.merge(shards)
    assert merged.to_json() == tilesim.sweep(cfg, jobs=2).to_json()
    assert merged.to_csv() == cli("merge", *shards, "--csv", "-").stdout
    with pytest.raises(tilesim.ConfigError):
        tilesim.merge(shards[:2])  # shard 3 of 3 missing
    r = tilesim.run(source("configs/examples/add_pypto.json"))
    r.write_trace(tmp_path / "t.json")
    assert json.loads((tmp_path / "t.json").read_text()) == r.trace
    cli("run", source("configs/examples/add_pypto.json"), "--trace", tmp_path / "c.json")
    assert json.loads((tmp_path / "c.json").read_text()) == r.trace
