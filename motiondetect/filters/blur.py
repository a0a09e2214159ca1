"""Blur: box (mean) filter of a grey image, before the difference to calm noise and texture."""

from __future__ import annotations

import cv2
import numpy as np

from motiondetect.filters.base import Filter, Kind, Param, planes


class Blur(Filter):
    """Box blur: the mean of the ``kernel_size`` x ``kernel_size`` window, rounded half up.

    Input and output ``(H, W)`` uint8 grey images. Borders are replicated (a window position
    outside the frame reads the nearest edge pixel, OpenCV's ``BORDER_REPLICATE``). The sums are
    exact integers and the division rounds to nearest, ``(sum + n // 2) // n`` with ``n = k * k``
    (odd, so there are no ties), on both backends: the same values as
    ``cv2.blur(src, (k, k), borderType=cv2.BORDER_REPLICATE)`` (a test checks it).
    Placed before the frame-pair filter it smooths sensor noise and JPEG blocking, as Frigate's
    Gaussian blur does; after it, it averages the difference over a neighbourhood.
    """

    NAME = "blur"
    KERNEL = "blur"
    BATCHED = True
    INPUT = Kind.GRAY
    OUTPUT = Kind.GRAY
    PARAMS = (
        Param(
            "kernel_size",
            int,
            3,
            1,
            31,
            "pixels",
            "side of the square window; 3 is the smallest that smooths (Frigate blurs with sigma 1, about a 3x3 window)",
            odd=True,
        ),
    )

    def reference(self, src, side=None):
        k = self.params["kernel_size"]
        # The window sums s are integers below 2**24, exact in float32. Rounding s / n to
        # nearest in one pass (cv2.convertScaleAbs) is (s + n // 2) // n: n = k * k is odd, so
        # no s / n lies halfway between integers (2 s = n (2 j + 1) has no solution), every
        # s / n is at least 1 / (2 n) >= 1 / 1922 from a halfway point, and s * fl(1 / n) in
        # float is within 255 * 2**-23 of s / n. 7x faster than integer division at 1080p.
        sums = cv2.boxFilter(src, cv2.CV_32F, (k, k), normalize=False, borderType=cv2.BORDER_REPLICATE)
        return cv2.convertScaleAbs(sums, alpha=1.0 / (k * k))

    def apply_kernel(self, cuda, src, dst, side=None):
        frames, height, width = planes(src)
        rows = cuda.buffer(("blur_rows", src.shape), src.shape, np.uint16)
        args = (np.int32(width), np.int32(height), np.int32(self.params["kernel_size"] // 2))
        cuda.launch_2d(
            cuda.function(self.KERNEL, "md_box_rows_u8", "PPiii"), (height, width), src.gpudata, rows.gpudata, *args, frames=frames
        )
        cuda.launch_2d(
            cuda.function(self.KERNEL, "md_box_cols_u8", "PPiii"), (height, width), rows.gpudata, dst.gpudata, *args, frames=frames
        )
