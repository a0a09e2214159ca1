"""Uneven changes of light (issue 15, the sunlight clip): a gain field estimated where the
background's texture survives, and what it costs and wins on the labelled clips.

A cloud's shadow darkens the scene by a gain that varies smoothly over the picture (60 % on the
lawn of ``samples/dev/illumination_pets2001``, less on the walls), which the default's one
frame-wide gain (``gaussian_background.exposure``) cannot follow. A gain fitted per region
follows it, but also explains away a dark car or a person that covers a region (the per-block
gain of docs/evaluation.md). What tells the two apart is texture: under a change of light the
background's texture is still there, multiplied by the gain; over an object it is gone. So the
gain is measured only at *evidence* pixels, and spread from them:

1. ``x`` is the frame's grey level, ``b`` the model's mean (rounded, as it stands before the
   frame's light switch or exposure gain is applied), both ``(H, W)`` at the working size. A pixel is evidence where the Pearson correlation of ``x`` and ``b`` over its
   5x5 window is at least ``--evidence``, both windows have a standard deviation of at least
   ``--min-std`` grey levels (``b``'s; half that for ``x``, which the cloud may have darkened),
   ``b >= 16`` and ``1 <= x <= 254`` (the normalised cross-correlation test of Jacques, Jung and
   Musse, SIBGRAPI 2005, for shadows; the ratio model of Skifstad and Jain, CVGIP 1989).
2. The gain of each ``--block`` x ``--block`` block is the median of ``x / b`` over its evidence
   pixels, when it has at least ``--min-evidence`` of them; the block grid is then smoothed and
   filled by the median of the known gains in a ``--spread`` x ``--spread`` window of blocks
   (blocks with none stay at gain 1), and interpolated bilinearly to each pixel: ``g``.
3. A pixel the model calls foreground is background when ``|x - g b| <= --tolerance`` grey levels
   and ``|g - 1| >= 0.05``; it then learns at the background's rates, so the model catches up
   with the new light.

This is a CPU study (float64, a subclass of the model's CPU reference), not a pipeline option:
the default pipeline, the kernels and the CUDA backend are unchanged. Each clip is scored by the
same CDnet scorer as ``motiondetect evaluate`` (first 50 frames of the window unscored), with the
default pipeline as it is and with the field. Prints one Markdown row per clip and the means.
Usage::

    python benchmarks/light_field_study.py [FOLDER ...] [--evidence 0.9] [--min-evidence 8]
                                           [--block 8] [--spread 5] [--tolerance 12] [--jobs 2]
    # default folders: ../shared/samples/cdnet_* and samples/dev/*/ (after samples/dev/fetch_dev.py)
"""

from __future__ import annotations

import argparse
import sys
import warnings
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from jitter_study import dev_clips  # noqa: E402

from motiondetect.evaluation.scoring import detector_method, evaluate, load_folder  # noqa: E402
from motiondetect.filters.gaussian_background import GaussianBackground  # noqa: E402
from motiondetect.pipeline.config import build_filters, default_config  # noqa: E402
from motiondetect.pipeline.detector import MotionDetector  # noqa: E402

#: Side of the window over which evidence pixels correlate the frame with the model (pixels).
WINDOW = 5
#: A gain closer to 1 than this explains nothing the model does not already.
MIN_GAIN_CHANGE = 0.05


