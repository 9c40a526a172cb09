"""cmake --install into a prefix: the command runs a sweep from anywhere with the shipped configs
it installed, and the prefix's site-packages imports tilesim (and tilesim.pypto)."""
import glob
import os
import shutil
import subprocess
import sys

import pytest

from conftest import source


def test_cmake_install_into_a_prefix(tmp_path):
    build = os.environ.get("TILESIM_BUILD_DIR")
    if not build:
        pytest.skip("TILESIM_BUILD_DIR is not set (ctest sets it)")
    prefix = tmp_path / "prefix"
    p = subprocess.run(["cmake", "--install", build, "--prefix", str(prefix)], capture_output=True,
                       text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    exe = prefix / "bin" / "tilesim"
    assert (prefix / "share/tilesim/configs/hardware/ascend910b1.json").is_file()
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
