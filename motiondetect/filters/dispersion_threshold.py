"""DispersionThreshold: an adaptive threshold from local mean and variance (index of dispersion)."""

from __future__ import annotations

import math

import cv2
import numpy as np

from motiondetect.filters.base import Filter, Kind, Param, planes

Q16 = 1 << 16


class DispersionThreshold(Filter):
    """Set a pixel where its window is over-dispersed and the pixel stands out from the window's mean.

    The local threshold of X-ray spot finders (XDS, Kabsch 1988; the DIALS ``dispersion``
    algorithm), applied to a difference image: over the ``kernel_size`` x ``kernel_size`` window
    clipped to the frame (``n`` pixels, mean ``m``, sample variance ``v``), the pixel ``x`` is
    set (255) when

    - ``x > threshold`` (grey levels),
    - ``v / m > 1 + sigma_background * sqrt(2 / (n - 1))``: the window is not plain noise,
      whose index of dispersion (variance over mean, 1 for counting noise) stays near 1, and
    - ``x > m + sigma_strong * sqrt(m)``: the pixel itself is an outlier of its window.

    Input ``(H, W)`` uint8 grey levels (a ``difference`` or ``running_average`` output); output
    ``(H, W)`` uint8 mask in {0, 255}. The threshold adapts to the local noise: a flickering
    region raises its own mean and variance. Both backends decide in exact 64-bit integers from
    the window sums; ``(n - 1) + sigma_background * sqrt(2 (n - 1))`` (tabulated per ``n``) and
    ``sigma_strong**2`` are quantised once to multiples of ``2**-16``.
    """

    NAME = "dispersion_threshold"
    KERNEL = "dispersion_threshold"
    BATCHED = True
    INPUT = Kind.GRAY
    OUTPUT = Kind.MASK
    PARAMS = (
        Param(
            "kernel_size",
            int,
            7,
            3,
            31,
            "pixels",
            "side of the square window; 7 is DIALS' default (kernel_size 3 3, half-widths)",
            odd=True,
        ),
        Param(
            "sigma_background",
            float,
            6.0,
            0.0,
            100.0,
            "standard deviations",
            "how far the index of dispersion must exceed 1; 6 is DIALS' sigma_background",
        ),
        Param(
            "sigma_strong",
            float,
            3.0,
            0.0,
            100.0,
            "standard deviations",
            "how far the pixel must exceed its window's mean, in Poisson sigmas; 3 is DIALS' sigma_strong",
        ),
        Param(
            "threshold",
            int,
            0,
            0,
            255,
            "grey levels",
            "the pixel must also exceed this; 0 (off) is DIALS' global_threshold",
        ),
    )

    def __init__(self, **params) -> None:
        super().__init__(**params)
        k = self.params["kernel_size"]
        n_b = self.params["sigma_background"]
        #: c[n] for n = 0 .. k*k (entries for n < 2 are unused: such windows are never set).
        self.c_table = np.array(
            [0, 0] + [math.floor(((n - 1) + n_b * math.sqrt(2.0 * (n - 1))) * Q16 + 0.5) for n in range(2, k * k + 1)],
            np.int32,
        )
        self.s2_q16 = math.floor(self.params["sigma_strong"] ** 2 * Q16 + 0.5)

    def reference(self, src, side=None):
        k = self.params["kernel_size"]
        border = cv2.BORDER_CONSTANT  # zeros outside: the sums cover the window clipped to the frame
        x = src.astype(np.float64)
        s1 = cv2.boxFilter(x, -1, (k, k), normalize=False, borderType=border).astype(np.int64)
        s2 = cv2.boxFilter(x * x, -1, (k, k), normalize=False, borderType=border).astype(np.int64)
        n = cv2.boxFilter(np.ones_like(x), -1, (k, k), normalize=False, borderType=border).astype(np.int64)
        v = src.astype(np.int64)
        excess = v * n - s1
        dispersed = (n * s2 - s1 * s1) * Q16 > s1 * self.c_table[n]
        strong = (excess > 0) & (excess * excess * Q16 > self.s2_q16 * s1 * n)
        return np.where((v > self.params["threshold"]) & (n >= 2) & dispersed & strong, 255, 0).astype(np.uint8)

    def apply_kernel(self, cuda, src, dst, side=None):
        frames, height, width = planes(src)
        radius = self.params["kernel_size"] // 2
        sum1 = cuda.buffer(("dispersion_sum1", src.shape), src.shape, np.uint32)
        sum2 = cuda.buffer(("dispersion_sum2", src.shape), src.shape, np.uint32)
        table = cuda.constant(("dispersion_c", self.params["kernel_size"], self.params["sigma_background"]), self.c_table)
        size = (np.int32(width), np.int32(height), np.int32(radius))
        rows = cuda.function(self.KERNEL, "md_window_sums_rows_u8", "PPPiii")
        cuda.launch_2d(rows, (height, width), src.gpudata, sum1.gpudata, sum2.gpudata, *size, frames=frames)
        cols = cuda.function(self.KERNEL, "md_dispersion_cols_u8", "PPPPPiiiii")
        cuda.launch_2d(
            cols,
            (height, width),
            src.gpudata,
            sum1.gpudata,
            sum2.gpudata,
            table.gpudata,
            dst.gpudata,
            *size,
            np.int32(self.params["threshold"]),
            np.int32(self.s2_q16),
            frames=frames,
        )
