"""Upscale: bring a mask made at the working resolution back to the frame's size.

The inverse of :mod:`motiondetect.filters.downscale` (see there for the partition both use).
"""

from __future__ import annotations

import numpy as np

from motiondetect.filters.base import Filter, Kind, planes
from motiondetect.filters.downscale import block_bounds


def block_repeats(small: int, full: int) -> np.ndarray:
    """How many of ``full`` output pixels each of ``small`` input pixels becomes along one axis:
    (small,) int64, summing to ``full``; the sizes of the blocks of
    :func:`~motiondetect.filters.downscale.block_bounds` (``full``, ``small``)."""
    return np.diff(block_bounds(full, small))


class Upscale(Filter):
    """Bring a mask made at the working resolution back to the frame's size (nearest neighbour).

    Input ``(h, w)`` uint8 mask from the filters after :class:`Downscale`; side input
    ``frame``, the ``(H, W, 3)`` BGR frame, whose size is the output's; output ``(H, W)`` uint8
    mask where each pixel takes the value of the block it belongs to (``y * h // H``,
    ``x * w // W``), the same partition :class:`Downscale` averaged over.
    """

    NAME = "upscale"
    KERNEL = "upscale"
    BATCHED = True
    INPUT = Kind.MASK
    OUTPUT = Kind.MASK
    SIDE_INPUT = "frame"
    RESAMPLE = "up"

    def output_shape(self, input_shape, side_shape=None):
        if side_shape is None:
            raise ValueError("upscale: the output size comes from the frame (side input); got none")
        return tuple(side_shape[:2])

    def reference(self, src, side=None):
        height, width = self.output_shape(src.shape, side.shape)
        if src.shape == (height, width):
            return src.copy()
        rows, cols = block_repeats(src.shape[0], height), block_repeats(src.shape[1], width)
        # Columns first: the per-pixel gather then runs on h rows, and the rows are copied whole
        # (2x faster than rows first at 1080p).
        return np.repeat(np.repeat(src, cols, axis=1), rows, axis=0)

    def apply_kernel(self, cuda, src, dst, side=None):
        frames, in_h, in_w = planes(src)
        _, height, width = planes(dst)
        fn = cuda.function(self.KERNEL, "md_upscale_nearest_u8", "PPiiii")
        cuda.launch_2d(
            fn, (height, width), src.gpudata, dst.gpudata, np.int32(in_w), np.int32(in_h), np.int32(width), np.int32(height), frames=frames
        )
