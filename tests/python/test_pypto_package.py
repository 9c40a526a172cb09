"""tilesim.pypto as users meet it: the examples as scripts, `tilesim trace-pypto` on a kernel file
that imports pypto unchanged, and the module from an installed package (pip install .)."""
import glob
import json
import os
import shutil
import subprocess
import sys
import textwrap

import pytest

from conftest import source

EXAMPLES = sorted(glob.glob(source("examples/pypto/*.py")))


def test_the_examples_ship():
    names = {os.path.basename(p) for p in EXAMPLES}
    assert {"softmax_16x16384.py", "amax_16x256x256.py", "groupnorm_16x64x256x256.py",
            "rmsnorm_rope_1x11x16x128.py", "matmul_bias_relu_2048x4096x2048.py",
            "trace_a_port.py"} <= names


@pytest.mark.parametrize("path", EXAMPLES, ids=os.path.basename)
def test_example_prints_its_recommendation(path):
    p = subprocess.run([sys.executable, path], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "tilesim recommends for " in p.stdout
    # the recommendation's lines to paste (or "change nothing"), then its notes
    told = [line for line in p.stdout.rstrip().splitlines() if not line.startswith("  note: ")]
    last = told[-1]
    assert ("pypto." in last and ".py:" in last) or "change nothing" in last


KERNEL = textwrap.dedent("""\
    import pypto

    @pypto.jit
    def scale(x: pypto.Tensor((64, 1024), pypto.DT_FP16),
              y: pypto.Tensor((64, 1024), pypto.DT_FP16)):
        pypto.set_vec_tile_shapes(8, 1024)
        y[:] = x * 0.5
    """)


def test_trace_pypto_writes_the_program_both_ways(tmp_path, cli):
    kernel = tmp_path / "scale.py"
    kernel.write_text(KERNEL)
    out = tmp_path / "scale.json"
    cli("trace-pypto", kernel, "--json", out)
    program = json.loads(out.read_text())
    assert program["program"] == "scale"
    assert program["body"][1] == {"op": "mul", "inputs": ["x"], "out": "y", "scalar": 0.5}
    p = subprocess.run([sys.executable, "-m", "tilesim.pypto", str(kernel), "--json", "-"],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout) == program
    assert "program:scale" in cli("run", out).stdout


def test_trace_pypto_refuses_with_the_kernel_line(tmp_path, cli):
    kernel = tmp_path / "bad.py"
    kernel.write_text(KERNEL.replace("x * 0.5", "pypto.sin(x)"))
    p = cli("trace-pypto", kernel, "--json", tmp_path / "o.json", code=2)
    assert f"{kernel}:7: pypto.sin: not in the PyPTO surface" in p.stderr
    assert not (tmp_path / "o.json").exists()
    p = cli("trace-pypto", tmp_path / "none.py", "--json", tmp_path / "o.json", code=2)
    assert "none.py: no such file" in p.stderr


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel `pip wheel .` builds (through meson-python, pyproject.toml), reusing the CMake
    build tree."""
    build = os.environ.get("TILESIM_BUILD_DIR")
    if not build:
        pytest.skip("TILESIM_BUILD_DIR is not set (ctest sets it)")
    wheels = tmp_path_factory.mktemp("wheels")
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
                        "--no-index", "-w", str(wheels), source("."),
                        f"--config-settings=setup-args=-Dcmake_build_dir={build}"],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    found = glob.glob(str(wheels / "*.whl"))
    assert len(found) == 1, found
    return found[0]


def test_installed_package_imports_tilesim_pypto(tmp_path, wheel):
    site = tmp_path / "site"
    p = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                        "--target", str(site), wheel],
                       capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    kernel = tmp_path / "scale.py"
    kernel.write_text(KERNEL.replace("import pypto", "import tilesim.pypto as pypto") + textwrap.dedent("""\
        import tilesim
        assert tilesim.__file__.startswith(%r), tilesim.__file__
        print(scale.trace().sweep(tiles=[[8, 1024], [1, 1024]]).recommendation)
        """ % str(site)))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TILESIM_CONFIG_DIR")}
    env["PYTHONPATH"] = str(site)
    p = subprocess.run([sys.executable, str(kernel)], capture_output=True, text=True, env=env,
                       cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "tilesim recommends for scale" in p.stdout


def test_the_wheel_installs_the_tilesim_command_in_a_venv(tmp_path, wheel):
    """The README's offline install: a venv over Debian's packages (--system-site-packages), pip
    installing the wheel; its `tilesim` command runs from anywhere with the package's configs and
    traces a kernel file with the venv's python3."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", "--without-pip",
                    str(venv)], check=True)
    p = subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "--no-deps",
                        "--no-index", wheel], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "TILESIM_CONFIG_DIR", "TILESIM_PYTHON3")}
    work = tmp_path / "work"
    work.mkdir()

    def run(*args):
        return subprocess.run([str(venv / "bin/tilesim"), *map(str, args)], cwd=work,
                              capture_output=True, text=True, env=env)

    p = run("--version")
    assert p.returncode == 0 and p.stdout.startswith("tilesim "), p.stdout + p.stderr
    # the package's configs name their JSON Schemas, installed beside them
    sweep = glob.glob(str(venv / "lib/python3*/site-packages/tilesim/configs/sweeps/"
                          "rule1_a_softmax_16x16384.json"))
    assert len(sweep) == 1, sweep
    schema = json.loads(open(sweep[0]).read())["$schema"]
    assert os.path.isfile(os.path.join(os.path.dirname(sweep[0]), schema)), schema
    shutil.copy(source("configs/sweeps/rule1_a_softmax_16x16384.json"), work / "sweep.json")
    p = run("sweep", "sweep.json", "--hardware", "ascend910b4")
    assert p.returncode == 0 and "ascend910b4" in p.stdout, p.stderr
    (work / "scale.py").write_text(KERNEL)
    p = run("trace-pypto", "scale.py", "--json", "scale.json")
    assert p.returncode == 0, p.stderr
    assert json.loads((work / "scale.json").read_text())["program"] == "scale"


