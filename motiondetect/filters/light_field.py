"""The light field: foreground that a smooth gain over the background explains is background.

A cloud's shadow, or the sun coming out, multiplies the scene's brightness by a gain that varies
smoothly over the picture (60 % on the lawn of the dev set's sunlight clip, less on the walls),
which the Gaussian model's one frame-wide gain (``exposure``) cannot follow. A gain fitted per
region follows it, but also explains away a dark car or a person that covers the region. What
tells the two apart is texture: under a change of light the background's texture is still there,
multiplied by the gain; over an object it is gone. So the gain is measured only at *evidence*
pixels and spread from them:

1. ``x`` is the frame's grey level, ``b`` the background mean it was compared with (rounded),
   both ``(H, W)`` uint8. A pixel is evidence where the Pearson correlation of ``x`` and ``b``
   over its 5x5 window (``cv2.BORDER_REFLECT`` at the edges) is at least 0.9, the background's
   window has a standard deviation of at least 3 grey levels and the frame's of at least 1.5
   (the cloud may have darkened it), ``b >= 16`` and ``1 <= x <= 254``: the normalised
   cross-correlation test of Jacques, Jung and Musse (SIBGRAPI 2005) for shadows, on the ratio
   model of Skifstad and Jain (CVGIP 1989). Its ratio is ``round(256 x / b)`` (Q8).
2. Each 8x8 block's gain is the lower median of its evidence ratios when it has at least 8 of
   them (flat blocks, objects: none). The block grid is then filled and smoothed by the lower
   median of the known gains in the 5x5 blocks around each block (the grid's edge repeated),
   or 1 where none is known.
3. ``g`` is that grid interpolated bilinearly between the blocks' centres (``cv2.resize``'s
   ``INTER_LINEAR`` geometry, in sixteenths of a block: exact integers). A foreground pixel
   with ``|x - g b| <= tolerance`` grey levels and ``|g - 1| >= 0.05`` is background.

The mask changes, the model does not: it goes on learning from its own mask, so the kernels can
run after the model on a whole batch (on the 21 dev clips, vetoing before the model learns
scored 0.001 lower on average; docs/evaluation-log.md, "Changing sunlight").

All arithmetic is integer (Q8 ratios, Q16 gains, moments times 25**2), so this CPU reference and
``kernels/light_field.cu`` give the same bits.
"""

from __future__ import annotations

import cv2
import numpy as np

from motiondetect.filters.base import planes

#: Side of a block of the gain grid, pixels of the working size.
BLOCK = 8
#: Half the side of the correlation window (5x5) and of the grid's smoothing window (5x5 blocks).
RADIUS, SPREAD = 2, 2
#: Evidence pixels a block needs for a gain of its own.
MIN_EVIDENCE = 8
#: A gain closer to 1 than this (Q16: 0.05) explains nothing the model does not already.
MIN_CHANGE_Q16 = 3277
#: Marks a pixel that is no evidence and a block without a gain (ratios and gains are >= 0).
UNKNOWN = -1
_WINDOW = (2 * RADIUS + 1) ** 2
_FAR = np.int64(1) << 40  # sorts after every ratio


