"""Dilation: grow the motion mask (fill holes in objects; after erosion, the pair is an opening)."""

from __future__ import annotations

import cv2
import numpy as np

from motiondetect.filters.base import Filter, Kind, Param, foreground, launch_square_element, set_pixels


class Dilation(Filter):
    """Morphological dilation with a square ``kernel_size`` x ``kernel_size`` structuring element.

    Applied ``iterations`` times; pixels outside the frame count as 0, so nothing grows in from
    the border. The result equals ``cv2.dilate(mask, np.ones((k, k), np.uint8), iterations=n)``
    with OpenCV's default border. Input and output ``(H, W)`` uint8 masks (any grey image works).
    Erosion followed by dilation with the same element is a morphological opening; a larger
    dilation also closes the gaps inside objects that a background model leaves.

    Growing into the weak level (:attr:`weak_level`, set when a background model with
    ``grow_sigmas`` comes before: :func:`~motiondetect.pipeline.detector.link_growth`): the pixels
    above :data:`~motiondetect.filters.base.WEAK` (128) are dilated, and the result is kept only
    where the input is set (255 or 128), so the mask grows into pixels the model found off their
    background and not into the still background around an object; the output is 0 or 255. The
    geodesic dilation of the foreground within the weak pixels, in one step of the whole element
    (Soille, *Morphological Image Analysis*, 2003, 6.1), the way hysteresis thresholding grows
    strong edges into weak ones (Canny, 1986).
    """

    NAME = "dilation"
    KERNEL = "dilation"
    BATCHED = True
    INPUT = Kind.MASK
    OUTPUT = Kind.MASK
    PARAMS = (
        Param(
            "kernel_size",
            int,
            7,
            1,
            31,
            "pixels",
            "side of the square structuring element; 7 (after a 3x3 erosion, growing into the "
            "Gaussian model's weak pixels at grow_sigmas 1.2) was the choice of every leave-one-clip-out "
            "fold over the 17 dev clips whose labels do not count leaves, 5 without that growth "
            '(docs/evaluation-log.md, "Growing into weak pixels"); Frigate dilates once after its threshold',
            odd=True,
        ),
        Param("iterations", int, 1, 1, 16, "passes", "how many times the dilation is applied"),
    )

    def __init__(self, **params) -> None:
        super().__init__(**params)
        #: Grow the pixels above the weak level into the set pixels only (see the class docstring).
        self.weak_level = False

    @property
    def radius(self) -> int:
        """Half-width of the single structuring element equal to all iterations, in pixels."""
        return self.params["iterations"] * (self.params["kernel_size"] - 1) // 2

    def reference(self, src, side=None):
        k = self.params["kernel_size"]
        element, iterations = np.ones((k, k), np.uint8), self.params["iterations"]
        if not self.weak_level:
            return cv2.dilate(src, element, iterations=iterations)
        grown = cv2.dilate(foreground(src), element, iterations=iterations)
        return cv2.bitwise_and(grown, set_pixels(src))

    def apply_kernel(self, cuda, src, dst, side=None):
        launch_square_element(cuda, self, src, dst, "md_dilate_rows_u8", "md_dilate_cols_u8", self.radius, self.weak_level)