def test_python_m_tilesim_runs_the_command_built_beside_the_module():
    # PYTHONPATH=build/python (as ctest runs it): build/tools/tilesim
    p = subprocess.run([sys.executable, "-m", "tilesim", "--version"], capture_output=True,
                       text=True)
    assert p.returncode == 0 and p.stdout.startswith("tilesim "), p.stdout + p.stderr


# ---- ../shared/hostile-t4 (issue 50): trace-pypto keeps the contract every command keeps ----

def _binary():
    binary = os.environ.get("TILESIM_BINARY")
    if not binary:
        pytest.skip("TILESIM_BINARY is not set (ctest sets it)")
    return binary


def _refused(p, *needles):
    """Exit 2 with one line on stderr, "tilesim: error: ...", holding each needle."""
    assert p.returncode == 2, p.stderr
    lines = p.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("tilesim: error: "), p.stderr
    for n in needles:
        assert n in lines[0], p.stderr


# tp_json_over_kernel_file: `--json k.py` replaced the kernel source with the program, exit 0.
def test_trace_pypto_never_writes_over_its_kernel_file(tmp_path, cli):
    kernel = tmp_path / "k.py"
    kernel.write_text(KERNEL)
    for out in (kernel, f"{tmp_path}/./k.py"):
        _refused(cli("trace-pypto", kernel, "--json", out, code=2), "is the command's own input")
        assert kernel.read_text() == KERNEL


# tp_kernel_crash_internal_error, tp_kernel_exit_2_no_message, tp_sys_exit_0_nothing_written:
# a kernel file that crashed was "internal error" (exit 3); sys.exit(2) was exit 2 with no message;
# sys.exit(0) and os._exit(0) were exit 0 with nothing written. Each way a kernel file can fail is
# one line naming it, exit 2, the old output kept.
@pytest.mark.parametrize("source, needle", [
    ("import ctypes\nctypes.string_at(0)\n", "python3 died of SIGSEGV while running the kernel"),
    ("import os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n", "died of SIGKILL"),
    ("import sys\nsys.exit(2)\n", "k.py:2: the kernel file called sys.exit(2)"),
    ("import sys\nsys.exit('bye')\n", "called sys.exit('bye')"),
    ("import sys\nsys.exit(0)\n" + KERNEL, "k.py:2: the kernel file called sys.exit(0) before"),
    ("import os\nos._exit(0)\n", "the kernel file ended python3 (exit 0) before any kernel"),
    ("raise KeyboardInterrupt\n", "k.py:1: the kernel file raised KeyboardInterrupt"),
    ("x = 1\nraise ValueError('a\\nb\\x1b[2J')\n", "k.py:2: the kernel file raised ValueError: "
                                                   "a\\nb\\x1b[2J"),
    ("def f(:\n", "k.py:1: the kernel file is not valid Python"),
    ("x = bytearray(1 << 40)\n", "k.py:1: the kernel file ran out of memory"),
    ("x = 1\n", "k.py: no @pypto.jit kernel found"),
], ids=["segv", "sigkill", "exit2", "exit_text", "exit0", "os_exit0", "interrupt", "raise",
        "syntax", "memory", "no_kernel"])
def test_each_way_a_kernel_file_fails_is_one_line(tmp_path, cli, source, needle):
    kernel = tmp_path / "k.py"
    kernel.write_text(source)
    out = tmp_path / "p.json"
    out.write_text("OLD")
    _refused(cli("trace-pypto", kernel, "--json", out, code=2), str(kernel), needle)
    assert out.read_text() == "OLD"


