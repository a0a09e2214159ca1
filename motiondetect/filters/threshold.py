"""Threshold: grey differences to a binary motion mask."""

from __future__ import annotations

import cv2
import numpy as np

from motiondetect.filters.base import Filter, Kind, Param, element_count


class Threshold(Filter):
    """255 where the input is strictly greater than ``threshold``, else 0.

    The semantics of ``cv2.threshold(src, T, 255, cv2.THRESH_BINARY)``. Input ``(H, W)`` uint8
    grey levels; output ``(H, W)`` uint8 mask in {0, 255}.
    """

    NAME = "threshold"
    KERNEL = "threshold"
    BATCHED = True
    INPUT = Kind.GRAY
    OUTPUT = Kind.MASK
    SENSITIVITY = ("threshold", 1)
    POINTWISE = True
    PARAMS = (
        Param(
            "threshold",
            int,
            25,
            0,
            255,
            "grey levels",
            "a pixel moves when its difference exceeds this; 25 is the PyCUDA case study's value "
            "(Frigate uses 30, Motion 32, ZoneMinder 40)",
        ),
    )

    def reference(self, src, side=None):
        return cv2.threshold(src, self.params["threshold"], 255, cv2.THRESH_BINARY)[1]

    def apply_kernel(self, cuda, src, dst, side=None):
        fn = cuda.function(self.KERNEL, "md_threshold_u8", "PPii")
        n = element_count(dst)
        cuda.launch_1d(fn, int(n), src.gpudata, dst.gpudata, n, np.int32(self.params["threshold"]))
