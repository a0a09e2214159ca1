"""Erosion: remove isolated mask pixels (noise) by morphological erosion."""

from __future__ import annotations

import cv2
import numpy as np

from motiondetect.filters.base import Filter, Kind, Param, planes


class Erosion(Filter):
    """Morphological erosion with a square ``kernel_size`` x ``kernel_size`` structuring element.

    Applied ``iterations`` times; pixels outside the frame count as 255, so edges are not eaten
    away. The result equals ``cv2.erode(mask, np.ones((k, k), np.uint8), iterations=n)`` with
    OpenCV's default border. Input and output ``(H, W)`` uint8 masks (any grey image works).
    """

    NAME = "erosion"
    KERNEL = "erosion"
    BATCHED = True
    INPUT = Kind.MASK
    OUTPUT = Kind.MASK
    PARAMS = (
        Param(
            "kernel_size",
            int,
            3,
            1,
            31,
            "pixels",
            "side of the square structuring element; 3 is the case study's and DVR-Scan's choice "
            "below 1280 pixels wide (it uses 5 and 7 for larger frames)",
            odd=True,
        ),
        Param("iterations", int, 1, 1, 16, "passes", "how many times the erosion is applied"),
    )

    @property
    def radius(self) -> int:
        """Half-width of the single structuring element equal to all iterations, in pixels."""
        return self.params["iterations"] * (self.params["kernel_size"] - 1) // 2

    def halo(self) -> int:
        """The output reaches :attr:`radius` pixels into the input on every side."""
        return self.radius

    def reference(self, src, side=None):
        k = self.params["kernel_size"]
        return cv2.erode(src, np.ones((k, k), np.uint8), iterations=self.params["iterations"])

    def apply_kernel(self, cuda, src, dst, side=None):
        frames, height, width = planes(src)
        rows = cuda.buffer(("erosion_rows", src.shape), src.shape)
        args = (np.int32(width), np.int32(height), np.int32(self.radius))
        cuda.launch_2d(
            cuda.function(self.KERNEL, "md_erode_rows_u8", "PPiii"), (height, width), src.gpudata, rows.gpudata, *args, frames=frames
        )
        cuda.launch_2d(
            cuda.function(self.KERNEL, "md_erode_cols_u8", "PPiii"), (height, width), rows.gpudata, dst.gpudata, *args, frames=frames
        )
