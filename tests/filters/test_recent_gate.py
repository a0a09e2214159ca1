"""The recent-background gate's integer arithmetic (motiondetect/filters/recent_gate.py); its
behaviour in the model is tested in test_background_models.py, its kernel in
test_kernels_emulated.py and test_gpu_quality.py."""

import numpy as np

from motiondetect.filters.recent_gate import WINDOW, gate, window_sums


def direct_window_sums(values: np.ndarray) -> list[list[int]]:
    """Each pixel's WINDOW x WINDOW sum with Python ints, coordinates clamped to the image (the
    replicated edge)."""
    h, w, r = *values.shape, WINDOW // 2
    return [
        [
            sum(int(values[min(max(y + dy, 0), h - 1), min(max(x + dx, 0), w - 1)]) for dy in range(-r, r + 1) for dx in range(-r, r + 1))
            for x in range(w)
        ]
        for y in range(h)
    ]


def test_window_sums_are_exact_with_the_edge_replicated(rng):
    # Extremes of both signs, in frames smaller than the window and larger, odd shapes.
    for shape in [(3, 5), (12, 17), (20, 9)]:
        values = rng.choice(np.array([-255, -254, -1, 0, 1, 254, 255], np.int16), shape)
        np.testing.assert_array_equal(window_sums(values), direct_window_sums(values))
    full = np.full((10, 10), 255, np.int16)
    assert window_sums(full).max() == 255 * WINDOW * WINDOW and window_sums(-full).min() == -255 * WINDOW * WINDOW


def test_gate_by_hand():
    # A 9x9 patch 20 darker than its recent background (d = -20, eligible): the window of a pixel
    # (oy, ox) off its centre holds (9 - |oy|) (9 - |ox|) of its pixels and sums to -20 times
    # that, beyond level 15's 15 * 81 = 1215 from 61 pixels on: 9 x 7 = 63 and 8 x 8 = 64 pass,
    # 8 x 7 = 56 does not, so 13 pixels fire. With four of its columns brighter by 20 instead it
    # is incoherent.
    d = np.zeros((21, 21), np.int16)
    d[6:15, 6:15] = -20
    diff = (d << 1) | (np.abs(d) > 15).astype(np.int16)
    mask = np.zeros(d.shape, np.uint8)
    gate(diff, mask, 15)
    expected = np.zeros(d.shape, np.uint8)
    for oy in range(-4, 5):
        for ox in range(-4, 5):
            if 20 * (9 - abs(oy)) * (9 - abs(ox)) > 15 * 81:
                expected[10 + oy, 10 + ox] = 255
    assert np.count_nonzero(expected) == 13
    np.testing.assert_array_equal(mask, expected)
    d[6:15, 6:10] = 20
    diff = (d << 1) | (np.abs(d) > 15).astype(np.int16)
    mask[...] = 0
    gate(diff, mask, 15)
    assert not mask.any()
    # The gate only adds: foreground stays foreground (pixels not eligible stay 0 above).
    mask[...] = 255
    gate(diff, mask, 15)
    assert (mask == 255).all()
