"""Dilation: grow the motion mask (fill holes in objects; after erosion, the pair is an opening)."""

from __future__ import annotations

import cv2
import numpy as np

from motiondetect.filters.base import Filter, Kind, Param, planes


class Dilation(Filter):
    """Morphological dilation with a square ``kernel_size`` x ``kernel_size`` structuring element.

    Applied ``iterations`` times; pixels outside the frame count as 0, so nothing grows in from
    the border. The result equals ``cv2.dilate(mask, np.ones((k, k), np.uint8), iterations=n)``
    with OpenCV's default border. Input and output ``(H, W)`` uint8 masks (any grey image works).
    Erosion followed by dilation with the same element is a morphological opening; a larger
    dilation also closes the gaps inside objects that a background model leaves.
    """

    NAME = "dilation"
    KERNEL = "dilation"
    BATCHED = True
    INPUT = Kind.MASK
    OUTPUT = Kind.MASK
    PARAMS = (
        Param(
            "kernel_size",
            int,
            5,
            1,
            31,
            "pixels",
            "side of the square structuring element; 5 (after a 3x3 erosion) scored best on the CDnet "
            "clips (README, Detection quality); Frigate dilates once after its threshold",
            odd=True,
        ),
        Param("iterations", int, 1, 1, 16, "passes", "how many times the dilation is applied"),
    )

    @property
    def radius(self) -> int:
        """Half-width of the single structuring element equal to all iterations, in pixels."""
        return self.params["iterations"] * (self.params["kernel_size"] - 1) // 2

    def reference(self, src, side=None):
        k = self.params["kernel_size"]
        return cv2.dilate(src, np.ones((k, k), np.uint8), iterations=self.params["iterations"])

    def apply_kernel(self, cuda, src, dst, side=None):
        frames, height, width = planes(src)
        rows = cuda.buffer(("dilation_rows", src.shape), src.shape)
        args = (np.int32(width), np.int32(height), np.int32(self.radius))
        cuda.launch_2d(
            cuda.function(self.KERNEL, "md_dilate_rows_u8", "PPiii"), (height, width), src.gpudata, rows.gpudata, *args, frames=frames
        )
        cuda.launch_2d(
            cuda.function(self.KERNEL, "md_dilate_cols_u8", "PPiii"), (height, width), rows.gpudata, dst.gpudata, *args, frames=frames
        )
