"""Median (binary majority) against cv2.medianBlur and a naive window count, with and without the weak level."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from motiondetect.filters import Median
from motiondetect.filters.base import WEAK

SIZES = [(1, 1), (2, 3), (7, 13), (31, 17), (1, 12), (12, 1)]


def naive_majority(mask: np.ndarray, k: int) -> np.ndarray:
    r = k // 2
    padded = np.pad(mask != 0, r, mode="edge").astype(int)
    height, width = mask.shape
    count = sum(padded[dy : dy + height, dx : dx + width] for dy in range(k) for dx in range(k))
    return np.where(2 * count > k * k, 255, 0).astype(np.uint8)


@pytest.mark.parametrize("k", [1, 3, 5, 7, 31])
def test_random_masks_match_opencv_median_and_naive(rng, k):
    for shape in SIZES:
        for density in (0.2, 0.5, 0.8):
            mask = np.where(rng.random(shape) < density, 255, 0).astype(np.uint8)
            out = Median(kernel_size=k).reference(mask)
            np.testing.assert_array_equal(out, naive_majority(mask, k))
            if k > 1:
                np.testing.assert_array_equal(out, cv2.medianBlur(mask, k))


def test_speck_removed_block_kept_pinhole_filled():
    mask = np.zeros((20, 20), np.uint8)
    mask[3, 3] = 255  # a speck
    mask[8:16, 8:16] = 255  # a block with a pinhole
    mask[11, 11] = 0
    out = Median(kernel_size=3).reference(mask)
    assert out[3, 3] == 0 and out[11, 11] == 255
    assert np.count_nonzero(out[8:16, 8:16]) == 64 - 4  # only the block's four corners go
    assert np.count_nonzero(out) == 60


def test_any_non_zero_counts_as_set_and_above_128_as_foreground():
    for value, expected in ((7, WEAK), (WEAK, WEAK), (129, 255), (255, 255)):
        mask = np.full((5, 5), value, np.uint8)
        np.testing.assert_array_equal(Median(kernel_size=3).reference(mask), np.full((5, 5), expected, np.uint8))


@pytest.mark.parametrize("k", [1, 3, 5])
def test_masks_with_the_weak_level_match_opencv_median(rng, k):
    # The median of a 0 / 128 / 255 image is the vote of each plane (threshold decomposition):
    # OpenCV's grey-level median of the image itself is the independent reference.
    for shape in SIZES:
        for weights in ((0.4, 0.3, 0.3), (0.2, 0.6, 0.2), (0.6, 0.1, 0.3)):
            levels = rng.choice(np.array([0, WEAK, 255], np.uint8), shape, p=weights)
            out = Median(kernel_size=k).reference(levels)
            np.testing.assert_array_equal(out, cv2.medianBlur(levels, k) if k > 1 else levels)
            strong = np.where(levels == 255, 255, 0).astype(np.uint8)
            np.testing.assert_array_equal(out == 255, naive_majority(strong, k) == 255)  # the foreground's own vote
            np.testing.assert_array_equal(out != 0, naive_majority(levels, k) == 255)