def evidence_ratios(x: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Step 1 of the module docstring: ``(H, W)`` int64, ``round(256 x / b)`` (Q8, half up) at
    evidence pixels, :data:`UNKNOWN` elsewhere; ``x`` and ``b`` are ``(H, W)`` uint8 grey levels."""
    xs, bs = x.astype(np.float64), b.astype(np.float64)

    def window_sum(a: np.ndarray) -> np.ndarray:  # exact: sums of integers below 2**53
        return cv2.boxFilter(a, cv2.CV_64F, (2 * RADIUS + 1,) * 2, normalize=False, borderType=cv2.BORDER_REFLECT).astype(np.int64)

    sx, sb = window_sum(xs), window_sum(bs)
    n = _WINDOW
    vx = n * window_sum(xs * xs) - sx * sx
    vb = n * window_sum(bs * bs) - sb * sb
    cov = n * window_sum(xs * bs) - sx * sb
    x64, b64 = x.astype(np.int64), b.astype(np.int64)
    evidence = (b64 >= 16) & (x64 >= 1) & (x64 <= 254) & (vb >= 9 * n * n) & (4 * vx >= 9 * n * n)
    evidence &= (cov > 0) & (100 * cov * cov >= 81 * vx * vb)
    return np.where(evidence, (x64 * 256 + b64 // 2) // np.maximum(b64, 1), UNKNOWN)


def _lower_median(values: np.ndarray, least: int, none: int) -> np.ndarray:
    """The lower median along the last axis of ``values`` (int64, :data:`UNKNOWN` for a missing
    value), where at least ``least`` are known, else ``none``."""
    known = values != UNKNOWN
    count = known.sum(axis=-1)
    ordered = np.sort(np.where(known, values, _FAR), axis=-1)
    middle = np.take_along_axis(ordered, np.maximum(count - 1, 0)[..., None] // 2, axis=-1)[..., 0]
    return np.where(count >= max(least, 1), middle, none)


def block_gains(ratios: np.ndarray) -> np.ndarray:
    """Step 2 of the module docstring: the smoothed block grid ``(ceil(H / 8), ceil(W / 8))``
    int64 (Q8 gains) of :func:`evidence_ratios`' ``(H, W)`` output."""
    h, w = ratios.shape
    rows, cols = -(-h // BLOCK), -(-w // BLOCK)
    padded = np.pad(ratios, ((0, rows * BLOCK - h), (0, cols * BLOCK - w)), constant_values=UNKNOWN)
    blocks = padded.reshape(rows, BLOCK, cols, BLOCK).transpose(0, 2, 1, 3).reshape(rows, cols, BLOCK * BLOCK)
    grid = _lower_median(blocks, MIN_EVIDENCE, UNKNOWN)
    side = 2 * SPREAD + 1
    windows = np.lib.stride_tricks.sliding_window_view(np.pad(grid, SPREAD, mode="edge"), (side, side))
    return _lower_median(windows.reshape(rows, cols, side * side), 1, 256)


def _taps(size: int, cells: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per pixel along one axis of ``size`` pixels: the two grid cells and the second's weight in
    sixteenths that ``cv2.resize`` (``INTER_LINEAR``) uses to enlarge ``cells`` cells 8 times:
    the source coordinate ``(i + 1/2) / 8 - 1/2 = (2 i - 7) / 16``, clamped to the grid."""
    t = 2 * np.arange(size) - (BLOCK - 1)
    c, f = t // 16, t % 16
    clamp = (c < 0) | (c >= cells - 1)
    c = np.clip(c, 0, cells - 1)
    f = np.where(clamp, 0, f)
    return c, np.minimum(c + 1, cells - 1), f


def gain_q16(grid: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """Step 3's gain ``g`` of every pixel, ``shape`` = (H, W), int64 Q16 (65536 is 1.0): ``grid``
    (:func:`block_gains`, Q8) interpolated bilinearly between the blocks' centres."""
    (y0, y1, fy), (x0, x1, fx) = _taps(shape[0], grid.shape[0]), _taps(shape[1], grid.shape[1])
    top = (16 - fx) * grid[y0][:, x0] + fx * grid[y0][:, x1]
    bottom = (16 - fx) * grid[y1][:, x0] + fx * grid[y1][:, x1]
    return (16 - fy)[:, None] * top + fy[:, None] * bottom


def explained(x: np.ndarray, b: np.ndarray, tolerance_q16: int) -> np.ndarray:
    """Where the light field explains the frame (the module docstring): ``(H, W)`` bool, True
    where ``|x - g b| <= tolerance_q16`` (Q16 grey levels) and ``|g - 1| >= 0.05``; ``x`` the
    frame's and ``b`` the compared background's grey levels, each ``(H, W)`` uint8."""
    g = gain_q16(block_gains(evidence_ratios(x, b)), x.shape)
    miss = (x.astype(np.int64) << 16) - g * b
    return (np.abs(miss) <= tolerance_q16) & (np.abs(g - 65536) >= MIN_CHANGE_Q16)


def queue_light_field(cuda, state_key, x, b, mask, tolerance_q16: int) -> None:
    """Queue the four kernels of ``kernels/light_field.cu`` on :attr:`cuda.stream`: ``mask``
    (device ``(K, H, W)`` or ``(H, W)`` uint8, the model's output) loses the foreground that
    the light field of ``x`` (the frames) and ``b`` (the compared background means), of the same
    shape, explains, as :func:`explained` decides. ``state_key`` names the scratch buffers (the
    filter's :meth:`~motiondetect.filters.base.Filter.state_key`)."""
    frames, height, width = planes(x)
    rows, cols = -(-height // BLOCK), -(-width // BLOCK)
    ratios = cuda.buffer(state_key("light_field_ratios"), (frames, height, width), np.int32)
    gains = cuda.buffer(state_key("light_field_gains"), (frames, rows, cols), np.int32)
    smooth = cuda.buffer(state_key("light_field_smooth"), (frames, rows, cols), np.int32)
    fn = cuda.function("light_field", "md_light_field_ratio_u8", "PPPii")
    cuda.launch_2d(fn, (height, width), x.gpudata, b.gpudata, ratios.gpudata, width, height, frames=frames)
    fn = cuda.function("light_field", "md_light_field_blocks", "PPiiii")
    cuda.launch_2d(fn, (rows, cols), ratios.gpudata, gains.gpudata, width, height, cols, rows, frames=frames)
    fn = cuda.function("light_field", "md_light_field_smooth", "PPii")
    cuda.launch_2d(fn, (rows, cols), gains.gpudata, smooth.gpudata, cols, rows, frames=frames)
    fn = cuda.function("light_field", "md_light_field_veto_u8", "PPPPiiiiii")
    cuda.launch_2d(
        fn,
        (height, width),
        x.gpudata,
        b.gpudata,
        smooth.gpudata,
        mask.gpudata,
        width,
        height,
        cols,
        rows,
        tolerance_q16,
        MIN_CHANGE_Q16,
        frames=frames,
    )
