"""Ghosts: an edge-matching test that takes a left object's ghost into the background (CPU study).

A ghost is what a background model flags where an object it had learnt has left: the frame shows
the background there, the model's mean still shows the object. The still-foreground absorption
clears a ghost only on footage clean enough for a pixel to repeat its grey level exactly 7 frames
in a row, which compressed or noisy footage never does (docs/evaluation.md, "Ghosts on noisy
footage"), so in `sbi_caviar1` the railing behind a man who stood by it during the bootstrap
stays flagged for the whole window. What tells a ghost from an object is spatial: an object has
its outline in the frame; a ghost has the outline in the model's mean and none in the frame.

This study tests it after the Gaussian model's CPU reference, each frame (:func:`ghost_pixels`):
the model's raw mask is cleaned by a 7x7 median (as the pipeline's next filter does) and cut
into 8-connected blobs; a blob of at least ``min_area`` working pixels is a ghost when, on the
band of pixels one step either side of its border, the model's rounded mean has more gradient
(3x3 Sobel, |gx| + |gy|) than ``ratio`` times the frame's, and the frame inside it is still: its
mean absolute difference to the frame of the previous test is at most ``stillness`` times that
difference's median over the frame (the footage's noise) plus one grey level. The stillness keeps
what moves out: leaves close to the lens, smooth and out of focus, have less gradient at their
border than the sharp scene behind them that the mean holds, and the edge test alone calls them
ghosts. A pixel that is in a ghost blob on ``checks`` tests in a row is taken into the
background, ``lag`` frames later (0: at once): its grey-level and chroma means become the
frame's, its still count restarts, and the mask there is cleared.

The model's kernels keep each pixel in registers through a batch of frames, so a test that
needs whole blobs cannot change the model within a batch; ``lag`` measures the cost of acting
on a test's result only a number of frames later, as a batched form would (the decisions of a
batch applied to the batches after it).

Prints the mean pixel F over the folders for each setting (``off`` is the default pipeline), the
clips it moves most, each clip's pixel F, and the leave-one-clip-out choice among the settings::

    python benchmarks/ghost_study.py FOLDER ... [--settings off,1/3/0.5/0,1/3/0.5/8] [--jobs 2]

A setting is ``ratio/checks/stillness/lag``. Not part of the pipeline: a study.
"""

from __future__ import annotations

import argparse
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from motiondetect import filters  # noqa: E402
from motiondetect.core.errors import MotionDetectError  # noqa: E402
from motiondetect.evaluation.scoring import DEFAULT_SKIP  # noqa: E402
from motiondetect.evaluation.tuning import leave_one_out, score_config  # noqa: E402
from motiondetect.filters.gaussian_background import GaussianBackground  # noqa: E402
from motiondetect.pipeline.config import load_config  # noqa: E402

#: Median applied to the raw mask before the blobs are cut (the default pipeline's median).
BLOB_MEDIAN = 7
#: Smallest blob tested, in working pixels (smaller ones are noise the median leaves).
MIN_AREA = 16


@dataclass(frozen=True)
class Setting:
    """One point of the study: ``ratio`` (the mean's border gradient over the frame's, at least),
    ``checks`` (tests in a row), ``stillness`` (times the frame's median change, plus one grey
    level) and ``lag`` (frames between the decision and the absorption)."""

    ratio: float
    checks: int
    stillness: float
    lag: int

    @classmethod
    def parse(cls, text: str) -> Setting | None:
        """``"ratio/checks/stillness/lag"``, or ``"off"`` for ``None``; ValueError otherwise."""
        if text == "off":
            return None
        try:
            ratio, checks, stillness, lag = text.split("/")
            return cls(float(ratio), int(checks), float(stillness), int(lag))
        except ValueError:
            raise ValueError(f"expected a setting as ratio/checks/stillness/lag (such as 1/3/0.5/0) or off; got {text!r}") from None

    def __str__(self) -> str:
        return f"{self.ratio:g}/{self.checks}/{self.stillness:g}/{self.lag}"


