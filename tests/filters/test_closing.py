"""Closing against a direct window-by-window closing, hand-made masks and its defining properties."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from motiondetect.filters import Closing

SIZES = [(7, 13), (1, 1), (2, 9), (31, 17), (9, 2), (1, 12)]


def direct_closing(image: np.ndarray, k: int) -> np.ndarray:
    """Pixel by pixel: the minimum, over the k x k window's pixels q inside the image, of the
    maximum of ``image`` over q's own window inside the image (a dilation whose outside is 0, then
    an erosion whose outside is 255, written out)."""
    r = k // 2
    height, width = image.shape
    dilated = np.zeros_like(image)
    for y in range(height):
        for x in range(width):
            dilated[y, x] = image[max(y - r, 0) : y + r + 1, max(x - r, 0) : x + r + 1].max()
    out = np.zeros_like(image)
    for y in range(height):
        for x in range(width):
            out[y, x] = dilated[max(y - r, 0) : y + r + 1, max(x - r, 0) : x + r + 1].min()
    return out


@pytest.mark.parametrize("k", [1, 3, 5, 9])
def test_random_masks_and_grey_images(rng, k):
    flt = Closing(kernel_size=k)
    for shape in SIZES:
        mask = np.where(rng.random(shape) < 0.3, 255, 0).astype(np.uint8)
        grey = rng.integers(0, 256, shape, dtype=np.uint8)
        for image in (mask, grey):
            out = flt.reference(image)
            assert out.shape == shape and out.dtype == np.uint8
            np.testing.assert_array_equal(out, direct_closing(image, k), err_msg=f"{shape=} {k=}")
            np.testing.assert_array_equal(out, cv2.morphologyEx(image, cv2.MORPH_CLOSE, np.ones((k, k), np.uint8)))


def test_fills_a_hole_and_a_gap_and_keeps_the_outline():
    mask = np.zeros((30, 40), np.uint8)
    mask[5:15, 5:15] = 255
    mask[8:11, 8:12] = 0  # a 3x4 hole inside the block: a car's roof the model calls background
    mask[5:15, 17:25] = 255  # a second block two pixels to the right of the first
    mask[25, 30] = 255  # a speck far from both
    out = Closing(kernel_size=5).reference(mask)
    expected = mask.copy()
    expected[8:11, 8:12] = 255  # the hole is filled
    expected[5:15, 15:17] = 255  # the gap between the blocks is bridged, no wider than they are tall
    np.testing.assert_array_equal(out, expected)  # the outline and the speck stay where they were
    assert Closing(kernel_size=1).reference(mask) is not mask
    np.testing.assert_array_equal(Closing(kernel_size=1).reference(mask), mask)
    # A gap as wide as the element stays open: 3 pixels wide, closed by 5 but not by 3.
    gap = np.zeros((9, 12), np.uint8)
    gap[2:7, 1:5] = gap[2:7, 8:11] = 255
    assert not Closing(kernel_size=3).reference(gap)[4, 5:8].any()
    assert Closing(kernel_size=5).reference(gap)[4, 5:8].all()


def test_radius_and_halo():
    assert Closing(kernel_size=9).radius == 4
    assert Closing(kernel_size=9).halo() == 8
    assert Closing(kernel_size=1).halo() == 0


@settings(max_examples=60, deadline=None)
@given(
    image=arrays(np.uint8, st.tuples(st.integers(1, 12), st.integers(1, 12)), elements=st.sampled_from([0, 255])),
    k=st.sampled_from([1, 3, 5, 7]),
)
def test_extensive_and_idempotent(image, k):
    flt = Closing(kernel_size=k)
    once = flt.reference(image)
    assert np.all(once >= image)  # only adds pixels
    np.testing.assert_array_equal(flt.reference(once), once)  # closing a closed mask changes nothing
