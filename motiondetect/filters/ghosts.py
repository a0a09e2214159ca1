"""The ghosts of a stream's start: an edge test of whole blobs (``gaussian_background.ghost_frames``).

A ghost is what a background model flags where an object it learnt has left: the frame shows the
background there, the model's mean still the object. The bootstrap's median removes what moved
through a stream's first frames, but not someone who stood in view through most of them; the
still-foreground count takes their ghost only on footage clean enough for a pixel to repeat its
grey level exactly ``still_frames`` times in a row, which compressed or noisy footage never does
(docs/evaluation-log.md, "Ghosts: an edge test of whole blobs"). A pixel alone cannot tell a ghost
from an object that stands still; a blob can. An object has its outline in the frame; a ghost
has it in the model's mean and none in the frame (the edge-matching idea of ghost validation).

:func:`ghost_pixels` tests one frame: the model's raw mask is cleaned by a :data:`BLOB_MEDIAN`
median (the default pipeline's next filter) and cut into 8-connected blobs; a blob of at least
:data:`MIN_AREA` working pixels is a ghost when, on the band one pixel either side of its border,
the rounded mean has more gradient (3x3 Sobel, ``|gx| + |gy|``, integers) than :data:`RATIO`
times the frame, **and** the frame inside it is still: its absolute difference to the previous
frame, averaged over the blob less its largest :data:`TRIM`-th (a trimmed mean), is at most
:data:`STILLNESS` times that difference's median over the frame, plus one grey level. The
stillness keeps leaves close to the lens, which are out of focus and have less gradient at their
border than the sharp scene behind them that the mean holds (without it the edge test takes them
in: `sbi_foliage` 0.411 -> 0.155). The trim keeps the test working in rain and snow, whose drops
and flakes change a few percent of a ghost's pixels by a hundred grey levels each frame: with the
plain mean no ghost was still there (`sbi_caviar1` under heavy snow 0.921 against 0.975 clear;
docs/evaluation-log.md, "Bad weather"). :class:`GhostWindow` keeps the test's
state through a stream; a pixel in a ghost blob on :data:`CHECKS` tests in a row is taken in.

The values were chosen by leave-one-clip-out over the 20 dev clips with the test on every frame
(``benchmarks/ghost_study.py``: 1/3/0.5 in all 20 folds, held out 0.8051 against 0.8001). The
model runs the test only on its first frame pairs after the bootstrap: blobs are whole-frame
questions, which the GPU's batched kernel, one pixel a thread through a batch, cannot ask
between frames; over a stream's first frames the CUDA backend runs the model one frame a launch
and asks them on the host with this same code, so both backends give the same bits.
"""

from __future__ import annotations

import cv2
import numpy as np

from motiondetect.filters.base import foreground

#: A blob is a ghost when the mean's gradient on its border band exceeds RATIO times the frame's.
RATIO = 1.0
#: ... and its mean change from the previous frame is at most STILLNESS times the frame's median
#: change, plus one grey level.
STILLNESS = 0.5
#: That mean leaves out the largest ``count // TRIM`` changes of a blob's ``count`` pixels (a
#: tenth: rain or snow crossing it); 0 leaves none out.
TRIM = 10
#: Tests in a row a pixel must be in a ghost blob before it is taken into the background.
CHECKS = 3
#: The median applied to the raw mask before the blobs are cut (the default pipeline's).
BLOB_MEDIAN = 7
#: Smallest blob tested, in working pixels (smaller ones are noise the median leaves).
MIN_AREA = 16

_STEP = np.ones((3, 3), np.uint8)
_REACH = np.ones((BLOB_MEDIAN, BLOB_MEDIAN), np.uint8)


def _gradient(grey: np.ndarray, at: np.ndarray) -> np.ndarray:
    """``|gx| + |gy|`` of a 3x3 Sobel of ``grey`` (H, W) uint8 at the flat indices ``at``: int32,
    at most 2040."""
    gx = cv2.Sobel(grey, cv2.CV_16S, 1, 0, ksize=3).ravel()[at].astype(np.int32)
    gy = cv2.Sobel(grey, cv2.CV_16S, 0, 1, ksize=3).ravel()[at].astype(np.int32)
    return np.abs(gx) + np.abs(gy)


