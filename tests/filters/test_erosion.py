"""Erosion against a naive NumPy erosion (border counts as 255), plus shape-level facts."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from motiondetect.filters import Erosion
from motiondetect.filters.base import WEAK

SIZES = [(7, 13), (1, 1), (2, 9), (31, 17), (9, 2), (1, 12)]


def naive_erode(image: np.ndarray, k: int, iterations: int) -> np.ndarray:
    """Minimum over the k x k window around each pixel, outside pixels = 255, repeated."""
    r = k // 2
    out = image.copy()
    height, width = image.shape
    for _ in range(iterations):
        padded = np.pad(out, r, mode="constant", constant_values=255)
        result = np.full_like(out, 255)
        for dy in range(k):
            for dx in range(k):
                np.minimum(result, padded[dy : dy + height, dx : dx + width], out=result)
        out = result
    return out


def test_naive_reference_sanity():
    # The reference itself, on a case checked by hand.
    img = np.array([[255, 255, 255, 255], [255, 0, 255, 255], [255, 255, 255, 255]], np.uint8)
    expected = np.array([[0, 0, 0, 255], [0, 0, 0, 255], [0, 0, 0, 255]], np.uint8)
    np.testing.assert_array_equal(naive_erode(img, 3, 1), expected)


@pytest.mark.parametrize("k, iterations", list(itertools.product([1, 3, 5, 7], [1, 2, 3])))
def test_random_masks_and_grey_images(rng, k, iterations):
    flt = Erosion(kernel_size=k, iterations=iterations)
    for shape in SIZES:
        # Mostly-set binary masks (so erosion leaves something) and arbitrary grey images.
        mask = np.where(rng.random(shape) < 0.85, 255, 0).astype(np.uint8)
        grey = rng.integers(0, 256, shape, dtype=np.uint8)
        for image in (mask, grey):
            out = flt.reference(image)
            assert out.shape == shape and out.dtype == np.uint8
            np.testing.assert_array_equal(out, naive_erode(image, k, iterations), err_msg=f"{shape=} {k=} {iterations=}")


@pytest.mark.parametrize("k", [1, 3, 5, 7, 31])
def test_all_set_stays_all_set(k):
    # The border counts as 255: the edges are not eaten away.
    for shape in SIZES:
        full = np.full(shape, 255, np.uint8)
        np.testing.assert_array_equal(Erosion(kernel_size=k, iterations=3).reference(full), full)


@pytest.mark.parametrize("k, iterations", [(3, 1), (5, 1), (7, 1), (3, 2), (5, 3)])
def test_single_zero_spreads_to_a_square(k, iterations):
    img = np.full((41, 43), 255, np.uint8)
    img[20, 21] = 0
    out = Erosion(kernel_size=k, iterations=iterations).reference(img)
    half = iterations * (k // 2)
    expected = np.full_like(img, 255)
    expected[20 - half : 20 + half + 1, 21 - half : 21 + half + 1] = 0
    np.testing.assert_array_equal(out, expected)
    assert np.count_nonzero(out == 0) == (2 * half + 1) ** 2


def test_single_zero_near_corner_is_clipped():
    img = np.full((6, 8), 255, np.uint8)
    img[0, 0] = 0
    out = Erosion(kernel_size=5).reference(img)
    expected = np.full_like(img, 255)
    expected[:3, :3] = 0
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("k", [3, 5, 7])
def test_isolated_set_pixel_vanishes(k):
    img = np.zeros((15, 16), np.uint8)
    img[7, 8] = 255
    assert np.count_nonzero(Erosion(kernel_size=k).reference(img)) == 0


def test_kernel_size_one_is_identity(rng):
    img = rng.integers(0, 256, (7, 13), dtype=np.uint8)
    np.testing.assert_array_equal(Erosion(kernel_size=1, iterations=4).reference(img), img)


def test_radius_of_the_combined_element():
    assert Erosion().radius == 1
    assert Erosion(kernel_size=5, iterations=3).radius == 6
    assert Erosion(kernel_size=1, iterations=16).radius == 0


def test_a_block_survives_shrunk(rng):
    # A solid 9x9 block of 255 in zeros shrinks by the radius on each side.
    img = np.zeros((20, 20), np.uint8)
    img[5:14, 6:15] = 255
    out = Erosion(kernel_size=3, iterations=2).reference(img)
    expected = np.zeros_like(img)
    expected[7:12, 8:13] = 255
    np.testing.assert_array_equal(out, expected)


@settings(max_examples=60, deadline=None)
@given(
    image=arrays(np.uint8, st.tuples(st.integers(1, 12), st.integers(1, 12))),
    k=st.sampled_from([1, 3, 5, 7]),
    iterations=st.integers(1, 3),
)
def test_property_matches_naive(image, k, iterations):
    np.testing.assert_array_equal(Erosion(kernel_size=k, iterations=iterations).reference(image), naive_erode(image, k, iterations))


def test_weak_level_by_hand():
    # A 3x3 block of foreground in a rim of weak pixels: the 3x3 element keeps the block's centre
    # as foreground, the block's removed ring stays set (128), and of the rim, weak pixels whose
    # window is all set survive too; a lone weak pixel goes.
    levels = np.zeros((7, 7), np.uint8)
    levels[1:6, 1:6] = WEAK
    levels[2:5, 2:5] = 255
    levels[0, 6] = WEAK
    flt = Erosion(kernel_size=3)
    flt.weak_level = True
    expected = np.zeros((7, 7), np.uint8)
    expected[2:5, 2:5] = WEAK
    expected[3, 3] = 255
    np.testing.assert_array_equal(flt.reference(levels), expected)
    flt.weak_level = False  # the plain minimum: the centre keeps 255, the ring 128
    plain = flt.reference(levels)
    assert plain[3, 3] == 255 and (plain[2:5, 2:5] == WEAK).sum() == 8


@pytest.mark.parametrize("k, iterations", [(3, 1), (5, 1), (3, 2)])
def test_weak_level_matches_the_two_planes_eroded_naively(rng, k, iterations):
    flt = Erosion(kernel_size=k, iterations=iterations)
    flt.weak_level = True
    for shape in SIZES:
        levels = rng.choice(np.array([0, WEAK, 255], np.uint8), shape, p=(0.2, 0.4, 0.4))
        foreground = np.where(levels == 255, 255, 0).astype(np.uint8)
        set_pixels = np.where(levels != 0, 255, 0).astype(np.uint8)
        expected = np.where(
            naive_erode(foreground, k, iterations) == 255,
            255,
            np.where((naive_erode(set_pixels, k, iterations) == 255) | (levels == 255), WEAK, 0),
        )
        np.testing.assert_array_equal(flt.reference(levels), expected)
