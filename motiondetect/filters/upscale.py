"""Upscale: bring a mask made at the working resolution back to the frame's size.

The inverse of :mod:`motiondetect.filters.downscale` (see there for the partition both use).
"""

from __future__ import annotations

import numpy as np

from motiondetect.filters.base import Filter, Kind, planes
from motiondetect.filters.downscale import block_starts


def block_repeats(small: int, full: int) -> np.ndarray:
    """How many of ``full`` output pixels each of ``small`` input pixels becomes along one axis:
    (small,) int64, summing to ``full``; the sizes of the blocks of :func:`block_bounds`."""
    return np.diff(block_bounds(full, small))


def block_bounds(full: int, small: int) -> np.ndarray:
    """The ``small + 1`` bounds of the blocks partitioning ``full`` pixels (the downscale's
    partition, :func:`~motiondetect.filters.downscale.block_starts`, then ``full``): block ``i``
    covers ``bounds[i]`` to ``bounds[i + 1] - 1``, and output pixel ``y`` of an upscale belongs
    to block ``y * small // full``."""
    return np.append(block_starts(full, small), full)


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
