"""Downscale: detect motion at a working resolution (:mod:`~motiondetect.filters.upscale` restores the size).

Peers do the same for speed and robustness: Frigate resizes to ``frame_height`` 100 rows and
DVR-Scan subsamples by ``--downscale-factor``. Working at a resolution that does not grow with
the camera's makes the structuring elements and windows after it cover the same share of the
scene on a 320x240 and a 1920x1080 stream, and cuts the work of every filter in between.

Both filters use one partition of the frame: output row ``i`` of an ``h``-row image stands for
the input rows ``y`` with ``y * h // H == i`` (columns alike), blocks of ``f`` rows when the
frame's height ``H`` is ``f * h``. :class:`Downscale` averages each block; :class:`Upscale`
copies each block's value back to all of its pixels, so it needs only the two shapes.
"""

from __future__ import annotations

import cv2
import numpy as np

from motiondetect.filters.base import Filter, Kind, Param, planes


def block_starts(size: int, blocks: int) -> np.ndarray:
    """First input index of each of ``blocks`` blocks partitioning ``size`` (ceil(i * size / blocks))."""
    i = np.arange(blocks, dtype=np.int64)
    return (i * size + blocks - 1) // blocks


class Downscale(Filter):
    """Shrink a grey image by a whole factor to a working height of at least ``height`` rows.

    The factor is ``f = max(1, H // height)`` and the output ``(max(1, H // f), max(1, W // f))``
    uint8 grey levels, each pixel the mean of its block of the input (about ``f`` x ``f``
    pixels; see the module docstring), an exact integer sum rounded half up on both backends.
    With ``f = 1`` the image passes through unchanged. Input ``(H, W)`` uint8 grey levels.
    Follow it by the filters to run at the working resolution, then :class:`Upscale`.
    """

    NAME = "downscale"
    KERNEL = "downscale"
    BATCHED = True
    INPUT = Kind.GRAY
    OUTPUT = Kind.GRAY
    RESAMPLE = "down"
    PARAMS = (
        Param(
            "height", int, 240, 16, 4320, "pixels",
            "working height: frames are shrunk by the largest whole factor that keeps at least this "
            "many rows; 240 scored best on the CDnet clips (README, Detection quality); Frigate uses 100",
        ),
    )

    def factor(self, height: int) -> int:
        """The whole shrink factor for a frame ``height`` pixels tall."""
        return max(1, height // self.params["height"])

    def output_shape(self, input_shape, side_shape=None):
        height, width = input_shape[:2]
        f = self.factor(height)
        return (max(1, height // f), max(1, width // f))

    def reference(self, src, side=None):
        out_h, out_w = self.output_shape(src.shape)
        height, width = src.shape
        if (out_h, out_w) == (height, width):
            return src.copy()  # factor 1: every block is one pixel
        rows = np.append(block_starts(height, out_h), height)
        cols = np.append(block_starts(width, out_w), width)
        # Block sums from the summed-area table (exact int32 for frames below 2**31 / 255 pixels).
        table = cv2.integral(src, sdepth=cv2.CV_32S)
        corners = table[rows[:, None], cols[None, :]].astype(np.int64)
        sums = corners[1:, 1:] - corners[:-1, 1:] - corners[1:, :-1] + corners[:-1, :-1]
        counts = np.outer(np.diff(rows), np.diff(cols))
        return ((sums + counts // 2) // counts).astype(np.uint8)

    def apply_kernel(self, cuda, src, dst, side=None):
        frames, height, width = planes(src)
        _, out_h, out_w = planes(dst)
        fn = cuda.function(self.KERNEL, "md_downscale_area_u8", "PPiiii")
        cuda.launch_2d(fn, (out_h, out_w), src.gpudata, dst.gpudata, np.int32(width), np.int32(height), np.int32(out_w), np.int32(out_h), frames=frames)
