"""Threshold sweeps (``evaluate --plot``): each point is the evaluation of the config with that
threshold, recall falls as a frame-pair threshold rises, and the command draws one panel per clip."""

from __future__ import annotations

import copy
from pathlib import Path

import cv2
import numpy as np
import pytest
from helpers import make_folder, one_line_error, run_cli

from motiondetect.core.errors import UsageError
from motiondetect.evaluation.scoring import detector_method, evaluate, load_folder
from motiondetect.evaluation.sweep import THRESHOLDS, sweep, threshold_axis
from motiondetect.pipeline.config import build_filters, default_config, load_config
from motiondetect.pipeline.detector import MotionDetector

SEED = load_config(Path(__file__).resolve().parent.parent / "configs" / "seed.yaml")


@pytest.fixture
def noisy_clips(tmp_path):
    """Two clips of the moving square under sensor-like noise, so the threshold matters."""
    rng = np.random.default_rng(7)
    roots = []
    for name, first in (("left", 100), ("right", 300)):
        root, frames, _ = make_folder(tmp_path / name, count=16, first=first)
        for i, frame in enumerate(frames):
            noisy = np.clip(frame.astype(np.int16) + rng.normal(0, 9, frame.shape).round().astype(np.int16), 0, 255).astype(np.uint8)
            cv2.imwrite(str(root / "input" / f"in{first + i:06d}.png"), noisy)
        roots.append(root)
    return roots


def test_each_point_is_the_evaluation_of_the_config_at_that_threshold(noisy_clips):
    axis, curves = sweep([str(r) for r in noisy_clips], SEED, skip=2, min_area=0.001)
    assert axis == ("threshold", "threshold")
    for root in noisy_clips:
        points = curves[str(root)]
        assert [p[0] for p in points] == THRESHOLDS["threshold"][1]  # 25, the config's own, is already among them
        for value, precision, recall, f_measure in points[::3]:
            config = copy.deepcopy(SEED)
            next(e for e in config["pipeline"] if e["filter"] == "threshold")["threshold"] = value
            method = detector_method(MotionDetector(build_filters(config), annotate=False))
            ((_, scorer),) = evaluate(load_folder(root), [method], skip=2, min_area=0.001).scores
            assert (precision, recall) == (scorer.pixel.precision, scorer.pixel.recall)
            assert f_measure == scorer.pixel.f_measure


def test_recall_never_rises_with_a_frame_pair_threshold(noisy_clips):
    """A higher threshold keeps a subset of the differing pixels and erosion keeps subsets: the
    true positives, hence the recall, cannot grow."""
    _, curves = sweep([str(noisy_clips[0])], SEED, skip=2, min_area=0.001, jobs=2)
    recalls = [recall for _, _, recall, _ in curves[str(noisy_clips[0])]]
    assert all(b <= a for a, b in zip(recalls, recalls[1:])) and recalls[0] > recalls[-1]


def test_the_default_pipeline_sweeps_its_sigmas_and_keeps_its_own_value():
    config = default_config()
    next(e for e in config["pipeline"] if e["filter"] == "gaussian_background")["sigmas"] = 2.75
    axis, values = threshold_axis(config)
    assert axis == ("gaussian_background", "sigmas") and 2.75 in values and values == sorted(values)


def test_a_pipeline_without_a_threshold_is_refused():
    with pytest.raises(UsageError, match="--plot sweeps the threshold of"):
        threshold_axis({"pipeline": [{"filter": "gray"}, {"filter": "running_average"}]})


def test_evaluate_plot_draws_one_panel_per_clip(noisy_clips, tmp_path, monkeypatch, capsys):
    pytest.importorskip("matplotlib")
    from motiondetect.outputs.plot import PANEL_SIZE, PANEL_TITLE_HEIGHT

    seed = Path(__file__).resolve().parent.parent / "configs" / "seed.yaml"
    rc, out, err = run_cli(monkeypatch, capsys, tmp_path, "evaluate", *noisy_clips, "-c", seed, "--skip", "2", "--plot", "pr.png", "-q")
    assert rc == 0, err
    picture = cv2.imread(str(tmp_path / "pr.png"))
    assert picture.shape[:2] == (PANEL_SIZE[1] + PANEL_TITLE_HEIGHT, 2 * PANEL_SIZE[0])
    assert "left" in out and "right" in out  # the tables still print


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--plot", "pr.jpg"], "--plot 'pr.jpg': expected a .png file name"),
        (["--jobs", "2"], "--jobs only apply with --loo or --plot"),
    ],
)
def test_evaluate_plot_refusals(noisy_clips, tmp_path, monkeypatch, capsys, argv, message):
    rc, _, err = run_cli(monkeypatch, capsys, tmp_path, "evaluate", noisy_clips[0], *argv)
    assert rc == 2 and message in one_line_error(err)
