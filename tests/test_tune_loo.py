"""benchmarks/tune_loo.py on hand-made CDnet folders: the grid, the cache and the LOO table."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

import pytest

from tests.helpers import make_folder

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def tune_loo():
    # Imported by name (not from a file spec) so the worker processes can unpickle its functions.
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        yield importlib.import_module("tune_loo")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_config_for_sets_only_the_named_parameters(tune_loo):
    from motiondetect.config import default_config

    config = tune_loo.config_for({("median", "kernel_size"): 3, ("gaussian_background", "sigmas"): 2.5})
    base = default_config()
    changed = [(a, b) for a, b in zip(base["pipeline"], config["pipeline"]) if a != b]
    assert changed == [
        ({**base["pipeline"][2]}, {**base["pipeline"][2], "sigmas": 2.5}),
        ({**base["pipeline"][3]}, {**base["pipeline"][3], "kernel_size": 3}),
    ]


def test_grid_run_cache_and_table(tune_loo, tmp_path, capsys):
    clips = [str(make_folder(tmp_path / name, count=14, first=first)[0]) for name, first in (("one", 100), ("two", 300), ("three", 500))]
    grid = {("gaussian_background", "sigmas"): [2.5, 3.0], ("median", "kernel_size"): [3, 5]}
    cache = tmp_path / "cache.json"
    results, points = tune_loo.run(clips, grid, jobs=1, cache_path=cache, skip=4, min_area=0.001)
    assert len(points) == 4 and set(results) == {"one", "two", "three"}
    for clip in results.values():
        assert set(clip) == {"anchors", *(tune_loo.point_key(p) for p in points)}
        assert all(0.0 <= v["pixel_f"] <= 1.0 for k, v in clip.items() if k != "anchors")
    # The cache holds everything: a second run computes nothing.
    stored = json.loads(cache.read_text())
    capsys.readouterr()
    again, _ = tune_loo.run(clips, grid, jobs=1, cache_path=cache, skip=4, min_area=0.001)
    assert "0 runs to do" in capsys.readouterr().out and again == results and json.loads(cache.read_text()) == stored
    text = tune_loo.table(results, points)
    lines = text.splitlines()
    assert [line.split()[0] for line in lines[1:4]] == ["one", "two", "three"]
    assert any(line.strip().startswith("leave-one-clip-out") for line in lines)
    assert any(line.strip().startswith("OpenCV KNN + median 5x5") for line in lines)
    # Each clip's row shows the parameters leave_one_out chose without it, and their scores.
    from motiondetect.evaluate import leave_one_out

    keys = [tune_loo.point_key(p) for p in points]
    chosen = leave_one_out({c: {k: results[c][k]["pixel_f"] for k in keys} for c in results})
    for line, clip in zip(lines[1:4], results):
        assert tune_loo._short(chosen[clip]) in line
        assert f"{results[clip][chosen[clip]]['pixel_f']:.3f}" in line
    votes = lines[-1].split(": ", 1)[1].split("; ")
    assert sum(int(v.rsplit(" x", 1)[1]) for v in votes) == 3
