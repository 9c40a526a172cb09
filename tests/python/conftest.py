"""Shared fixtures: the source tree, the CLI binary built beside the module, and a runner that
gives the CLI's output for the same input (the module must match it)."""
import json
import os
import subprocess

import matplotlib
import pytest

matplotlib.use("Agg")

SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def source(rel):
    return os.path.join(SOURCE, rel)


@pytest.fixture(scope="session")
def cli():
    binary = os.environ.get("TILESIM_BINARY")
    if not binary:
        pytest.skip("TILESIM_BINARY is not set (ctest sets it)")

    def run(*args, code=0):
        p = subprocess.run([binary, *map(str, args)], capture_output=True, text=True)
        assert p.returncode == code, p.stderr
        return p

    def run_json(*args):
        return json.loads(run(*args, "--json", "-").stdout)

    run.json = run_json
    return run