def gain_field(x: np.ndarray, b: np.ndarray, opts: argparse.Namespace) -> np.ndarray:
    """The gain ``g`` ((H, W) float64) that takes the model's mean ``b`` to the frame ``x``
    (each (H, W) float64 grey levels) where the background's texture survives (the module
    docstring, steps 1 and 2)."""
    h, w = x.shape

    def window_mean(a):
        return cv2.boxFilter(a, cv2.CV_64F, (WINDOW, WINDOW), borderType=cv2.BORDER_REFLECT)

    mx, mb = window_mean(x), window_mean(b)
    vx = np.maximum(window_mean(x * x) - mx * mx, 0)
    vb = np.maximum(window_mean(b * b) - mb * mb, 0)
    pearson = (window_mean(x * b) - mx * mb) / np.sqrt(vx * vb + 1e-9)
    evidence = (pearson >= opts.evidence) & (vb >= opts.min_std**2) & (vx >= (opts.min_std / 2) ** 2)
    evidence &= (b >= 16) & (x >= 1) & (x <= 254)
    ratio = np.where(evidence, x / np.maximum(b, 1), np.nan)
    block = opts.block
    rows, cols = -(-h // block), -(-w // block)
    padded = np.pad(ratio, ((0, rows * block - h), (0, cols * block - w)), constant_values=np.nan)
    blocks = padded.reshape(rows, block, cols, block).transpose(0, 2, 1, 3).reshape(rows, cols, -1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN blocks and windows stay NaN
        grid = np.nanmedian(blocks, axis=2)
        grid[np.sum(~np.isnan(blocks), axis=2) < opts.min_evidence] = np.nan
        half = opts.spread // 2
        windows = np.lib.stride_tricks.sliding_window_view(np.pad(grid, half, mode="edge"), (opts.spread, opts.spread))
        grid = np.nanmedian(windows.reshape(rows, cols, -1), axis=2)
    grid = np.nan_to_num(grid, nan=1.0).astype(np.float32)
    return cv2.resize(grid, (cols * block, rows * block), interpolation=cv2.INTER_LINEAR)[:h, :w].astype(np.float64)


class LightFieldBackground(GaussianBackground):
    """The default Gaussian model (CPU reference) with the gain-field veto of the module
    docstring: foreground that ``g`` times the model's mean explains is background."""

    opts: argparse.Namespace
    _explained: np.ndarray | None = None

    def reference(self, src, side=None, chroma=None):
        self._explained = None
        if self._mean is not None and self._mean.shape == src.shape:
            x = src.astype(np.float64)
            b = ((self._mean.astype(np.int64) + (1 << 15)) >> 16).astype(np.float64)
            g = gain_field(x, b, self.opts)
            self._explained = (np.abs(x - g * b) <= self.opts.tolerance) & (np.abs(g - 1) >= MIN_GAIN_CHANGE)
        return super().reference(src, side, chroma)

    def _classify(self, src, chroma, mask, rows: slice, per_plane: list, shared: dict) -> list[tuple]:
        planes = super()._classify(src, chroma, mask, rows, per_plane, shared)
        if self._explained is not None:
            mask[self._explained[rows]] = 0
        return planes


def detectors(opts: argparse.Namespace) -> list[tuple[str, MotionDetector]]:
    """The default pipeline as it is and with :class:`LightFieldBackground` in place of its
    model, fresh detectors."""
    filters = build_filters(default_config())
    with_field = []
    for f in build_filters(default_config()):
        if isinstance(f, GaussianBackground):
            f = LightFieldBackground(**f.params)
            f.opts = opts
        with_field.append(f)
    return [("default", MotionDetector(filters, annotate=False)), ("gain field", MotionDetector(with_field, annotate=False))]


def score_clip(clip: Path, opts: argparse.Namespace) -> tuple[str, list[tuple[float, float, float, float]]]:
    """``(clip name, [(pixel P, pixel R, pixel F, frame F1)] for the default and the field)``."""
    methods = [detector_method(detector, name) for name, detector in detectors(opts)]
    scores = evaluate(load_folder(clip), methods).scores
    return clip.name, [(s.pixel.precision, s.pixel.recall, s.pixel.f_measure, s.frames.f1) for _, s in scores]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path)
    parser.add_argument("--evidence", type=float, default=0.9, help="least Pearson correlation of an evidence pixel [0.9]")
    parser.add_argument("--min-std", type=float, default=3.0, help="least standard deviation of the model's window, grey levels [3]")
    parser.add_argument("--min-evidence", type=int, default=8, help="evidence pixels a block needs for a gain of its own [8]")
    parser.add_argument("--block", type=int, default=8, help="side of a block, pixels of the working size [8]")
    parser.add_argument("--spread", type=int, default=5, help="side of the median window over the block grid, blocks [5]")
    parser.add_argument("--tolerance", type=float, default=12.0, help="largest |x - g b| that the field explains, grey levels [12]")
    parser.add_argument("--jobs", type=int, default=2, help="clips scored at once [2]")
    opts = parser.parse_args(argv)
    folders = opts.folders or dev_clips()
    with ProcessPoolExecutor(opts.jobs) as pool:
        rows = list(pool.map(score_clip, folders, [opts] * len(folders)))
    print("| clip | default: pixel F / frame F1 | gain field: pixel F / frame F1 | pixel F change |")
    print("| --- | --- | --- | ---: |")
    for name, (base, field) in rows:
        print(f"| {name} | {base[2]:.3f} / {base[3]:.3f} | {field[2]:.3f} / {field[3]:.3f} | {field[2] - base[2]:+.3f} |")
    base_f, field_f = (np.mean([r[1][i][2] for r in rows]) for i in (0, 1))
    base_f1, field_f1 = (min(r[1][i][3] for r in rows) for i in (0, 1))
    print(
        f"| **mean** ({len(rows)} clips; lowest frame F1) | {base_f:.3f} ({base_f1:.3f}) | {field_f:.3f} ({field_f1:.3f}) | {field_f - base_f:+.3f} |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
