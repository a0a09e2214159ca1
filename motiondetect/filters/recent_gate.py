"""The recent-background gate: traffic that the Gaussian's wide variance calls background.

Where a queue of different cars passes through the first seconds, the Gaussian model's warm-up
learns their spread as the road's variance, and afterwards a grey or silver car lies within
``sigmas`` standard deviations of a mean that is itself an average of cars: background
(docs/evaluation-log.md, "Three windows of the highway camera"). Sample-based models (ViBe, GSOC,
SuBSENSE) find it because no sample matches a new car; one sample is enough here, kept with the
model in :class:`~motiondetect.filters.gaussian_background.GaussianBackground`:

1. ``recent`` is each pixel's most recent *still background* grey level: the frame's, wherever
   the model calls the pixel background and its grey level is within :data:`STILL` of the
   previous frame's. It starts from the stream's first frame, becomes the rounded mean at the
   bootstrap's pair and the frame itself on a change of light (a light switch or an exposure
   gain), so it never holds a ghost of the start nor an old brightness.
2. Past the warm-up, a pixel is *eligible* where its variance exceeds :data:`MIN_SIGMA` squared
   (the wide model the gate is for; a tight one finds the car itself) and ``d = x - recent``
   exceeds ``level`` grey levels either way.
3. An eligible pixel that the mask does not already hold as foreground becomes foreground where
   its :data:`WINDOW` x :data:`WINDOW` neighbourhood (the edge replicated) moved away from
   ``recent`` together: the sum ``S`` of its ``d`` exceeds ``level`` times the window's pixels,
   ``S`` has ``d``'s sign, and ``|S|`` is at least :data:`COHERENCE_TENTHS` tenths of the sum of ``|d|``. A car
   darkens or brightens a whole patch of road one way; waving leaves and rippling water, which
   the variance is right to learn, move their pixels both ways at once.

The mask changes, the model does not (it learns from its own mask), so on the GPU the gate runs
after the model on a whole batch: the model's kernel writes ``2 d + eligible`` (int16) for each
frame and ``kernels/recent_gate.cu`` sums the windows. Integer arithmetic on both backends.

On the 20 dev clips and the highway camera's two further windows (docs/evaluation-log.md, "The
recent-background gate") the window 770..1069 rises from 0.852 to 0.868 pixel F at the default
``level`` 15, which every fold of the 23-clip leave-one-clip-out chose (held out 0.786 -> 0.805).
"""

from __future__ import annotations

import cv2
import numpy as np

from motiondetect.filters.base import planes

#: Grey levels: a background pixel's change from the previous frame up to which its grey level
#: is taken as its recent background (about twice a camera's noise; motion blurs more).
STILL = 6
#: Grey levels: the model's standard deviation above which a pixel is eligible (the floor 6 plus
#: what the warm-up learns from traffic; leaves and water often pass it too, the window decides).
MIN_SIGMA = 15
#: Pixels: the side of the square window whose deviations are summed (the median's, 9).
WINDOW = 9
#: The share of the window's summed ``|d|`` that its signed sum must keep, as tenths.
COHERENCE_TENTHS = 8


def min_var_q8() -> int:
    """The Q8 variance (grey levels squared times 256) above which a pixel is eligible."""
    return MIN_SIGMA * MIN_SIGMA * 256


def deviations(x: np.ndarray, recent: np.ndarray, var: np.ndarray, level: int, active: bool) -> np.ndarray:
    """``2 d + eligible`` for one frame, as the model's kernel writes it.

    Args:
        x: (H, W) uint8 grey levels of the frame.
        recent: (H, W) uint8 recent still background grey levels (before this frame's update).
        var: (H, W) int32 Q8 variances after this frame's update.
        level: grey levels, the gate's ``level`` (``recent_gate``), 1..255.
        active: past the warm-up (no pixel is eligible before).

    Returns:
        (H, W) int16.
    """
    d = x.astype(np.int16) - recent.astype(np.int16)
    eligible = (var > min_var_q8()) & (np.abs(d) > level) if active else np.zeros(x.shape, bool)
    return (d << 1) | eligible.astype(np.int16)


def window_sums(values: np.ndarray) -> np.ndarray:
    """(H, W) int32: the sum of ``values`` ((H, W) int16) over each pixel's :data:`WINDOW` x
    :data:`WINDOW` window, the edge replicated (``cv2.BORDER_REPLICATE``). OpenCV's unnormalised
    box filter into int32 sums integers exactly (81 deviations of at most 255 in magnitude), about
    20 times faster than summed-area tables in NumPy at 320x240."""
    return cv2.boxFilter(values, cv2.CV_32S, (WINDOW, WINDOW), normalize=False, borderType=cv2.BORDER_REPLICATE)


def gate(diff: np.ndarray, mask: np.ndarray, level: int) -> None:
    """Set ``mask`` ((H, W) uint8, changed in place) to 255 where the gate finds traffic.

    Args:
        diff: (H, W) int16, :func:`deviations` of the frame.
        mask: the model's mask (0, 128 or 255) after its light field and ghost test.
        level: grey levels, as given to :func:`deviations`.
    """
    ys, xs = np.nonzero((diff & 1).astype(bool) & (mask != 255))  # the candidates: a few per cent
    if not ys.size:
        return
    d = diff >> 1
    total, spread = window_sums(d)[ys, xs], window_sums(np.abs(d))[ys, xs]
    magnitude = np.abs(total)
    fire = (magnitude > level * WINDOW * WINDOW) & (10 * magnitude >= COHERENCE_TENTHS * spread)
    fire &= np.sign(d[ys, xs]) == np.sign(total)  # d is never 0 where eligible
    mask[ys[fire], xs[fire]] = 255


def queue_gate(cuda, diff, mask, level: int) -> None:
    """Queue ``kernels/recent_gate.cu`` on :attr:`cuda.stream`: :func:`gate` on each frame of
    ``mask`` (device ``(K, H, W)`` or ``(H, W)`` uint8) from ``diff`` (device int16, same shape)."""
    frames, height, width = planes(mask)
    fn = cuda.function("recent_gate", "md_recent_gate_u8", "PPiii")
    cuda.launch_2d(fn, (height, width), diff.gpudata, mask.gpudata, width, height, level, frames=frames)
