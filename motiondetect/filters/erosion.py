"""Erosion: remove isolated mask pixels (noise) by morphological erosion."""

from __future__ import annotations

import cv2
import numpy as np

from motiondetect.filters.base import WEAK, Filter, Kind, Param, foreground, launch_square_element, set_pixels


class Erosion(Filter):
    """Morphological erosion with a square ``kernel_size`` x ``kernel_size`` structuring element.

    Applied ``iterations`` times; pixels outside the frame count as 255, so edges are not eaten
    away. The result equals ``cv2.erode(mask, np.ones((k, k), np.uint8), iterations=n)`` with
    OpenCV's default border. Input and output ``(H, W)`` uint8 masks (any grey image works).

    Between a background model that writes the weak level and the dilation that grows into it
    (:attr:`weak_level`, set by :func:`~motiondetect.pipeline.detector.link_growth`), the
    foreground (above :data:`~motiondetect.filters.base.WEAK`, 128) and the set pixels are eroded
    each as a binary plane, and a foreground pixel the erosion removes stays set: 255 where the
    foreground's erosion is, else 128 where the set pixels' erosion is or the pixel was
    foreground, else 0. The foreground is thinned as before, and the dilation may grow it back
    where it was (the plain opening's outline) and into the weak pixels that survive the erosion,
    not into a weak rim one pixel wide.
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

    def __init__(self, **params) -> None:
        super().__init__(**params)
        #: Erode the foreground and the set pixels as planes, keeping what it removes set (see
        #: the class docstring).
        self.weak_level = False

    @property
    def radius(self) -> int:
        """Half-width of the single structuring element equal to all iterations, in pixels."""
        return self.params["iterations"] * (self.params["kernel_size"] - 1) // 2

    def halo(self) -> int:
        """The output reaches :attr:`radius` pixels into the input on every side."""
        return self.radius

    def reference(self, src, side=None):
        k = self.params["kernel_size"]
        element, iterations = np.ones((k, k), np.uint8), self.params["iterations"]
        if not self.weak_level:
            return cv2.erode(src, element, iterations=iterations)
        moving = foreground(src)
        kept = cv2.erode(set_pixels(src), element, iterations=iterations)
        kept |= moving  # what the erosion removes from the foreground stays set
        kept &= WEAK
        kept |= cv2.erode(moving, element, iterations=iterations)
        return kept

    def apply_kernel(self, cuda, src, dst, side=None):
        launch_square_element(cuda, self, src, dst, "md_erode_rows_u8", "md_erode_cols_u8", self.radius, self.weak_level)
