"""Difference (absdiff of two grey frames) against int16 NumPy arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from motiondetect.filters import Difference


def numpy_absdiff(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.abs(a.astype(np.int16) - b.astype(np.int16)).astype(np.uint8)


@pytest.mark.parametrize("shape", [(1, 1), (2, 9), (7, 13), (31, 17), (240, 320)])
def test_matches_int16_abs_difference(rng, shape):
    a = rng.integers(0, 256, shape, dtype=np.uint8)
    b = rng.integers(0, 256, shape, dtype=np.uint8)
    out = Difference().reference(a, b)
    assert out.shape == shape and out.dtype == np.uint8
    np.testing.assert_array_equal(out, numpy_absdiff(a, b))


def test_symmetric(rng):
    a = rng.integers(0, 256, (31, 17), dtype=np.uint8)
    b = rng.integers(0, 256, (31, 17), dtype=np.uint8)
    np.testing.assert_array_equal(Difference().reference(a, b), Difference().reference(b, a))


def test_no_wraparound_at_extremes():
    zeros = np.zeros((3, 5), np.uint8)
    full = np.full((3, 5), 255, np.uint8)
    assert np.all(Difference().reference(zeros, full) == 255)
    assert np.all(Difference().reference(full, zeros) == 255)
    assert np.all(Difference().reference(zeros, zeros) == 0)
    assert np.all(Difference().reference(full, full) == 0)


def test_every_pair_of_levels():
    # All 256 x 256 level pairs in one image: a wrap-around or saturation slip would show.
    a, b = np.meshgrid(np.arange(256, dtype=np.uint8), np.arange(256, dtype=np.uint8))
    out = Difference().reference(np.ascontiguousarray(a), np.ascontiguousarray(b))
    expected = np.abs(np.arange(256)[None, :] - np.arange(256)[:, None])
    np.testing.assert_array_equal(out, expected.astype(np.uint8))


def test_one_by_one():
    out = Difference().reference(np.array([[3]], np.uint8), np.array([[250]], np.uint8))
    assert out.tolist() == [[247]]


def test_inputs_not_modified(rng):
    a = rng.integers(0, 256, (5, 6), dtype=np.uint8)
    b = rng.integers(0, 256, (5, 6), dtype=np.uint8)
    a0, b0 = a.copy(), b.copy()
    Difference().reference(a, b)
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(b, b0)
