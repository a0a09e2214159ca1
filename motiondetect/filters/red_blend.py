"""RedBlend: highlight motion by blending the mask into the red channel of the frame."""

from __future__ import annotations

import cv2
import numpy as np

from motiondetect.filters.base import Filter, Kind, Param, element_count


class RedBlend(Filter):
    """Where the mask is set, ``R' = round((1 - alpha) * R + alpha * 255)``; B, G unchanged.

    Rounds half up. Input ``(H, W)`` uint8 mask with side input ``frame`` (the original
    ``(H, W, 3)`` uint8 BGR frame); output a new ``(H, W, 3)`` uint8 BGR frame. Unmasked pixels
    are copied unchanged.
    """

    NAME = "red_blend"
    KERNEL = "red_blend"
    INPUT = Kind.MASK
    OUTPUT = Kind.BGR
    POINTWISE = True
    SIDE_INPUT = "frame"
    PARAMS = (
        Param(
            "alpha", float, 0.5, 0.0, 1.0, "fraction",
            "weight of full red over the pixel's own red; 0.5 is the case study's half blend",
        ),
    )

    def __init__(self, **params) -> None:
        super().__init__(**params)
        alpha = self.params["alpha"]
        red = np.arange(256, dtype=np.float64)
        #: lut[R] = blended red for an original red R; both backends index this one table.
        self.lut = np.floor((1.0 - alpha) * red + alpha * 255.0 + 0.5).astype(np.uint8)

    def reference(self, src, side=None):
        out = side.copy()
        # Only the mask's bounding box can change: its red channel is taken out, blended where
        # the mask is set and put back (the whole frame's split and merge cost 4x more at 1080p
        # when the box is small, and up to 1.3x less when it covers the frame).
        x, y, w, h = cv2.boundingRect(src)
        if w:
            region = out[y : y + h, x : x + w]  # a view: insertChannel writes into out
            red = cv2.extractChannel(region, 2)
            cv2.copyTo(cv2.LUT(red, self.lut), src[y : y + h, x : x + w], red)
            cv2.insertChannel(red, region, 2)
        return out

    def apply_kernel(self, cuda, src, dst, side=None):
        lut = cuda.constant(("red_blend_lut", self.params["alpha"]), self.lut)
        fn = cuda.function(self.KERNEL, "md_red_blend_u8", "PPPPi")
        n = element_count(src)
        cuda.launch_1d(fn, int(n), side.gpudata, src.gpudata, lut.gpudata, dst.gpudata, n)
