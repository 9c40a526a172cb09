"""Generated inputs against the Python contract (issue 50): tilesim.run / tilesim.sweep with
generated tiles, loop counts, hardware, paths and params, and tilesim.pypto with generated small
kernels (ops, tile shapes, loops) run and swept with generated tile shapes and loop counts.

The property is the contract: a call returns a result whose figures are all finite and
non-negative (kernel time >= 0), or it raises tilesim.ConfigError or tilesim.pypto.
UnsupportedError (tilesim's documented errors; a wrong-typed config or hardware is the TypeError
"<argument>: expected ...") with a one-line message. Any other exception fails the test; a crash
fails the whole file and a hang hits ctest's timeout.

Bounded for CI (about 6 s here): 200-500 examples a test, no deadline, derandomized (the same
examples every run), no example database and Hypothesis's home in a temporary directory (nothing
is written beside the tests)."""
import atexit
import math
import os
import pathlib
import shutil
import tempfile

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

import tilesim
import tilesim.pypto as pypto
from conftest import source

SOFTMAX = source("configs/examples/softmax_16x16384.json")
CONTRACT = settings(max_examples=500, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Hypothesis keeps its caches (the text strategies' charmap) in a temporary home, not in the
# source tree ctest runs this from.
HOME = tempfile.mkdtemp(prefix="tilesim_hypothesis_home_")
atexit.register(shutil.rmtree, HOME, True)
set_hypothesis_home_dir(HOME)

# Files the generated paths pick from: junk the loaders must refuse in one line.
FILES = tempfile.mkdtemp(prefix="tilesim_hypothesis_")
atexit.register(shutil.rmtree, FILES, True)
for name, data in [("empty.json", b""), ("array.json", b"[]"), ("object.json", b"{}"),
                   ("nan.json", b'{"op": "softmax", "shape": [16, NaN]}'),
                   ("binary.json", bytes(range(256))), ("cut.json", b'{"op": "softm'),
                   ("hardware.json", b'{"name": "x", "parameters": {"clock_mhz": -1}}')]:
    with open(os.path.join(FILES, name), "wb") as f:
        f.write(data)
JUNK_FILES = [os.path.join(FILES, n) for n in sorted(os.listdir(FILES))]


# ---- the property ------------------------------------------------------------------------------

def numbers(obj, path="$"):
    """(path, value) of every number in a result (bools are flags, not figures)."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from numbers(v, f"{path}.{k}")
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from numbers(v, f"{path}[{i}]")
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        yield path, obj


def check_result(res):
    """Every figure of a run or a sweep (each candidate's metrics included) is finite and >= 0;
    a run has its kernel time."""
    data = res.to_dict()
    for path, v in numbers(data):
        assert math.isfinite(v) and v >= 0, f"{path} = {v!r}"
    if isinstance(res, tilesim.Result) and "candidate" in data:
        assert data["kernel_time_us"] >= 0


def holds(call, *typed):
    """Runs call() under the contract: a result with sound figures, or a documented refusal in
    one line. `typed` names the arguments whose wrong type is a TypeError naming them."""
    try:
        res = call()
    except (tilesim.ConfigError, pypto.UnsupportedError) as e:
        msg = str(e)
        event(f"refused: {type(e).__name__}")
    except TypeError as e:
        msg = str(e)
        assert any(msg.startswith(f"{a}: expected ") for a in typed), f"TypeError: {msg}"
        event("refused: TypeError")
    else:
        check_result(res)
        event(f"ran: {type(res).__name__}")
        return res
    assert msg and "\n" not in msg and "\r" not in msg, repr(msg)
    return None


# ---- generated arguments -----------------------------------------------------------------------

JUNK = st.one_of(st.booleans(), st.none(), st.floats(), st.text(max_size=3),
                 st.just([]), st.just({}), st.integers(-2**70, 2**70))
POW2 = st.integers(0, 15).map(lambda e: 1 << e)
DIM = st.one_of(POW2, st.integers(-2, 20), st.integers(2**31 - 2, 2**64 + 1), JUNK)
# Tiles that run on the softmax examples (16 x 16384 and 16 x 1024), drawn twice as often as the
# rest so that a fair share of the calls get as far as a simulation.
VALID_TILE = st.one_of(st.sampled_from([[1, 8192], [1, 16384], [2, 4096], [4, 1024], [1, 1024],
                                        (2, 1024), [16, 1024], [1, 512]]),
                       st.lists(POW2, min_size=2, max_size=2))
TILE = st.one_of(
    VALID_TILE, VALID_TILE, st.none(),
    st.sampled_from([[True, 8192], [1.0, 8192], [1, "8192"], [], [1], [1, 1, 8192], [0, 8192],
                     [-1, 8192], [1, 2**40]]),
    st.lists(DIM, max_size=3),
    JUNK)
LOOP = st.one_of(st.none(), st.integers(1, 16), st.integers(-2, 40),
                 st.sampled_from([2**24, 2**24 + 1, 2**63]), JUNK)
HARDWARE = st.one_of(st.none(), st.sampled_from(["ascend910b1", "ascend910b4", "", "no_such_chip",
                                                 "ascend910b1\x00x", " ", "../ascend910b1",
                                                 source("configs/hardware/ascend910b4.json"),
                                                 FILES]),
                     st.sampled_from(JUNK_FILES), st.text(max_size=6), st.integers(), st.booleans())
CONFIG_PATH = st.one_of(
    st.sampled_from([SOFTMAX, pathlib.Path(SOFTMAX), os.fsencode(SOFTMAX), SOFTMAX + "\x00x",
                     "", FILES, "/nonexistent/c.json", source("configs/hardware/ascend910b1.json"),
                     source("configs/pypto/example_graph.json")]),
    st.sampled_from(JUNK_FILES), st.integers(), st.none())
PARAM_KEYS = ["clock_mhz", "cores.aiv", "cores.aic", "ub.bytes", "ub.align_bytes",
              "dma.read.burst_cycles", "dma.read.peak_bytes_per_cycle", "gm.hbm_bandwidth_gbps",
              "l2.bytes", "vector.bytes_per_repeat", "vector.max_repeats",
              "scheduler.dispatch_cycles", "scheduler.poll_ns", "kernel.end_us",
              "kernel.vector_launch_us", "limits.max_tile_elements", "no.such.key", "", "=",
              "clock_mhz\x00"]
PARAM_VALUE = st.one_of(st.integers(-5, 5), st.integers(0, 2**40), st.floats(), JUNK)
PARAMS = st.one_of(
    st.none(),
    st.dictionaries(st.sampled_from(PARAM_KEYS), PARAM_VALUE, max_size=3),
    st.lists(st.builds(lambda k, v: f"{k}={v}", st.sampled_from(PARAM_KEYS), PARAM_VALUE),
             max_size=2),
    st.text(max_size=8))


@st.composite
def dict_configs(draw):
    """The softmax example as a dict with a few keys replaced by generated values."""
    cfg = {"op": "softmax", "shape": [16, 1024], "dtype": "fp32", "dim": 1, "tile": [1, 1024]}
    for key in draw(st.lists(st.sampled_from(["op", "shape", "dtype", "dim", "tile", "loop_count",
                                              "hardware", "junk"]), max_size=2, unique=True)):
        cfg[key] = draw(st.one_of(
            JUNK, st.sampled_from(["softmax", "exp", "amax", "fp16", "bf16", "int8", "matmul"]),
            st.lists(st.one_of(POW2, DIM), max_size=4)))
    return cfg


@CONTRACT
@given(config=st.one_of(st.just(SOFTMAX), dict_configs(), dict_configs(), CONFIG_PATH),
       tile=TILE, loop=LOOP)
def test_run_config_tile_loop(config, tile, loop):
    holds(lambda: tilesim.run(config, tile=tile, loop=loop), "config")


@CONTRACT
@given(tile=TILE, hardware=HARDWARE, params=PARAMS)
def test_run_hardware_and_params(tile, hardware, params):
    holds(lambda: tilesim.run(SOFTMAX, tile=tile, hardware=hardware, set=params), "hardware")


@settings(CONTRACT, max_examples=200)
@given(tiles=st.one_of(st.lists(VALID_TILE, min_size=1, max_size=3),
                      st.lists(TILE, min_size=1, max_size=3), JUNK),
       loops=st.one_of(st.lists(LOOP, max_size=2), JUNK),
       hardware=HARDWARE, params=PARAMS,
       jobs=st.one_of(st.sampled_from([0, 1, 2]), LOOP),
       objective=st.sampled_from([None, "gen_time_us", "kernel_time_us", "mte2_us", "energy", ""]))
def test_sweep_arguments(tiles, loops, hardware, params, jobs, objective):
    cfg = {"op": "softmax", "shape": [16, 1024], "dtype": "fp32", "dim": 1,
           "candidates": {"tiles": tiles}}
    if loops:
        cfg["candidates"]["loop_counts"] = loops
    holds(lambda: tilesim.sweep(cfg, jobs=jobs, hardware=hardware, set=params,
                                objective=objective), "hardware")


# ---- generated kernels -------------------------------------------------------------------------

UNARY = ["exp", "abs", "neg", "relu", "sqrt", "reciprocal", "log", "rsqrt"]
STEPS = st.one_of(
    st.tuples(st.just("unary"), st.sampled_from(UNARY)),
    st.tuples(st.just("scalar"), st.sampled_from(["add", "sub", "mul", "div", "maximum"]),
              st.one_of(st.floats(-4, 4),
                        st.sampled_from([0.0, float("nan"), float("-inf"), 10**400]))),
    st.tuples(st.just("self"), st.sampled_from(["add", "sub", "mul", "div", "minimum"])),
    st.tuples(st.just("reduce"), st.sampled_from(["sum", "amax", "amin"])))


def apply(steps, x):
    for step in steps:
        kind, name = step[0], step[1]
        if kind == "unary":
            x = getattr(pypto, name)(x)
        elif kind == "scalar":
            x = getattr(pypto, name)(x, step[2])
        elif kind == "self":
            x = getattr(pypto, name)(x, x)
        else:  # a row reduction broadcast back: x / sum(x, -1, keepdim)
            x = pypto.div(x, getattr(pypto, name)(x, -1, True))
    return x


@st.composite
def kernels(draw):
    """A traced elementwise/reduction chain over a (rows, cols) tensor, optionally in a loop over
    rows; its tile and loop count are generated too (some the tracer refuses)."""
    rows = draw(st.sampled_from([1, 2, 4, 8, 16]))
    cols = draw(st.sampled_from([16, 64, 256, 1024]))
    dtype = draw(st.sampled_from([pypto.DT_FP32, pypto.DT_FP16]))
    steps = draw(st.lists(STEPS, min_size=1, max_size=4))
    # Mostly tiles and loop counts that trace; one in four generated junk.
    tile = draw(st.tuples(st.sampled_from([1, 2, 4]), st.sampled_from([16, 64, 256]))
                if draw(st.integers(0, 3)) != 3 else st.lists(DIM, max_size=3).map(tuple))
    count = draw(st.sampled_from([None] + [c for c in (1, 2, 4) if c <= rows] + [3])
                 if draw(st.integers(0, 3)) != 3 else DIM)

    def body(x, y):
        pypto.set_vec_tile_shapes(*tile)
        if count is None:
            y[:] = apply(steps, x)
            return
        chunk = rows // count if isinstance(count, int) and count else 1
        for i in pypto.loop(count):
            xs = pypto.view(x, [chunk, cols], [i * chunk, 0])
            pypto.assemble(apply(steps, xs), [i * chunk, 0], y)

    def k(x: pypto.Tensor((rows, cols), dtype), y: pypto.Tensor((rows, cols), dtype)):
        body(x, y)

    # What was drawn rides along, so that a falsifying example shows the kernel.
    return pypto.jit(k), (rows, cols, steps, tile, count)


def traced(kernel):
    """The kernel traced, or None when the tracer refused it under the contract."""
    try:
        return kernel.trace()
    except pypto.UnsupportedError as e:
        assert str(e) and "\n" not in str(e), repr(str(e))
        event(f"trace refused: {str(e).split(': ')[1]}")
        return None


@CONTRACT
@given(kernel=kernels(), tile_shape=TILE, loop_count=LOOP)
def test_pypto_kernels_run(kernel, tile_shape, loop_count):
    tk = traced(kernel[0])
    if tk is None:
        return
    holds(tk.run)
    holds(lambda: tk.run(tile_shape=tile_shape, loop_count=loop_count))
    assert tk.to_json()


@settings(CONTRACT, max_examples=200)
@given(kernel=kernels(), tiles=st.one_of(st.just("auto"), st.none(),
                                          st.lists(TILE, min_size=1, max_size=3), JUNK),
       loop_counts=st.one_of(st.just("auto"), st.none(), st.lists(LOOP, max_size=3), JUNK),
       tile=st.one_of(st.none(), st.integers(0, 400), st.booleans(), st.text(max_size=3)),
       loop=st.one_of(st.none(), st.integers(0, 400), st.booleans(), st.text(max_size=3)))
def test_pypto_kernels_sweep(kernel, tiles, loop_counts, tile, loop):
    tk = traced(kernel[0])
    if tk is None:
        return
    res = holds(lambda: tk.sweep(tile=tile, loop=loop, tiles=tiles, loop_counts=loop_counts,
                                 jobs=1))
    if res is not None:
        assert isinstance(res.recommendation, str)
