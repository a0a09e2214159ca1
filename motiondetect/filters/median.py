"""Median: remove speckle from a motion mask by a majority vote over a window."""

from __future__ import annotations

import cv2
import numpy as np

from motiondetect.filters.base import WEAK, Filter, Kind, Param, foreground, planes, set_pixels


class Median(Filter):
    """Binary median (majority vote): 255 where more than half of the window is set, else 0.

    The window is ``kernel_size`` x ``kernel_size`` pixels. Input and output ``(H, W)`` uint8
    masks; any non-zero input pixel counts as set. Borders are replicated (OpenCV's
    ``BORDER_REPLICATE``). For a 0/255 mask this equals ``cv2.medianBlur(mask, kernel_size)``:
    the median of a window of 0s and 255s is 255 exactly when 255s are the majority. Unlike an
    erosion, it keeps the outline of solid regions and fills pinholes in them, while removing
    isolated specks such as leaves flickering in a background model.

    A mask with the weak level (:data:`~motiondetect.filters.base.WEAK`, 128, which a background
    model writes for the dilation that grows into it) is voted plane by plane: 255 where more
    than half of the window is above 128, else 128 where more than half is set, else 0. That is
    the median of the three-level image (threshold decomposition), and a 0/255 mask's vote as
    above.
    """

    NAME = "median"
    KERNEL = "median"
    BATCHED = True
    INPUT = Kind.MASK
    OUTPUT = Kind.MASK
    PARAMS = (
        Param(
            "kernel_size",
            int,
            9,
            1,
            31,
            "pixels",
            "side of the square window; 9 (with sigmas 2.0) was every leave-one-clip-out fold's choice "
            "over the 20 dev clips (docs/evaluation-log.md)",
            odd=True,
        ),
    )

    def reference(self, src, side=None):
        strong, ones = foreground(src, 1), set_pixels(src, 1)
        if cv2.countNonZero(strong) == cv2.countNonZero(ones):  # no weak level: one vote
            return self._vote(strong)
        out = self._vote(ones)
        out &= WEAK  # 128 where set, 255 above the weak level
        out |= self._vote(strong)
        return out

    def _vote(self, ones: np.ndarray) -> np.ndarray:
        """255 where more than half of the window of ``ones`` ((H, W) uint8, 0 or 1) is 1, else 0."""
        k = self.params["kernel_size"]
        if k == 1:
            return ones * np.uint8(255)
        # The vote as a count, as the kernels count (md_count_rows_u8, md_majority_cols_u8): equal
        # to cv2.medianBlur of the 0/255 mask, whose path for k >= 7 (a histogram per column) took
        # 2.0 ms a frame at 480x270 against 0.1 ms for this (k = 9, one thread).
        depth = cv2.CV_16U if k * k > 255 else -1  # the count must not saturate uint8
        count = cv2.boxFilter(ones, depth, (k, k), normalize=False, borderType=cv2.BORDER_REPLICATE)
        return cv2.threshold(count, k * k // 2, 255, cv2.THRESH_BINARY)[1].astype(np.uint8, copy=False)

    def apply_kernel(self, cuda, src, dst, side=None):
        frames, height, width = planes(src)
        rows = cuda.buffer(("median_rows", src.shape), src.shape, np.uint16)  # the two planes' counts
        args = (np.int32(width), np.int32(height), np.int32(self.params["kernel_size"] // 2))
        cuda.launch_2d(
            cuda.function(self.KERNEL, "md_count_rows_u8", "PPiii"), (height, width), src.gpudata, rows.gpudata, *args, frames=frames
        )
        cuda.launch_2d(
            cuda.function(self.KERNEL, "md_majority_cols_u8", "PPiii"), (height, width), rows.gpudata, dst.gpudata, *args, frames=frames
        )
