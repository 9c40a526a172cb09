"""Board profiles in from Python go through the C++ readers' registry
(tools/calibration/profile_import.hpp): the readers the CLI has a ``measurements from-<name>``
for, each run by name, and an unknown name or input refused naming what there is."""
import json
import warnings

import pytest

import tilesim
from tilesim import _core
from conftest import source

BOARD = source("configs/measurements/board/")


def test_the_readers_are_the_clis_subcommands(cli):
    assert _core.profile_readers() == ["msprof", "swimlane"]
    help_text = cli("measurements", "--help").stdout
    for name in _core.profile_readers():
        assert "from-" + name in help_text


def test_a_reader_runs_by_name_as_its_function_runs_it():
    csv, mapping = BOARD + "relu_op_summary.csv", BOARD + "relu_msprof_map.json"
    imp = _core.measurements_from("msprof", {"csv": [csv], "map": [mapping]}, "calibrate", [], "")
    with warnings.catch_warnings(record=True):  # the AI_CPU MemSet row matches no kernel
        warnings.simplefilter("always")
        assert json.loads(imp.json) == tilesim.measurements_from_msprof(csv, mapping).to_dict()
    assert "match no kernel" in imp.warnings[0]
    with pytest.raises(tilesim.ConfigError, match="profile reader 'nope': allowed msprof, swimlane"):
        _core.measurements_from("nope", {}, "calibrate", [], "")
    with pytest.raises(tilesim.ConfigError,
                       match=r"profile reader msprof: unknown input 'csvs' \(allowed: csv, map\)"):
        _core.measurements_from("msprof", {"csvs": [csv]}, "calibrate", [], "")
