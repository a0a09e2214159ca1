"""motiondetect.filters.light_field: each step against an independent float or loop reference, the
field on synthetic scenes whose change of light is known, and the option through the model."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from helpers import darkening_road

from motiondetect.filters.gaussian_background import GaussianBackground
from motiondetect.filters.light_field import UNKNOWN, block_gains, evidence_ratios, explained, gain_q16


def textured(h: int = 96, w: int = 128, seed: int = 0) -> np.ndarray:
    """(h, w) uint8 grey levels 60..200: grass-like texture (std about 20) on a gentle ramp."""
    rng = np.random.default_rng(seed)
    ramp = np.linspace(100, 160, w)[None, :].repeat(h, 0)
    return np.clip(ramp + rng.normal(0, 20, (h, w)), 60, 200).round().astype(np.uint8)


def smooth_gain(h: int = 96, w: int = 128) -> np.ndarray:
    """(h, w) gain falling smoothly from 1.0 on the left to 0.5 on the right, as a cloud's shadow."""
    return np.linspace(1.0, 0.5, w)[None, :].repeat(h, 0)


def scaled(b: np.ndarray, gain) -> np.ndarray:
    return np.clip(b * gain, 0, 255).round().astype(np.uint8)


def field(x: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The gain of every pixel, float (1.0 is no change)."""
    return gain_q16(block_gains(evidence_ratios(x, b)), x.shape) / 65536


@pytest.mark.parametrize("size", [(1, 1), (3, 4), (9, 13), (24, 31)])
def test_evidence_matches_pearson_per_window(rng, size):
    """Every pixel's evidence and ratio against a per-pixel float computation: numpy's Pearson
    correlation over the reflected 5x5 window, the windows' standard deviations, the ratio."""
    b = rng.integers(0, 256, size).astype(np.uint8)
    x = np.clip(b * rng.uniform(0.4, 1.6) + rng.normal(0, 6, size) + (rng.random(size) < 0.1) * 90, 0, 255).astype(np.uint8)
    got = evidence_ratios(x, b)
    px, pb = (np.pad(a.astype(np.float64), 2, mode="symmetric") for a in (x, b))  # BORDER_REFLECT
    for i in range(size[0]):
        for j in range(size[1]):
            wx, wb = px[i : i + 5, j : j + 5].ravel(), pb[i : i + 5, j : j + 5].ravel()
            sx, sb = wx.std(), wb.std()
            r = np.corrcoef(wx, wb)[0, 1] if sx > 0 and sb > 0 else -1.0
            ok = r >= 0.9 - 1e-12 and sb >= 3 and sx >= 1.5 and b[i, j] >= 16 and 1 <= x[i, j] <= 254
            want = int(np.floor(256 * int(x[i, j]) / int(b[i, j]) + 0.5)) if ok else UNKNOWN
            assert got[i, j] == want, (i, j, r, sx, sb)
    if size[0] * size[1] > 100:  # both outcomes are checked
        assert 0.2 < np.mean(got != UNKNOWN) < 0.95


def lower_median(values: list[int]) -> int:
    return sorted(values)[(len(values) - 1) // 2]


def test_block_gains_are_lower_medians(rng):
    """Block gains and the smoothing over 5x5 blocks against plain loops: the lower median of a
    block's ratios when it has 8, then of the known gains around each block (edges repeated)."""
    h, w = 37, 45
    ratios = np.where(rng.random((h, w)) < 0.4, rng.integers(100, 400, (h, w)), UNKNOWN)
    ratios[:16, :16] = UNKNOWN  # blocks with no evidence at all, filled from their neighbours
    rows, cols = -(-h // 8), -(-w // 8)
    raw = np.full((rows, cols), UNKNOWN)
    for r in range(rows):
        for c in range(cols):
            known = [int(v) for v in ratios[8 * r : 8 * r + 8, 8 * c : 8 * c + 8].ravel() if v != UNKNOWN]
            raw[r, c] = lower_median(known) if len(known) >= 8 else UNKNOWN
    want = np.empty((rows, cols), np.int64)
    for r in range(rows):
        for c in range(cols):
            around = [raw[min(max(r + dr, 0), rows - 1), min(max(c + dc, 0), cols - 1)] for dr in range(-2, 3) for dc in range(-2, 3)]
            known = [int(v) for v in around if v != UNKNOWN]
            want[r, c] = lower_median(known) if known else 256
    np.testing.assert_array_equal(block_gains(ratios), want)
    assert block_gains(np.full((20, 20), UNKNOWN)).tolist() == [[256] * 3] * 3  # no evidence: gain 1


@pytest.mark.parametrize("shape", [(1, 1), (5, 3), (96, 128), (270, 480), (243, 301)])
def test_gain_interpolation_is_opencvs_bilinear(rng, shape):
    """The integer interpolation equals cv2.resize's INTER_LINEAR enlargement of the grid by 8
    (in float64, cropped to the frame), exactly."""
    rows, cols = -(-shape[0] // 8), -(-shape[1] // 8)
    grid = rng.integers(0, 1024, (rows, cols))
    want = cv2.resize(grid.astype(np.float64), (cols * 8, rows * 8), interpolation=cv2.INTER_LINEAR)[: shape[0], : shape[1]]
    np.testing.assert_allclose(gain_q16(grid, shape) / 256, want, rtol=0, atol=1e-9)


def test_field_recovers_a_smooth_gain_over_texture():
    b = textured()
    x = scaled(b, smooth_gain())
    inner = (slice(8, -8), slice(8, -8))  # away from the grid's edge blocks
    assert np.abs(field(x, b)[inner] - smooth_gain()[inner]).max() < 0.05
    assert np.mean(explained(x, b, 10 << 16)[inner]) > 0.95


def test_field_ignores_an_object_that_hides_the_texture():
    """A uniform dark object gives no evidence (its window does not correlate with the texture
    it hides), so the field over it comes from the unchanged texture around it: 1."""
    b = textured()
    x = b.copy()
    x[30:70, 40:90] = 50  # a dark, flat object, 40x50 pixels
    assert np.abs(field(x, b)[30:70, 40:90] - 1).max() < 0.02
    assert not explained(x, b, 12 << 16).any()


def test_flat_regions_take_the_gain_of_textured_neighbours():
    b = textured()
    b[:, 48:72] = 150  # a flat strip (a road): no evidence of its own
    x = scaled(b, 0.6)
    assert np.abs(field(x, b)[8:-8, 48:72] - 0.6).max() < 0.02


def test_model_with_the_field_clears_a_change_of_light_but_keeps_an_object():
    """The default model with ``light_field`` 12 against the default, on a textured scene that stays
    still past the warm-up (50 frame pairs), then darkens smoothly over 30 frames while a flat
    object enters on the last frame."""
    scene = textured()
    plain, with_field = GaussianBackground(), GaussianBackground(light_field=12.0)
    frames = [scene] * 61
    for t in range(1, 31):
        frames.append(scaled(scene, 1 - (1 - smooth_gain()) * t / 30))
    last = frames[-1].copy()
    last[30:60, 20:50] = 20  # a dark object enters, where the light changed little
    frames[-1] = last
    grey_chroma = np.full((2, *scene.shape), 128, np.uint8)  # a grey scene: Cb = Cr = 128
    for model in (plain, with_field):
        for prev, frame in zip(frames, frames[1:]):
            mask = model.reference(frame, prev, grey_chroma)
        model.final = mask
    light = np.ones(scene.shape, bool)
    light[30:60, 20:50] = False
    assert np.mean(plain.final[light] == 255) > 0.3  # the default floods where the light changed
    assert np.mean(with_field.final[light] == 255) < 0.05
    assert np.mean(with_field.final[30:60, 20:50] == 255) > 0.9
    # Only the output changes: both models learnt from their own masks, identically.
    np.testing.assert_array_equal(plain.model[0], with_field.model[0])
    np.testing.assert_array_equal(plain.model[1], with_field.model[1])


def test_the_field_is_the_masks_last_step_after_the_recent_gate():
    """The field clears what it explains after the recent-background gate, which would otherwise
    add it back: a cloud darkens a patch of road one way, as a car does. On every frame of
    :func:`helpers.darkening_road` the mask with the field is the gate's mask with the explained
    pixels cleared, exactly, and the gate did fire on pixels the field explains (so the order
    matters here; with the field before the gate the first assertion fails)."""
    frames = darkening_road()
    grey_chroma = np.full((2, *frames[0].shape), 128, np.uint8)
    plain = GaussianBackground(light_field=0.0, recent_gate=0)
    gated = GaussianBackground(light_field=0.0, recent_gate=15)
    both = GaussianBackground(light_field=24.0, recent_gate=15)
    fired_and_explained = 0
    for prev, frame in zip(frames, frames[1:]):
        started = plain.model is not None
        compared = ((plain.model[0] + (1 << 15)) >> 16).astype(np.uint8) if started else None  # before the update
        before_gate, after_gate, mask = (m.reference(frame, prev, grey_chroma) for m in (plain, gated, both))
        if not started:
            continue
        cleared = explained(frame, compared, 24 << 16)
        fired_and_explained += np.count_nonzero(cleared & (after_gate == 255) & (before_gate != 255))
        np.testing.assert_array_equal(mask, np.where(cleared, 0, after_gate))
    assert fired_and_explained > 1000
    assert np.mean(after_gate == 255) > 0.1 and np.mean(mask == 255) < 0.01
