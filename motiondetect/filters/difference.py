"""Difference: absolute difference of the current and reference grey frames."""

from __future__ import annotations

import cv2

from motiondetect.filters.base import Filter, Kind, element_count


class Difference(Filter):
    """``|current - reference|`` per pixel (absdiff), the frame-pair step of the pipeline.

    Input ``(H, W)`` uint8 grey (the current frame) with side input ``reference`` (the previous
    frame's grey image, same shape); output ``(H, W)`` uint8 in grey levels. Same as
    ``cv2.absdiff``.
    """

    NAME = "difference"
    KERNEL = "difference"
    INPUT = Kind.GRAY
    OUTPUT = Kind.GRAY
    SIDE_INPUT = "reference"

    def reference(self, src, side=None):
        return cv2.absdiff(src, side)

    def apply(self, cuda, src, dst, side=None):
        fn = cuda.function(self.KERNEL, "md_absdiff_u8", "PPPi")
        n = element_count(dst)
        cuda.launch_1d(fn, int(n), src.gpudata, side.gpudata, dst.gpudata, n)