def _gradient(grey: np.ndarray) -> np.ndarray:
    """|gx| + |gy| of a 3x3 Sobel, float32, ``grey``'s shape."""
    gx = cv2.Sobel(grey, cv2.CV_32F, 1, 0, ksize=3)
    gy = cv2.Sobel(grey, cv2.CV_32F, 0, 1, ksize=3)
    return cv2.add(cv2.absdiff(gx, 0), cv2.absdiff(gy, 0))


def ghost_pixels(
    frame: np.ndarray, previous: np.ndarray, mean: np.ndarray, mask: np.ndarray, ratio: float, stillness: float, min_area: int = MIN_AREA
) -> np.ndarray:
    """The pixels of ``mask`` that lie in ghost blobs (the module docstring's test).

    Args:
        frame: (H, W) uint8 grey levels the model compared.
        previous: (H, W) uint8 grey levels of the previous test's frame (the stillness).
        mean: (H, W) uint8 the model's rounded grey-level mean.
        mask: (H, W) uint8 the model's raw mask, 0 or 255.
        ratio: a blob is a ghost when the mean's gradient on its border band exceeds ``ratio``
            times the frame's.
        stillness: ... and its mean ``|frame - previous|`` is at most ``stillness`` times the
            median of ``|frame - previous|`` over the frame, plus 1 grey level.
        min_area: smallest blob tested, pixels.

    Returns:
        (H, W) bool, True on ``mask``'s foreground pixels inside a ghost blob or within the
        median's reach of one (3 pixels).
    """
    blobs = cv2.medianBlur(mask, BLOB_MEDIAN)
    n, labels, stats, _ = cv2.connectedComponentsWithStats(blobs, connectivity=8)
    if n <= 1:
        return np.zeros(mask.shape, bool)
    step = np.ones((3, 3), np.uint8)
    band = cv2.dilate(blobs, step) > cv2.erode(blobs, step)  # one pixel either side of each border
    on_band = np.where(band, labels, 0).ravel()
    frame_edge = np.bincount(on_band, weights=_gradient(frame).ravel(), minlength=n)
    mean_edge = np.bincount(on_band, weights=_gradient(mean).ravel(), minlength=n)
    change = cv2.absdiff(frame, previous)
    area = stats[:, cv2.CC_STAT_AREA]
    mean_change = np.bincount(labels.ravel(), weights=change.ravel(), minlength=n) / np.maximum(area, 1)
    ghost = (mean_edge > ratio * frame_edge) & (area >= min_area) & (mean_change <= stillness * float(np.median(change)) + 1.0)
    ghost[0] = False
    # The raw mask's pixels the median took off a ghost's edges and corners go with it.
    near = cv2.dilate(ghost[labels].astype(np.uint8), np.ones((BLOB_MEDIAN, BLOB_MEDIAN), np.uint8))
    return (near > 0) & (mask > 0)


class GhostTestedBackground(GaussianBackground):
    """``gaussian_background``'s CPU reference with the ghost test after it (:data:`SETTING`)."""

    SETTING: Setting | None = None

    def reset(self) -> None:
        super().reset()
        self._ghost_runs = self._tested = None
        self._due: dict[int, np.ndarray] = {}

    def reference(self, src, side=None, chroma=None):
        out = super().reference(src, side, chroma)
        setting = self.SETTING
        if setting is None or self._boot_grey is not None:  # not before the bootstrap's median
            return out
        if self._tested is None or self._tested.shape != src.shape:
            self._ghost_runs, self._tested, self._due = np.zeros(src.shape, np.int32), src.copy(), {}
            return out
        due = self._due.pop(self._pairs, None)
        if due is not None:
            self._absorb(due, src, chroma, out)
        mean = ((self._mean + (1 << 15)) >> 16).astype(np.uint8)
        ghost = ghost_pixels(src, self._tested, mean, out, setting.ratio, setting.stillness)
        self._tested = src.copy()
        self._ghost_runs = np.where(ghost, self._ghost_runs + 1, 0).astype(np.int32)
        take = self._ghost_runs >= setting.checks
        if take.any():
            self._ghost_runs[take] = 0
            if setting.lag:
                self._due[self._pairs + setting.lag] = take
            else:
                self._absorb(take, src, chroma, out)
        return out

    def _absorb(self, take: np.ndarray, src: np.ndarray, chroma: np.ndarray | None, out: np.ndarray) -> None:
        """Take the pixels ``take`` into the background (means := frame, still count 0) and
        clear them from ``out``."""
        self._mean[take] = src[take].astype(np.int32) << 16
        if chroma is not None and self._chroma_mean is not None:
            for p in range(2):
                self._chroma_mean[p][take] = chroma[p][take].astype(np.int32) << 16
        if self._still is not None:
            self._still[take] = 0
        out[take] = 0


