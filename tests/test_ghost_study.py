"""benchmarks/ghost_study.py: the edge-matching ghost test on scenes whose answer is known."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from motiondetect import filters
from motiondetect.evaluation.tuning import score_config
from motiondetect.pipeline.config import build_filters, load_config
from motiondetect.pipeline.detector import MotionDetector
from tests.helpers import make_folder

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def study():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        return importlib.import_module("ghost_study")
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def _texture(shape=(96, 128), seed=3) -> np.ndarray:
    """A sharp, textured background: 8-pixel checks of random grey levels 60..200."""
    rng = np.random.default_rng(seed)
    checks = rng.integers(60, 200, (shape[0] // 8 + 1, shape[1] // 8 + 1), dtype=np.uint8)
    return cv2.resize(checks, (checks.shape[1] * 8, checks.shape[0] * 8), interpolation=cv2.INTER_NEAREST)[: shape[0], : shape[1]]


def _square(shape=(96, 128), top=30, left=40, size=30) -> np.ndarray:
    mask = np.zeros(shape, np.uint8)
    mask[top : top + size, left : left + size] = 255
    return mask


def test_a_left_objects_ghost_is_found_and_a_still_object_is_not(study):
    background, square = _texture(), _square()
    with_object = background.copy()
    with_object[square > 0] = 20  # a dark object, sharp outline
    # The ghost: the mean still holds the object, the frame shows the background.
    ghost = study.ghost_pixels(background, background, with_object, square, ratio=1.0, stillness=0.5)
    assert ghost[square > 0].all() and not ghost[square == 0].any()
    # An object standing still: the frame holds it, the mean the background.
    still = study.ghost_pixels(with_object, with_object, background, square, ratio=1.0, stillness=0.5)
    assert not still.any()


def test_a_smooth_object_over_a_sharp_scene_is_kept_by_the_stillness_only(study):
    """Leaves close to the lens: out of focus, less gradient at their border than the scene behind
    them that the mean holds, so the edge test alone calls them ghosts; they move, so the
    stillness keeps them."""
    background, square = _texture(), _square()

    def leaf_at(left: int) -> np.ndarray:
        frame = background.copy()
        leaf = cv2.GaussianBlur(_square(left=left), (0, 0), 3).astype(np.float32) / 255
        return (frame * (1 - leaf) + 128 * leaf).astype(np.uint8)

    frame = leaf_at(40)
    assert study.ghost_pixels(frame, frame, background, square, ratio=1.0, stillness=0.5).any()  # still: a "ghost"
    # It moved 6 pixels since the last test: kept.
    assert not study.ghost_pixels(frame, leaf_at(34), background, square, ratio=1.0, stillness=0.5).any()


def test_small_blobs_and_an_empty_mask_are_not_tested(study):
    background = _texture()
    small = _square(size=3)
    with_object = background.copy()
    with_object[small > 0] = 20
    assert not study.ghost_pixels(background, background, with_object, small, ratio=1.0, stillness=0.5).any()
    empty = np.zeros_like(background)
    assert not study.ghost_pixels(background, background, background, empty, ratio=1.0, stillness=0.5).any()


def test_settings_parse_and_refuse_in_one_line(study):
    assert study.Setting.parse("off") is None
    assert str(study.Setting.parse("1.5/3/0.5/8")) == "1.5/3/0.5/8"
    with pytest.raises(ValueError, match="ratio/checks/stillness/lag .* got '1/3'"):
        study.Setting.parse("1/3")


def _ghost_scene(count=60, leaves=30, seed=5):
    """Noisy BGR frames of a textured scene (+-1 grey level: a pixel repeats its grey level 7
    frames in a row too rarely for the still absorption to clear a ghost) where a dark object stands for ``leaves`` frames, through
    the bootstrap's median, then is gone."""
    rng = np.random.default_rng(seed)
    background = cv2.cvtColor(_texture((240, 320)), cv2.COLOR_GRAY2BGR).astype(np.int16)
    frames = []
    for i in range(count):
        frame = background.copy()
        if i < leaves:
            frame[100:160, 140:190] = (30, 40, 50)
        frame += rng.integers(-1, 2, frame.shape, dtype=np.int16)
        frames.append(np.clip(frame, 0, 255).astype(np.uint8))
    return frames


def _motion(frames, setting, study, monkeypatch) -> list[float]:
    monkeypatch.setattr(study.GhostTestedBackground, "SETTING", setting)
    monkeypatch.setitem(filters.REGISTRY, "gaussian_background", study.GhostTestedBackground)
    detector = MotionDetector(build_filters(load_config(None)), annotate=False)
    return [float((detector.process(f).mask > 0).mean()) for f in frames]


def test_the_model_with_the_test_clears_a_ghost_the_default_keeps(study, monkeypatch):
    frames = _ghost_scene()
    default = _motion(frames, None, study, monkeypatch)
    tested = _motion(frames, study.Setting(1.0, 3, 0.5, 0), study, monkeypatch)
    lagged = _motion(frames, study.Setting(1.0, 3, 0.5, 8), study, monkeypatch)
    object_share = 60 * 50 / (240 * 320)
    # The default keeps the ghost to the end; the test clears it a few frames after the object left.
    assert min(default[45:]) > 0.5 * object_share
    assert max(tested[40:]) == 0.0 and max(lagged[48:]) == 0.0
    assert max(lagged[30:38]) > 0.5 * object_share  # the lag: flagged until the decision is applied
    # Before the object leaves, all three agree (nothing is a ghost yet).
    assert default[:30] == tested[:30] == lagged[:30]


def test_the_study_prints_each_setting_and_the_held_out_choice_and_off_is_the_default(study, tmp_path, capsys):
    clips = [make_folder(tmp_path / name, count=count, first=first)[0] for name, first, count in (("one", 100, 14), ("two", 300, 16))]
    args = [*map(str, clips), "--settings", "off,1/3/0.5/0", "--jobs", "1", "--skip", "4"]
    assert study.main(args) == 0
    text = capsys.readouterr().out
    assert "| off | " in text and "| 1/3/0.5/0 | " in text and "leave-one-clip-out: held out" in text
    # The 'off' column is the default pipeline's pixel F, as tuning scores it in this process.
    config = load_config(None)
    for clip in clips:
        row = next(line for line in text.splitlines() if line.startswith(f"| {clip.name} | "))
        off = float(row.split("|")[2])
        assert off == pytest.approx(score_config(str(clip), config, 4, config["events"]["min_area"])["pixel_f"], abs=5e-4)
    assert study.main([*map(str, clips), "--settings", "1/3"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "ratio/checks/stillness/lag" in err
