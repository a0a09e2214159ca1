"""DispersionThreshold against a naive per-pixel implementation of the XDS/DIALS test."""

from __future__ import annotations

import math

import numpy as np
import pytest

from motiondetect.filters import DispersionThreshold


def naive_dispersion(image, k, n_b, n_s, threshold):
    """Per pixel, over the window clipped to the frame, in float64 as DIALS writes it:
    var/mean > 1 + n_b sqrt(2/(n-1)) and x > mean + n_s sqrt(mean) and x > threshold."""
    height, width = image.shape
    r = k // 2
    out = np.zeros_like(image)
    for y in range(height):
        for x in range(width):
            window = image[max(y - r, 0) : y + r + 1, max(x - r, 0) : x + r + 1].astype(np.float64)
            n = window.size
            if n < 2:
                continue
            mean = window.mean()
            var = window.var(ddof=1)
            v = float(image[y, x])
            dispersed = mean > 0 and var / mean > 1 + n_b * math.sqrt(2 / (n - 1))
            strong = v > mean + n_s * math.sqrt(mean)
            out[y, x] = 255 if (dispersed and strong and v > threshold) else 0
    return out


def sparse_counts(rng, shape, spots=6):
    """Poisson background (mean 2) with a few bright spots, like a difference image or a diffraction frame."""
    image = rng.poisson(2.0, shape)
    for _ in range(spots):
        y, x = rng.integers(0, shape[0]), rng.integers(0, shape[1])
        image[y, x] += rng.integers(20, 120)
    return np.clip(image, 0, 255).astype(np.uint8)


@pytest.mark.parametrize("k, n_b, n_s, threshold", [(7, 6.0, 3.0, 0), (3, 2.0, 1.0, 0), (5, 6.0, 3.0, 10), (9, 0.0, 0.0, 0)])
def test_matches_naive_float_version(rng, k, n_b, n_s, threshold):
    flt = DispersionThreshold(kernel_size=k, sigma_background=n_b, sigma_strong=n_s, threshold=threshold)
    for shape in [(1, 1), (2, 3), (13, 17), (40, 31)]:
        for image in (sparse_counts(rng, shape), rng.integers(0, 256, shape, dtype=np.uint8)):
            got = flt.reference(image)
            want = naive_dispersion(image, k, n_b, n_s, threshold)
            # The integer test quantises two constants to 2**-16: only exact ties could differ.
            assert np.count_nonzero(got != want) == 0, f"{shape=}"


def test_spots_found_and_flat_noise_ignored(rng):
    image = rng.poisson(3.0, (60, 60)).astype(np.uint8)
    spots = [(10, 12), (30, 40), (50, 7)]
    for y, x in spots:
        image[y, x] = 80
    mask = DispersionThreshold().reference(image)
    for y, x in spots:
        assert mask[y, x] == 255
    assert np.count_nonzero(mask) == len(spots)


def test_constant_and_empty_images_give_nothing():
    for value in (0, 1, 128, 255):
        assert not DispersionThreshold().reference(np.full((20, 20), value, np.uint8)).any()


def test_c_table_values():
    flt = DispersionThreshold(kernel_size=3, sigma_background=6.0)
    assert flt.c_table.shape == (10,)
    assert flt.c_table[9] == math.floor((8 + 6.0 * math.sqrt(16)) * 65536 + 0.5)
    assert flt.s2_q16 == 9 * 65536
