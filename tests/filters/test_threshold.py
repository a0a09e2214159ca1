"""Threshold: strictly greater than T gives 255, else 0."""

from __future__ import annotations

import numpy as np
import pytest

from motiondetect.filters import Threshold


def numpy_threshold(x: np.ndarray, t: int) -> np.ndarray:
    return np.where(x > t, 255, 0).astype(np.uint8)


@pytest.mark.parametrize("t", [0, 1, 25, 128, 254, 255])
def test_every_level_against_numpy(t):
    levels = np.arange(256, dtype=np.uint8).reshape(16, 16)
    out = Threshold(threshold=t).reference(levels)
    assert out.shape == (16, 16) and out.dtype == np.uint8
    np.testing.assert_array_equal(out, numpy_threshold(levels, t))


@pytest.mark.parametrize("t", [0, 25, 100, 254])
def test_strictly_greater_at_the_boundary(t):
    pixels = np.array([[t, t + 1]], np.uint8)
    assert Threshold(threshold=t).reference(pixels).tolist() == [[0, 255]]


def test_extremes():
    levels = np.arange(256, dtype=np.uint8).reshape(1, 256)
    at_zero = Threshold(threshold=0).reference(levels)
    assert at_zero[0, 0] == 0 and np.all(at_zero[0, 1:] == 255)
    assert np.all(Threshold(threshold=255).reference(levels) == 0)


def test_default_is_25():
    assert Threshold().params["threshold"] == 25
    assert Threshold().reference(np.array([[25, 26]], np.uint8)).tolist() == [[0, 255]]


@pytest.mark.parametrize("shape", [(1, 1), (2, 9), (7, 13), (31, 17)])
def test_random_images_binary_output(rng, shape):
    x = rng.integers(0, 256, shape, dtype=np.uint8)
    t = int(rng.integers(0, 256))
    out = Threshold(threshold=t).reference(x)
    assert set(np.unique(out).tolist()) <= {0, 255}
    np.testing.assert_array_equal(out, numpy_threshold(x, t))