# tp_output_path_traceback: an output path that cannot be written printed a Python traceback
# blaming the kernel file. tp_full_fs_destroys_old_output: a full disk left a 4 KB fragment in
# place of the old program (here the disk fills by a file-size limit).
def test_an_unwritable_output_is_one_line_and_the_old_file_stays(tmp_path, cli):
    import resource
    import signal

    kernel = tmp_path / "k.py"
    kernel.write_text(KERNEL)
    for out, why in ((tmp_path / "nodir/p.json", "No such file or directory"),
                     (tmp_path, "Is a directory"), ("/dev/full", "No space left on device")):
        _refused(cli("trace-pypto", kernel, "--json", out, code=2),
                 f"{out}: cannot write the program: {why}")
    old = tmp_path / "p.json"
    old.write_text('{"program": "OLD"}')

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100))

    p = subprocess.run([_binary(), "trace-pypto", str(kernel), "--json", str(old)],
                       capture_output=True, text=True, preexec_fn=small_files)
    _refused(p, f"{old}: cannot write the program")
    assert old.read_text() == '{"program": "OLD"}'
    assert sorted(f.name for f in tmp_path.iterdir()) == ["k.py", "p.json"]  # no temporary


# tp_main_json_stdout_not_json: with --json -, the kernel file's own prints (an example's table
# under --main) came first on stdout. They go to stderr; stdout is the program alone.
def test_json_to_stdout_carries_only_the_program(tmp_path, cli):
    kernel = tmp_path / "k.py"
    kernel.write_text("import os\nprint('hello')\nos.write(1, b'raw\\n')\n" + KERNEL +
                      "if __name__ == '__main__':\n    print('main')\n")
    p = cli("trace-pypto", kernel, "--main", "--json", "-")
    assert json.loads(p.stdout)["program"] == "scale"
    assert "hello" in p.stderr and "raw" in p.stderr and "main" in p.stderr


# tp_sigterm_leaves_tracer_running: SIGTERM stopped tilesim, but its tracer ran on and wrote the
# output 2 s after "no output file written". The tracer dies with the command.
def test_a_stop_signal_stops_the_tracer_too(tmp_path):
    import signal
    import time

    kernel = tmp_path / "k.py"
    kernel.write_text("import os, time\nopen(%r, 'w').write(str(os.getpid()))\ntime.sleep(30)\n"
                      % str(tmp_path / "pid") + KERNEL)
    out = tmp_path / "p.json"
    out.write_text("OLD")
    p = subprocess.Popen([_binary(), "trace-pypto", str(kernel), "--json", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 20
    while not (tmp_path / "pid").exists() or not (tmp_path / "pid").read_text():
        assert time.monotonic() < deadline and p.poll() is None
        time.sleep(0.02)
    tracer = int((tmp_path / "pid").read_text())
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=10)
    assert p.returncode == 128 + signal.SIGTERM, err
    assert "no output file written" in err
    time.sleep(0.2)
    try:
        with open(f"/proc/{tracer}/status") as f:
            assert "State:\tZ" in f.read()  # gone; a zombie only where nothing reaps it
    except FileNotFoundError:
        pass
    assert out.read_text() == "OLD"


def test_the_tracer_is_bounded_in_time_and_memory(tmp_path, cli):
    kernel = tmp_path / "k.py"
    kernel.write_text("while True:\n    pass\n")
    _refused(cli("trace-pypto", kernel, "--json", tmp_path / "p.json", "--timeout", "0.3",
                 code=2), "ran longer than --timeout 0.3 s")
    kernel.write_text("x = bytearray(200 << 20)\n")
    _refused(cli("trace-pypto", kernel, "--json", tmp_path / "p.json", "--max-memory", "100",
                 code=2), "ran out of memory")
    for bad in (["--timeout", "0"], ["--timeout", "nan"], ["--max-memory", "1"]):
        assert cli("trace-pypto", kernel, "--json", "-", *bad, code=2).stderr


# tp_loop_2p24_tracer_memory: pypto.loop(2**24) cost 1.15 GB and 6.6 s (a set of every index);
# 10**9 was killed. The loop check takes four iterations whatever the count; beyond a program's
# 2^24 the loop is refused.
def test_loop_checks_cost_nothing_in_the_trip_count(tmp_path, cli):
    loop = textwrap.dedent("""\
        import pypto
        N = %d
        @pypto.jit
        def k(x: pypto.Tensor((N, 8), pypto.DT_FP32), y: pypto.Tensor((N, 8), pypto.DT_FP32)):
            pypto.set_vec_tile_shapes(1, 8)
            for i in pypto.loop(N):
                xv = pypto.view(x, [1, 8], [i, 0])
                pypto.assemble(pypto.exp(xv), [i, 0], y)
        """)
    kernel = tmp_path / "k.py"
    kernel.write_text(loop % (1 << 24))
    cli("trace-pypto", kernel, "--json", tmp_path / "p.json", "--max-memory", "256",
        "--timeout", "20")
    assert json.loads((tmp_path / "p.json").read_text())["body"][1]["loop_count"] == 1 << 24
    kernel.write_text(loop % 10**9)
    _refused(cli("trace-pypto", kernel, "--json", tmp_path / "p.json", "--max-memory", "256",
                 code=2), "k.py:6: pypto.loop", "loop_count is 1..16777216")