def score(path: str, setting: Setting | None, config: dict, skip: int, min_area: float) -> float:
    """Pixel F of ``config`` on one clip with the ghost test at ``setting`` (``None``: off)."""
    GhostTestedBackground.SETTING = setting
    filters.REGISTRY["gaussian_background"] = GhostTestedBackground
    return score_config(path, config, skip, min_area)["pixel_f"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", help="ground-truth folders in the CDnet layout (at least 2)")
    parser.add_argument("-c", "--config", help="YAML config [default: built-in defaults]")
    parser.add_argument(
        "--settings", default="off,1/3/0.5/0,1/3/0.5/8,1/3/0.5/32", help="comma-separated ratio/checks/stillness/lag, or off"
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="worker processes [default: all cores]")
    parser.add_argument("--skip", type=int, default=DEFAULT_SKIP, help=f"frames not scored at a window's start [default: {DEFAULT_SKIP}]")
    args = parser.parse_args(argv)
    try:
        settings = [Setting.parse(s) for s in args.settings.split(",")]
        if len(args.folders) < 2:
            raise ValueError(f"leave-one-clip-out needs at least 2 folders; got {len(args.folders)}")
        config = load_config(args.config)
        min_area = config["events"]["min_area"]
        runs = [(f, s) for f in args.folders for s in settings]
        with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            results = list(pool.map(score, *zip(*runs), *([x] * len(runs) for x in (config, args.skip, min_area))))
    except (MotionDetectError, ValueError) as exc:
        print(f"ghost_study: error: {exc}", file=sys.stderr)
        return 2
    names = [str(s) if s else "off" for s in settings]
    scores = {
        Path(f).name: dict(zip(names, results[i * len(names) : (i + 1) * len(names)], strict=True)) for i, f in enumerate(args.folders)
    }
    clips = list(scores)
    print("| setting | mean pixel F | largest gains and losses |")
    print("| --- | ---: | --- |")
    for name in names:
        moves = sorted(((scores[c][name] - scores[c][names[0]], c) for c in clips), key=lambda m: -abs(m[0]))
        shown = ", ".join(f"{c} {d:+.3f}" for d, c in moves[:4] if abs(d) >= 0.0005) or "-"
        print(f"| {name} | {sum(scores[c][name] for c in clips) / len(clips):.4f} | {shown} |")
    print("\n| clip | " + " | ".join(names) + " |")
    print("| --- |" + " ---: |" * len(names))
    for c in clips:
        print(f"| {c} | " + " | ".join(f"{scores[c][n]:.3f}" for n in names) + " |")
    chosen = leave_one_out(scores)
    held_out = sum(scores[c][chosen[c]] for c in clips) / len(clips)
    picks = {n: sum(1 for c in clips if chosen[c] == n) for n in names}
    print(f"\nleave-one-clip-out: held out {held_out:.4f}; folds' choices: " + ", ".join(f"{n} {k}" for n, k in picks.items() if k))
    return 0


if __name__ == "__main__":
    sys.exit(main())
