"""Blur (box filter, replicated border, rounded to nearest) against a naive loop and cv2.blur."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from motiondetect.filters import Blur

SIZES = [(1, 1), (2, 3), (7, 13), (31, 17), (1, 12), (12, 1)]


def naive_box(image: np.ndarray, k: int) -> np.ndarray:
    """Mean of the k x k window with indices clamped to the frame, rounded half up, in Python ints."""
    height, width = image.shape
    r = k // 2
    out = np.zeros_like(image)
    for y in range(height):
        for x in range(width):
            total = sum(
                int(image[min(max(y + dy, 0), height - 1), min(max(x + dx, 0), width - 1)])
                for dy in range(-r, r + 1)
                for dx in range(-r, r + 1)
            )
            out[y, x] = (total + k * k // 2) // (k * k)
    return out


def test_naive_reference_sanity():
    img = np.array([[0, 9]], np.uint8)
    # 3x3 window, replicated: each output averages three 0s and six 9s (x=0: cols 0,0,1 -> 0,0,9).
    assert naive_box(img, 3).tolist() == [[3, 6]]  # (27 + 4) // 9 = 3, (54 + 4) // 9 = 6


@pytest.mark.parametrize("k", [1, 3, 5, 7])
def test_random_images_match_naive(rng, k):
    for shape in SIZES:
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        np.testing.assert_array_equal(Blur(kernel_size=k).reference(img), naive_box(img, k), err_msg=f"{shape=} {k=}")


@pytest.mark.parametrize("k", [1, 3, 5, 9, 31])
def test_equals_opencv_blur_with_replicated_border(rng, k):
    for shape in [(64, 80), (5, 3), (1, 1)]:
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        np.testing.assert_array_equal(Blur(kernel_size=k).reference(img), cv2.blur(img, (k, k), borderType=cv2.BORDER_REPLICATE))


@pytest.mark.parametrize("k", [9, 31])
def test_large_windows_match_naive(rng, k):
    # Windows larger than the image: every pixel reads the replicated border many times.
    for shape in [(12, 9), (1, 20), (33, 2)]:
        img = rng.integers(0, 256, shape, dtype=np.uint8)
        np.testing.assert_array_equal(Blur(kernel_size=k).reference(img), naive_box(img, k), err_msg=f"{shape=} {k=}")
    for value in (0, 1, 128, 254, 255):  # sums k * k * value: the quotients are whole
        np.testing.assert_array_equal(Blur(kernel_size=k).reference(np.full((3, 4), value, np.uint8)), np.full((3, 4), value, np.uint8))


def test_constant_image_unchanged_and_rounding_to_nearest():
    np.testing.assert_array_equal(Blur(kernel_size=5).reference(np.full((6, 7), 77, np.uint8)), np.full((6, 7), 77, np.uint8))
    img = np.zeros((3, 3), np.uint8)
    img[0, 0] = 5  # the replicated border repeats the corner pixel
    out = Blur(kernel_size=3).reference(img)
    assert out[0, 0] == 2  # its own window holds the 5 four times: 20 / 9 = 2.2 -> 2
    assert out[1, 1] == 1  # once: 5 / 9 = 0.56 -> 1
    assert out[2, 2] == 0  # not at all


@settings(max_examples=40, deadline=None)
@given(image=arrays(np.uint8, st.tuples(st.integers(1, 8), st.integers(1, 8))), k=st.sampled_from([1, 3, 5]))
def test_property_matches_naive(image, k):
    np.testing.assert_array_equal(Blur(kernel_size=k).reference(image), naive_box(image, k))
