"""cmake --install into a prefix: the command runs a sweep from anywhere with the shipped configs
it installed, traces a PyPTO kernel file with the tracer it installed, and the prefix's
site-packages imports tilesim (and tilesim.pypto)."""
import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

from conftest import source


def assert_schemas_resolve(configs):
    """Every installed config's "$schema" (a path relative to it) names an installed schema."""
    named = 0
    for path in glob.glob(os.path.join(str(configs), "**", "*.json"), recursive=True):
        with open(path) as f:
            doc = json.load(f)
        if isinstance(doc, dict) and "$schema" in doc:
            target = os.path.join(os.path.dirname(path), doc["$schema"])
            assert os.path.isfile(target), (path, doc["$schema"])
            named += 1
    assert named > 100, named


def test_cmake_install_into_a_prefix(tmp_path):
    build = os.environ.get("TILESIM_BUILD_DIR")
    if not build:
        pytest.skip("TILESIM_BUILD_DIR is not set (ctest sets it)")
    prefix = tmp_path / "pre fix 'q'"
    p = subprocess.run(["cmake", "--install", build, "--prefix", str(prefix)], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    exe = prefix / "bin" / "tilesim"
    assert (prefix / "share/tilesim/configs/hardware/ascend910b1.json").is_file()
    assert_schemas_resolve(prefix / "share/tilesim/configs")
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(source("configs/sweeps/rule1_a_softmax_16x16384.json"), work / "sweep.json")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TILESIM_CONFIG_DIR")}
    p = subprocess.run([str(exe), "sweep", "sweep.json", "--hardware", "ascend910b4"], cwd=work,
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert "recommended:" in p.stdout and "ascend910b4" in p.stdout
    site = glob.glob(str(prefix / "lib/python3*/dist-packages"))
    assert len(site) == 1, site
    env["PYTHONPATH"] = site[0]
    p = subprocess.run([sys.executable, "-c", "import tilesim, tilesim.pypto; "
                        "print(tilesim.__file__)"], cwd=work, capture_output=True, text=True,
                       env=env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith(site[0])
    assert_schemas_resolve(os.path.join(site[0], "tilesim", "configs"))
    # python3 -m tilesim (the wheel's console script) runs the prefix's command
    p = subprocess.run([sys.executable, "-m", "tilesim", "--version"], cwd=work,
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0 and p.stdout.startswith("tilesim "), p.stderr
    # ../shared/hostile-t4 install_trace_pypto_from_prefix: the installed trace-pypto looked for
    # the module only in a build tree ("No module named 'tilesim'"). It finds its prefix's.
    (work / "k.py").write_text("import pypto\n\n@pypto.jit\ndef k(x: pypto.Tensor((16, 1024), "
                               "pypto.DT_FP32), y: pypto.Tensor((16, 1024), pypto.DT_FP32)):\n"
                               "    pypto.set_vec_tile_shapes(1, 1024)\n    y[:] = pypto.exp(x)\n")
    del env["PYTHONPATH"]
    p = subprocess.run([str(exe), "trace-pypto", "k.py", "--json", "p.json"], cwd=work,
                       capture_output=True, text=True, env=env)
    assert p.returncode == 0, p.stderr
    assert "the program is in p.json" in p.stdout and (work / "p.json").is_file()
