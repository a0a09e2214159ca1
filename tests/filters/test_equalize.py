"""Equalize (cv2.equalizeHist on the CPU) against an independent NumPy implementation of the formula."""

from __future__ import annotations

import numpy as np
import pytest

from motiondetect.filters import Equalize


def numpy_equalize(image: np.ndarray) -> np.ndarray:
    """OpenCV's documented equalizeHist: lut[i] = rint(255 * (cdf(i) - h[i0]) / (N - h[i0])) in float32."""
    hist = np.bincount(image.ravel(), minlength=256)
    i0 = int(np.flatnonzero(hist)[0])
    if hist[i0] == image.size:
        return image.copy()
    scale = np.float32(255.0) / np.float32(image.size - hist[i0])
    partial = (np.cumsum(hist) - hist[i0]).astype(np.float32)
    lut = np.clip(np.rint(partial * scale), 0, 255).astype(np.uint8)
    lut[: i0 + 1] = 0
    return lut[image]


@pytest.mark.parametrize("shape", [(1, 1), (2, 3), (7, 13), (120, 160), (479, 641)])
def test_random_images(rng, shape):
    for lo, hi in ((0, 255), (30, 90), (200, 201)):
        image = rng.integers(lo, hi + 1, shape, dtype=np.uint8)
        np.testing.assert_array_equal(Equalize().reference(image), numpy_equalize(image))


def test_skewed_histogram(rng):
    image = np.clip(rng.normal(60, 12, (240, 320)), 0, 255).astype(np.uint8)
    out = Equalize().reference(image)
    np.testing.assert_array_equal(out, numpy_equalize(image))
    assert out.min() == 0 and out.max() == 255  # the narrow range is spread to the full one


def test_constant_image_unchanged():
    for value in (0, 17, 255):
        image = np.full((5, 6), value, np.uint8)
        np.testing.assert_array_equal(Equalize().reference(image), image)


def test_two_levels_go_to_the_extremes():
    image = np.array([[10, 10, 200, 200]], np.uint8)
    assert Equalize().reference(image).tolist() == [[0, 0, 255, 255]]
