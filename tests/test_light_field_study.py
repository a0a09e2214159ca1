"""benchmarks/light_field_study.py: the gain field it measures, and the veto on the model, on
synthetic scenes whose change of light is known."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def study():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import light_field_study
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return light_field_study


def options(**changes) -> argparse.Namespace:
    """The study's default options, with ``changes``."""
    opts = dict(evidence=0.9, min_std=3.0, min_evidence=8, block=8, spread=5, tolerance=12.0)
    opts.update(changes)
    return argparse.Namespace(**opts)


def textured(h: int = 96, w: int = 128, seed: int = 0) -> np.ndarray:
    """(h, w) float64 grey levels 60..200: grass-like texture (std about 20) on a gentle ramp."""
    rng = np.random.default_rng(seed)
    ramp = np.linspace(100, 160, w)[None, :].repeat(h, 0)
    return np.clip(ramp + rng.normal(0, 20, (h, w)), 60, 200).round()


def smooth_gain(h: int = 96, w: int = 128) -> np.ndarray:
    """(h, w) gain falling smoothly from 1.0 on the left to 0.5 on the right, as a cloud's shadow."""
    return np.linspace(1.0, 0.5, w)[None, :].repeat(h, 0)


def test_field_recovers_a_smooth_gain_over_texture(study):
    b = textured()
    gain = smooth_gain()
    x = (b * gain).round()
    g = study.gain_field(x, b, options())
    inner = (slice(8, -8), slice(8, -8))  # away from the grid's edge blocks
    assert np.abs(g[inner] - gain[inner]).max() < 0.05
    assert np.mean(np.abs(x - g * b) <= 10) > 0.95


def test_field_ignores_an_object_that_hides_the_texture(study):
    """A uniform dark object gives no evidence (its window does not correlate with the texture
    it hides), so the field over it comes from the unchanged texture around it: 1."""
    b = textured()
    x = b.copy()
    x[30:70, 40:90] = 50  # a dark, flat object, 40x50 pixels
    g = study.gain_field(x, b, options())
    assert np.abs(g[30:70, 40:90] - 1).max() < 0.05
    # A field fitted to every pixel's ratio (no evidence test) would explain the object away.
    g_all = study.gain_field(x, b, options(evidence=-1.0, min_std=0.0))
    assert np.median(g_all[40:60, 55:75]) < 0.6


def test_flat_regions_take_the_gain_of_textured_neighbours(study):
    b = textured()
    b[:, 48:72] = 150  # a flat strip (a road): no evidence of its own
    x = (b * 0.6).round()
    g = study.gain_field(x, b, options())
    assert np.abs(g[8:-8, 48:72] - 0.6).max() < 0.05


def test_veto_clears_a_change_of_light_but_keeps_an_object(study):
    """The model with the veto, against the default model, on a textured scene that stays still
    past the model's warm-up (50 frame pairs), then darkens smoothly over 30 frames while a flat
    object enters on the last frame."""
    from motiondetect.filters.gaussian_background import GaussianBackground

    scene = textured().astype(np.uint8)
    params = GaussianBackground().params
    plain = GaussianBackground(**params)
    veto = study.LightFieldBackground(**params)
    veto.opts = options()
    frames = [scene] * 61
    for t in range(1, 31):
        gain = 1 - (1 - smooth_gain()) * t / 30
        frames.append((scene * gain).round().astype(np.uint8))
    last = frames[-1].copy()
    last[30:60, 20:50] = 20  # a dark object enters, where the light changed little
    frames[-1] = last
    grey_chroma = np.full((2, *scene.shape), 128, np.uint8)  # a grey scene: Cb = Cr = 128
    for model in (plain, veto):
        for prev, frame in zip(frames, frames[1:]):
            mask = model.reference(frame, prev, grey_chroma)
        model.final = mask
    light = np.ones(scene.shape, bool)
    light[30:60, 20:50] = False
    assert np.mean(plain.final[light] == 255) > 0.3  # the default floods where the light changed
    assert np.mean(veto.final[light] == 255) < 0.05
    assert np.mean(veto.final[30:60, 20:50] == 255) > 0.9
