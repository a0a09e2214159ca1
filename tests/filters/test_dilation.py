"""Dilation against a naive NumPy dilation (border counts as 0), plus shape-level facts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from motiondetect.filters import Dilation, Erosion
from motiondetect.filters.base import WEAK

SIZES = [(7, 13), (1, 1), (2, 9), (31, 17), (9, 2), (1, 12)]


def naive_dilate(image: np.ndarray, k: int, iterations: int) -> np.ndarray:
    """Maximum over the k x k window around each pixel, outside pixels = 0, repeated."""
    r = k // 2
    out = image.copy()
    height, width = image.shape
    for _ in range(iterations):
        padded = np.pad(out, r, mode="constant", constant_values=0)
        result = np.zeros_like(out)
        for dy in range(k):
            for dx in range(k):
                np.maximum(result, padded[dy : dy + height, dx : dx + width], out=result)
        out = result
    return out


def test_naive_reference_sanity():
    img = np.zeros((3, 4), np.uint8)
    img[1, 1] = 255
    expected = np.array([[255, 255, 255, 0], [255, 255, 255, 0], [255, 255, 255, 0]], np.uint8)
    np.testing.assert_array_equal(naive_dilate(img, 3, 1), expected)


@pytest.mark.parametrize("k, iterations", list(itertools.product([1, 3, 5, 7], [1, 2, 3])))
def test_random_masks_and_grey_images(rng, k, iterations):
    flt = Dilation(kernel_size=k, iterations=iterations)
    for shape in SIZES:
        mask = np.where(rng.random(shape) < 0.1, 255, 0).astype(np.uint8)
        grey = rng.integers(0, 256, shape, dtype=np.uint8)
        for image in (mask, grey):
            out = flt.reference(image)
            assert out.shape == shape and out.dtype == np.uint8
            np.testing.assert_array_equal(out, naive_dilate(image, k, iterations), err_msg=f"{shape=} {k=} {iterations=}")


@pytest.mark.parametrize("k, iterations", [(3, 1), (5, 1), (3, 2), (5, 3)])
def test_single_pixel_grows_to_a_square(k, iterations):
    img = np.zeros((41, 43), np.uint8)
    img[20, 21] = 255
    out = Dilation(kernel_size=k, iterations=iterations).reference(img)
    half = iterations * (k // 2)
    assert Dilation(kernel_size=k, iterations=iterations).radius == half
    expected = np.zeros_like(img)
    expected[20 - half : 20 + half + 1, 21 - half : 21 + half + 1] = 255
    np.testing.assert_array_equal(out, expected)


def test_empty_stays_empty_at_the_border():
    # The border counts as 0: nothing grows in from outside.
    for shape in SIZES:
        np.testing.assert_array_equal(Dilation(kernel_size=7, iterations=2).reference(np.zeros(shape, np.uint8)), np.zeros(shape, np.uint8))


def test_opening_removes_specks_and_keeps_blocks():
    img = np.zeros((30, 30), np.uint8)
    img[5:15, 5:15] = 255  # a 10x10 object
    img[22, 22] = 255  # a speck
    opened = Dilation(kernel_size=3).reference(Erosion(kernel_size=3).reference(img))
    expected = np.zeros_like(img)
    expected[5:15, 5:15] = 255
    np.testing.assert_array_equal(opened, expected)


@settings(max_examples=60, deadline=None)
@given(
    image=arrays(np.uint8, st.tuples(st.integers(1, 12), st.integers(1, 12))),
    k=st.sampled_from([1, 3, 5, 7]),
    iterations=st.integers(1, 3),
)
def test_property_matches_naive(image, k, iterations):
    np.testing.assert_array_equal(Dilation(kernel_size=k, iterations=iterations).reference(image), naive_dilate(image, k, iterations))


def test_growing_into_the_weak_level_by_hand():
    # One foreground pixel with weak pixels to its right: a 3x3 element grows it into them alone.
    levels = np.zeros((5, 5), np.uint8)
    levels[2, 2] = 255
    levels[1:4, 3] = WEAK
    levels[0, 4] = WEAK  # weak, but out of the element's reach
    flt = Dilation(kernel_size=3)
    flt.weak_level = True
    expected = np.zeros((5, 5), np.uint8)
    expected[2, 2] = 255
    expected[1:4, 3] = 255
    np.testing.assert_array_equal(flt.reference(levels), expected)
    flt.weak_level = False  # the plain dilation: the whole 3x3 square, and the weak pixels' 128
    plain = flt.reference(levels)
    assert np.count_nonzero(plain[1:4, 1:4] == 255) == 9 and plain[0, 4] == WEAK


@pytest.mark.parametrize("k, iterations", [(3, 1), (5, 1), (3, 2)])
def test_growing_into_the_weak_level_matches_a_naive_geodesic_step(rng, k, iterations):
    flt = Dilation(kernel_size=k, iterations=iterations)
    flt.weak_level = True
    for shape in SIZES:
        levels = rng.choice(np.array([0, WEAK, 255], np.uint8), shape, p=(0.5, 0.35, 0.15))
        grown = naive_dilate(np.where(levels == 255, 255, 0).astype(np.uint8), k, iterations)
        out = flt.reference(levels)
        np.testing.assert_array_equal(out, np.where(levels != 0, grown, 0))
        assert set(np.unique(out)) <= {0, 255}
