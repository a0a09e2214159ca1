"""Equalize: histogram equalization of the grey frame, to find motion in dark or flat scenes."""

from __future__ import annotations

import cv2
import numpy as np

from motiondetect.filters.base import Filter, Kind, element_count

#: Blocks for the shared-memory histogram (each block makes its own, then adds it once per bin).
_HISTOGRAM_MAX_BLOCKS = 256


class Equalize(Filter):
    """Histogram equalization: spread the grey levels so their cumulative histogram is linear.

    Input and output ``(H, W)`` uint8 grey levels; the same function as
    ``cv2.equalizeHist(src)`` (which the CPU backend calls), bit for bit: with ``i0`` the lowest
    level present, ``lut[i] = rint(255 * (cdf(i) - hist[i0]) / (total - hist[i0]))`` in float32,
    rounded half to even, and a constant image is returned unchanged. On the GPU: a
    shared-memory histogram with atomics (the PyCUDA equalization case study's approach), a
    one-thread table build with the same float32 operations, and a table lookup.
    Placed before the frame-pair filter, it makes a fixed threshold act on the scene's own
    contrast (Frigate's ``improve_contrast`` stretches contrast for the same reason); each
    frame is equalized on its own, so a global brightness change shifts every level less.
    """

    NAME = "equalize"
    KERNEL = "equalize"
    INPUT = Kind.GRAY
    OUTPUT = Kind.GRAY

    def reference(self, src, side=None):
        return cv2.equalizeHist(src)

    def apply_kernel(self, cuda, src, dst, side=None):
        import pycuda.driver as drv

        n = element_count(src)
        hist = cuda.buffer("equalize_histogram", (256,), np.uint32)
        lut = cuda.buffer("equalize_lut", (256,), np.uint8)
        drv.memset_d32_async(hist.gpudata, 0, 256, cuda.stream)
        cuda.launch_strided(
            cuda.function(self.KERNEL, "md_histogram_u8", "PiP"), int(n), _HISTOGRAM_MAX_BLOCKS, src.gpudata, n, hist.gpudata
        )
        cuda.function(self.KERNEL, "md_equalize_lut", "PiP").prepared_async_call(
            (1, 1), (1, 1, 1), cuda.stream, hist.gpudata, n, lut.gpudata
        )
        cuda.launch_1d(cuda.function(self.KERNEL, "md_apply_lut_u8", "PPPi"), int(n), src.gpudata, lut.gpudata, dst.gpudata, n)