def ghost_pixels(
    frame: np.ndarray,
    previous: np.ndarray,
    mean: np.ndarray,
    mask: np.ndarray,
    ratio: float = RATIO,
    stillness: float = STILLNESS,
    min_area: int = MIN_AREA,
    trim: int = TRIM,
) -> np.ndarray:
    """The pixels of ``mask`` that lie in ghost blobs (the module docstring's test).

    Args:
        frame: (H, W) uint8 grey levels the model compared.
        previous: (H, W) uint8 grey levels of the frame before (the stillness).
        mean: (H, W) uint8 the model's rounded grey-level mean.
        mask: (H, W) uint8 the model's raw mask, 0 or 255.
        ratio: a blob is a ghost when the mean's gradient on its border band exceeds ``ratio``
            times the frame's.
        stillness: ... and its mean ``|frame - previous|`` is at most ``stillness`` times the
            median of ``|frame - previous|`` over the frame, plus 1 grey level.
        min_area: smallest blob tested, pixels.
        trim: the blob's mean change leaves out its largest ``count // trim`` values (0: none).

    Returns:
        (H, W) bool, True on ``mask``'s foreground pixels inside a ghost blob or within the
        median's reach of one (3 pixels: the raw pixels the median took off its edges).
    """
    blobs = majority(mask, BLOB_MEDIAN)
    n, labels, stats, _ = cv2.connectedComponentsWithStats(blobs, connectivity=8)
    if n <= 1:
        return np.zeros(mask.shape, bool)
    labels = labels.ravel()
    # Sums over the band one pixel either side of each border and over each blob, by index: a
    # few percent of the frame. Integer values, exact in float64: the same bits wherever this runs.
    band = np.flatnonzero(cv2.dilate(blobs, _STEP) > cv2.erode(blobs, _STEP))
    on_band = labels[band]
    frame_edge = np.bincount(on_band, weights=_gradient(frame, band), minlength=n)
    mean_edge = np.bincount(on_band, weights=_gradient(mean, band), minlength=n)
    inside = np.flatnonzero(blobs)
    change = cv2.absdiff(frame, previous).ravel()
    area = stats[:, cv2.CC_STAT_AREA].astype(np.int64)
    in_blobs = area.copy()
    in_blobs[0] = 0  # the background, label 0, is not inside
    kept_sum, kept = _trimmed_sums(labels[inside], change[inside], in_blobs, trim)
    still = kept_sum <= (stillness * float(np.median(change)) + 1.0) * kept
    ghost = (mean_edge > ratio * frame_edge) & (area >= min_area) & still
    ghost[0] = False
    if not ghost.any():
        return np.zeros(mask.shape, bool)
    near = cv2.dilate(ghost[labels].reshape(mask.shape).astype(np.uint8), _REACH)
    return (near > 0) & (mask > 0)


def _trimmed_sums(labels: np.ndarray, values: np.ndarray, counts: np.ndarray, trim: int) -> tuple[np.ndarray, np.ndarray]:
    """Per label, the sum of its ``values`` less its largest ``count // trim`` (all when ``trim``
    is 0), and how many were summed: (n,) int64 each.

    Args:
        labels: (M,) int32 label of each value, 0..n-1.
        values: (M,) uint8 values.
        counts: (n,) int64 values per label (``np.bincount(labels)``).
        trim: see :func:`ghost_pixels`.
    """
    if not trim:
        return np.bincount(labels, weights=values, minlength=len(counts)).astype(np.int64), counts
    ordered = np.sort(labels.astype(np.int64) << 8 | values)  # by label, then value: one key
    totals = np.concatenate(([0], np.cumsum(ordered & 0xFF)))
    starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
    kept = counts - counts // trim
    return totals[starts + kept] - totals[starts], kept


def majority(mask: np.ndarray, size: int) -> np.ndarray:
    """The binary median of ``mask`` ((H, W) uint8, 0 or 255) over ``size`` x ``size`` windows,
    replicated borders: 255 where more than half the window is set, as ``cv2.medianBlur`` gives
    on such a mask, by a box sum (a fifth of its time at 7 x 7). ``size``: odd, at most 15 (the
    count fits a byte)."""
    counts = cv2.boxFilter(mask >> 7, -1, (size, size), normalize=False, borderType=cv2.BORDER_REPLICATE)
    return np.where(counts > size * size // 2, np.uint8(255), np.uint8(0))


class GhostWindow:
    """One stream's ghost test: the previous frame and each pixel's run of ghost tests.

    :meth:`take` is called on each frame pair the test covers, in order; the first call only
    keeps its frame (the stillness needs the frame before). ``ratio``, ``stillness``, ``checks``
    and ``trim`` are the test's (:func:`ghost_pixels`, :data:`CHECKS`); the model uses the
    defaults, ``benchmarks/ghost_study.py`` others.
    """

    def __init__(self, ratio: float = RATIO, stillness: float = STILLNESS, checks: int = CHECKS, trim: int = TRIM) -> None:
        self.ratio, self.stillness, self.checks, self.trim = ratio, stillness, checks, trim
        self.previous: np.ndarray | None = None  # (H, W) uint8
        self.runs: np.ndarray | None = None  # (H, W) int32, ghost tests in a row

    def take(self, frame: np.ndarray, mean_q16: np.ndarray, mask: np.ndarray) -> np.ndarray | None:
        """Test one frame; return the pixels to take into the background, or ``None``.

        Args:
            frame: (H, W) uint8 grey levels the model compared.
            mean_q16: (H, W) int32 the model's grey-level mean after the frame (grey level * 2**16).
            mask: (H, W) uint8 the model's raw mask of the frame: 255 foreground, and 0 or the
                weak level (128, :data:`~motiondetect.filters.base.WEAK`), which is no motion here.

        Returns:
            (H, W) bool, the pixels in a ghost blob on ``checks`` tests in a row (their runs
            restart), or ``None`` when there are none.
        """
        if self.previous is None or self.previous.shape != frame.shape:
            self.previous, self.runs = frame.copy(), np.zeros(frame.shape, np.int32)
            return None
        mask = foreground(mask)  # 255 alone: blobs of foreground
        mean = ((mean_q16 + (1 << 15)) >> 16).astype(np.uint8)
        ghost = ghost_pixels(frame, self.previous, mean, mask, self.ratio, self.stillness, trim=self.trim)
        np.copyto(self.previous, frame)
        self.runs = np.where(ghost, self.runs + 1, 0).astype(np.int32)
        take = self.runs >= self.checks
        if not take.any():
            return None
        self.runs[take] = 0
        return take


def tested_until(filters) -> int:
    """The last frame pair of a stream that any of ``filters`` tests for ghosts (a model's
    ``ghost_pairs``), which the CUDA backend runs one frame a launch; 0 when none does.
    Benchmarks of the steady rate warm up past it."""
    return max((f.ghost_pairs[-1] for f in filters if len(getattr(f, "ghost_pairs", ()))), default=0)
