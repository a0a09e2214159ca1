"""motiondetect/filters/ghosts.py and the model's ghost_frames: the whole-blob ghost test on
scenes whose answer is known."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from motiondetect.filters import GaussianBackground
from motiondetect.filters.ghosts import CHECKS, GhostWindow, ghost_pixels
from motiondetect.pipeline.config import build_filters, load_config
from motiondetect.pipeline.detector import MotionDetector


def texture(shape=(96, 128), seed=3) -> np.ndarray:
    """A sharp, textured background: 8-pixel checks of random grey levels 60..200."""
    rng = np.random.default_rng(seed)
    checks = rng.integers(60, 200, (shape[0] // 8 + 1, shape[1] // 8 + 1), dtype=np.uint8)
    return cv2.resize(checks, (checks.shape[1] * 8, checks.shape[0] * 8), interpolation=cv2.INTER_NEAREST)[: shape[0], : shape[1]]


def square(shape=(96, 128), top=30, left=40, size=30) -> np.ndarray:
    mask = np.zeros(shape, np.uint8)
    mask[top : top + size, left : left + size] = 255
    return mask


def test_a_left_objects_ghost_is_found_and_a_still_object_is_not():
    background, box = texture(), square()
    with_object = background.copy()
    with_object[box > 0] = 20  # a dark object, sharp outline
    # The ghost: the mean still holds the object, the frame shows the background. The median
    # rounds the blob's corners; the raw pixels within its reach go with it.
    ghost = ghost_pixels(background, background, with_object, box)
    assert np.array_equal(ghost, box > 0)
    # An object standing still: the frame holds it, the mean the background.
    assert not ghost_pixels(with_object, with_object, background, box).any()


def test_a_smooth_object_over_a_sharp_scene_is_kept_by_the_stillness_only():
    """Leaves close to the lens: out of focus, less gradient at their border than the scene behind
    them that the mean holds, so the edge test alone calls them ghosts; they move, so the
    stillness keeps them."""
    background, box = texture(), square()

    def leaf_at(left: int) -> np.ndarray:
        leaf = cv2.GaussianBlur(square(left=left), (0, 0), 3).astype(np.float32) / 255
        return (background * (1 - leaf) + 128 * leaf).astype(np.uint8)

    frame = leaf_at(40)
    assert ghost_pixels(frame, frame, background, box).any()  # still: a "ghost"
    assert not ghost_pixels(frame, leaf_at(34), background, box).any()  # it moved 6 pixels: kept


def test_the_stillness_is_measured_against_the_frames_noise():
    """A still ghost in noisy footage: its own noise, as large as the frame's, is above half the
    frame's median change (the default's 0.5), so the ghost waits; at 1.5 times it passes
    (docs/evaluation-log.md, "Ghosts": badminton's ghost stays)."""
    rng = np.random.default_rng(1)
    background, box = texture(), square()
    with_object = background.copy()
    with_object[box > 0] = 20
    noise = rng.integers(-8, 9, background.shape)
    frame = np.clip(background.astype(int) + noise, 0, 255).astype(np.uint8)
    previous = np.clip(background.astype(int) - noise[::-1], 0, 255).astype(np.uint8)
    assert not ghost_pixels(frame, previous, with_object, box).any()
    assert ghost_pixels(frame, previous, with_object, box, stillness=1.5)[box > 0].mean() > 0.9


def test_snow_over_a_ghost_leaves_it_still_and_a_moving_leaf_stays_kept():
    """Flakes that cross a ghost change a few percent of its pixels by a hundred grey levels: the
    blob's trimmed mean (its largest tenth left out) stays still, where the plain mean (trim 0)
    is moved past the limit; the leaf of the test above, which changes across its whole blob,
    is kept either way."""
    rng = np.random.default_rng(2)
    background, box = texture(), square()
    with_object = background.copy()
    with_object[box > 0] = 20
    previous, frame = background.copy(), background.copy()
    for image in (previous, frame):  # a new 6 % of the pixels whitened on each frame
        flakes = rng.random(background.shape) < 0.06
        image[flakes] = 240
    assert ghost_pixels(frame, previous, with_object, box)[box > 0].mean() > 0.9
    assert not ghost_pixels(frame, previous, with_object, box, trim=0).any()

    def leaf_at(left: int) -> np.ndarray:
        leaf = cv2.GaussianBlur(square(left=left), (0, 0), 3).astype(np.float32) / 255
        return (background * (1 - leaf) + 128 * leaf).astype(np.uint8)

    assert not ghost_pixels(leaf_at(40), leaf_at(34), background, box).any()


def test_trimmed_sums_leave_out_each_labels_largest_values():
    from motiondetect.filters.ghosts import _trimmed_sums

    rng = np.random.default_rng(4)
    labels = rng.integers(0, 5, 500).astype(np.int32)
    values = rng.integers(0, 256, 500).astype(np.uint8)
    counts = np.bincount(labels, minlength=5).astype(np.int64)
    for trim in (0, 10, 3):
        sums, kept = _trimmed_sums(labels, values, counts, trim)
        for label in range(5):
            ordered = np.sort(values[labels == label]).astype(int)
            n = len(ordered) - (len(ordered) // trim if trim else 0)
            assert (kept[label], sums[label]) == (n, ordered[:n].sum())


def test_small_blobs_and_an_empty_mask_are_not_tested():
    background = texture()
    small = square(size=3)
    with_object = background.copy()
    with_object[small > 0] = 20
    assert not ghost_pixels(background, background, with_object, small).any()
    assert not ghost_pixels(background, background, background, np.zeros_like(background)).any()


def test_the_window_takes_a_pixel_after_checks_tests_in_a_row_and_restarts_its_run():
    background, box = texture(), square()
    with_object = background.copy()
    with_object[box > 0] = 20
    mean_q16 = with_object.astype(np.int32) << 16
    window = GhostWindow()
    assert window.take(background, mean_q16, box) is None  # the first call keeps the frame only
    taken = [window.take(background, mean_q16, box) for _ in range(2 * CHECKS)]
    assert [t is not None for t in taken] == [False] * (CHECKS - 1) + [True] + [False] * (CHECKS - 1) + [True]
    assert np.array_equal(taken[CHECKS - 1], box > 0)
    # A frame on which the blob is no ghost breaks the run.
    window = GhostWindow()
    window.take(background, mean_q16, box)
    for _ in range(CHECKS - 1):
        assert window.take(background, mean_q16, box) is None
    assert window.take(with_object, mean_q16, np.zeros_like(box)) is None
    assert window.take(background, mean_q16, box) is None


def ghost_scene(count=60, leaves=30, seed=5, shape=(240, 320)) -> list[np.ndarray]:
    """BGR frames of a textured scene with +-1 grey level of noise (a pixel repeats its grey level
    7 frames in a row too rarely for the still count to clear a ghost) where a dark object stands
    for ``leaves`` frames, through the bootstrap's median, then is gone."""
    rng = np.random.default_rng(seed)
    background = cv2.cvtColor(texture(shape), cv2.COLOR_GRAY2BGR).astype(np.int16)
    frames = []
    for i in range(count):
        frame = background.copy()
        if i < leaves:
            frame[100:160, 140:190] = (30, 40, 50)
        frame += rng.integers(-1, 2, frame.shape, dtype=np.int16)
        frames.append(np.clip(frame, 0, 255).astype(np.uint8))
    return frames


def motion_shares(frames, **model) -> list[float]:
    """The default pipeline's share of the frame in motion on each frame, with ``model``'s
    gaussian_background parameters."""
    config = load_config(None)
    for entry in config["pipeline"]:
        if entry["filter"] == "gaussian_background":
            entry.update(model)
    detector = MotionDetector(build_filters(config), annotate=False)
    return [float((detector.process(f).mask > 0).mean()) for f in frames]


def test_the_default_takes_a_bootstrap_ghost_that_the_model_kept_without_the_test():
    frames = ghost_scene()
    without = motion_shares(frames, ghost_frames=0)
    default = motion_shares(frames)
    share = 60 * 50 / (240 * 320)
    assert GaussianBackground().params["ghost_frames"] == 100
    assert min(without[45:]) > 0.5 * share  # the ghost stays to the end without the test
    assert max(default[36:]) == 0.0  # taken within a few frames of the object leaving
    assert default[:30] == without[:30]  # nothing is a ghost while the object stands
    # A window that closes before the object leaves (pair 24 + 4 < 30) leaves the ghost.
    assert motion_shares(frames, ghost_frames=4) == without


@pytest.mark.parametrize("bootstrap", [0, 24])
def test_ghost_pairs_start_at_the_bootstrap(bootstrap):
    model = GaussianBackground(bootstrap=bootstrap, ghost_frames=10)
    start = max(bootstrap, 1)
    assert model.ghost_pairs == range(start, start + 11)
    assert GaussianBackground(ghost_frames=0).ghost_pairs == range(0)
