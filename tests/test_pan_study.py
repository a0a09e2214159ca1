"""benchmarks/pan_study.py: the panned copies of a clip it scores (a camera turning to a new view)."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from tests.helpers import benchmark_module, make_folder


@pytest.fixture(scope="module")
def study():
    return benchmark_module("pan_study")


def test_the_crop_waits_for_the_middle_frame_then_slides_over_the_ramp_and_stays(study):
    assert [study.offset(i, 4, 12, 3) for i in range(9)] == [0, 0, 0, 0, 4, 8, 12, 12, 12]


def test_a_panned_clip_is_the_same_window_of_every_frame_label_and_roi(study, tmp_path):
    roi = np.full((36, 48), 255, np.uint8)
    roi[:, 40:] = 0  # the camera's right edge is outside the region of interest
    src, frames, labels = make_folder(tmp_path / "clip", count=12, temporal=(100, 111), roi=roi)
    dst = study.panned(src, tmp_path / "panned", crop=0.25, share=0.25, ramp=3)
    assert (dst / "temporalROI.txt").read_text() == "100 111"
    offsets = [study.offset(i, 6, 12, 3) for i in range(12)]
    assert offsets[5:10] == [0, 4, 8, 12, 12]
    for i, x0 in enumerate(offsets):
        image = cv2.imread(str(dst / "input" / f"in{100 + i:06d}.png"), cv2.IMREAD_COLOR)
        label = cv2.imread(str(dst / "groundtruth" / f"gt{100 + i:06d}.png"), cv2.IMREAD_GRAYSCALE)
        assert np.array_equal(image, frames[i][:, x0 : x0 + 36]) and np.array_equal(label, labels[i][:, x0 : x0 + 36])
    # One ROI for the whole clip: the pixels inside it in every view (columns 40.. leave at x0 4).
    kept = cv2.imread(str(dst / "ROI.bmp"), cv2.IMREAD_GRAYSCALE)
    assert kept.shape == (36, 36) and (kept[:, :28] == 255).all() and (kept[:, 28:] == 0).all()


def test_the_fixed_case_never_moves(study, tmp_path):
    src, frames, _ = make_folder(tmp_path / "clip", count=8)
    dst = study.panned(src, tmp_path / "fixed", crop=0.25, share=0.0, ramp=3)
    for i, frame in enumerate(frames):
        assert np.array_equal(cv2.imread(str(dst / "input" / f"in{100 + i:06d}.png"), cv2.IMREAD_COLOR), frame[:, :36])


def _view(panorama: np.ndarray, x0: int, rng) -> np.ndarray:
    """The camera's 320-pixel-wide view of ``panorama`` from column ``x0``, BGR, +-1 level of noise."""
    view = panorama[:, x0 : x0 + 320].astype(np.int16) + rng.integers(-1, 2, (240, 320), dtype=np.int16)
    return cv2.cvtColor(np.clip(view, 0, 255).astype(np.uint8), cv2.COLOR_GRAY2BGR)


def _shares(detector, frames) -> list[float]:
    return [float((detector.process(f).mask > 0).mean()) for f in frames]


def _detectors(study):
    from motiondetect.pipeline.config import build_filters, default_config
    from motiondetect.pipeline.detector import MotionDetector

    return (
        MotionDetector(build_filters(default_config()), annotate=False),
        study.FollowingDetector(build_filters(default_config()), annotate=False),
    )


def test_the_prototype_moves_the_model_with_a_pan_the_default_takes_for_motion(study):
    from tests.filters.test_ghosts import texture

    rng = np.random.default_rng(0)
    panorama = texture((240, 400), seed=11)
    # 70 frames still, a pan of 60 pixels over 10 frames (beyond register's reach of 16), 40 still.
    frames = [_view(panorama, study.offset(i, 70, 60, 10), rng) for i in range(120)]
    default, following = _detectors(study)
    plain, followed = _shares(default, frames), _shares(following, frames)
    assert max(plain[:70]) == 0 and max(followed[:70]) == 0
    assert following.moves >= 1
    assert min(plain[90:]) > 0.3  # the new view is motion everywhere to the default
    assert max(followed[90:]) < 0.01


def test_the_prototype_leaves_a_fixed_camera_alone_when_something_fills_the_view(study):
    from tests.filters.test_ghosts import texture

    rng = np.random.default_rng(1)
    panorama = texture((240, 400), seed=12)
    frames = [_view(panorama, 0, rng) for _ in range(100)]
    for i, frame in enumerate(frames[60:]):  # a dark, noisy van drives in from the left and stops
        width = min(300, 20 + 20 * i)
        frame[5:235, :width] = rng.integers(25, 45, (230, width, 3), dtype=np.uint8)
    default, following = _detectors(study)
    plain, followed = _shares(default, frames), _shares(following, frames)
    # Its peak within the reach collapses, as a pan's does, but no shift beyond the reach explains
    # the frame: no move, the same masks as the default's.
    assert following.collapses >= 2 and following.moves == 0
    assert followed == plain and max(plain[75:]) > 0.8
