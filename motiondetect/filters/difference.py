"""Difference: absolute difference of the current and reference grey frames."""

from __future__ import annotations

import cv2
import numpy as np

from motiondetect.filters.base import Filter, Kind, element_count


class Difference(Filter):
    """``|current - reference|`` per pixel (absdiff), the frame-pair step of the pipeline.

    Input ``(H, W)`` uint8 grey (the current frame) with side input ``reference`` (the previous
    frame's grey image, same shape); output ``(H, W)`` uint8 in grey levels. Same as
    ``cv2.absdiff``. The cuBLAS engine computes ``current - reference`` with SGEAM on float32
    copies (exact for whole numbers), then takes the absolute value.
    """

    NAME = "difference"
    KERNEL = "difference"
    BATCHED = True
    INPUT = Kind.GRAY
    OUTPUT = Kind.GRAY
    POINTWISE = True
    SIDE_INPUT = "reference"
    ENGINES = ("kernel", "cublas")

    def reference(self, src, side=None):
        return cv2.absdiff(src, side)

    def apply_kernel(self, cuda, src, dst, side=None):
        fn = cuda.function(self.KERNEL, "md_absdiff_u8", "PPPi")
        n = element_count(dst)
        cuda.launch_1d(fn, int(n), src.gpudata, side.gpudata, dst.gpudata, n)

    def apply_cublas(self, cuda, src, dst, side=None):
        from motiondetect.gpu.blas import abs_to_u8, to_float

        current, reference = to_float(cuda, src, "diff_current"), to_float(cuda, side, "diff_reference")
        signed = cuda.buffer(("cublas", "diff_signed"), src.shape, np.float32)
        cuda.blas.add(current, reference, signed, alpha=1.0, beta=-1.0)
        abs_to_u8(cuda, signed, dst)
