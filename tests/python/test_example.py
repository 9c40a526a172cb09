"""The notebook-style example in examples/ runs from start to end."""
import os
import subprocess
import sys

from conftest import source


def test_example_runs(tmp_path):
    env = dict(os.environ, MPLBACKEND="Agg", TILESIM_EXAMPLE_OUT=str(tmp_path))
    p = subprocess.run([sys.executable, source("examples/python_sweep.py")], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "recommended:" in p.stdout
    for name in ("u_curve.png", "heat_map.png", "timeline.png"):
        assert (tmp_path / name).stat().st_size > 0
