"""tilesim.pypto as users meet it: the examples as scripts, `tilesim trace-pypto` on a kernel file
that imports pypto unchanged, and the module from an installed package (pip install .)."""
import glob
import json
import os
import subprocess
import sys
import textwrap

import pytest

from conftest import source

EXAMPLES = sorted(glob.glob(source("examples/pypto/*.py")))


def test_five_examples_ship():
    names = {os.path.basename(p) for p in EXAMPLES}
    assert {"softmax_16x16384.py", "amax_16x256x256.py", "groupnorm_16x64x256x256.py",
            "rmsnorm_rope_1x11x16x128.py", "matmul_bias_relu_2048x4096x2048.py"} <= names


@pytest.mark.parametrize("path", EXAMPLES, ids=os.path.basename)
def test_example_prints_its_recommendation(path):
    p = subprocess.run([sys.executable, path], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "tilesim recommends for " in p.stdout
    last = p.stdout.rstrip().splitlines()[-1]
    assert (f"{os.path.basename(path)}:" in last and "pypto." in last) or "change nothing" in last


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


def test_installed_package_imports_tilesim_pypto(tmp_path):
    build = os.environ.get("TILESIM_BUILD_DIR")
    if not build:
        pytest.skip("TILESIM_BUILD_DIR is not set (ctest sets it)")
    wheels = tmp_path / "wheels"
    # pip builds through meson-python (pyproject.toml), reusing the CMake build tree.
    p = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps",
                        "--no-index", "-w", str(wheels), source("."),
                        f"--config-settings=setup-args=-Dcmake_build_dir={build}"],
                       capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stdout + p.stderr
    site = tmp_path / "site"
    p = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index",
                        "--target", str(site), *glob.glob(str(wheels / "*.whl"))],
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
