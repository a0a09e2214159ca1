"""Closing: fill the holes and notches of the motion mask's blobs (a dilation, then an erosion)."""

from __future__ import annotations

import cv2
import numpy as np

from motiondetect.filters.base import Filter, Kind, Param, planes

#: Output pixels (columns, rows) a block of kernels/closing.cu covers (MD_CLOSE_W, MD_CLOSE_H): a
#: larger tile than the block's 32 x 8 threads reads its halo from global memory fewer times.
TILE = (32, 32)


class Closing(Filter):
    """Morphological closing with a square ``kernel_size`` x ``kernel_size`` structuring element:
    a dilation, then an erosion by the same element (Serra, *Image Analysis and Mathematical
    Morphology*, 1982; Soille, *Morphological Image Analysis*, 2003, 8.1).

    It fills the gaps narrower than the element inside and between a blob's parts (a car's roof
    and windscreen at the road's grey level, which the background model calls background inside
    an outline it finds) and keeps every blob's outer outline where it is, so it adds no halo round
    an object: a closing is extensive (it only adds pixels) and idempotent. ``kernel_size`` 1 leaves
    the mask as it is. For a dilation then an erosion the border is OpenCV's default on each step
    (outside pixels count as 0 for the dilation, 255 for the erosion), so the result equals
    ``cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((k, k), np.uint8))``. Input and output
    ``(H, W)`` uint8 masks (any grey image works: grey-level closing).

    On the GPU one launch of kernels/closing.cu does the four separable passes (the dilation's
    rows and columns, then the erosion's) in shared memory, a block's tile and its halo at a time,
    on a whole batch; a tile with nothing set writes its zeros and skips them. Built first as four
    launches (the dilation's and erosion's kernels), the closing took the default to 88 % of its
    on-device rate at 1080p one frame at a time; in one launch, 97-102 % (docs/evaluation-log.md, "A
    closing after the mask").
    """

    NAME = "closing"
    KERNEL = "closing"
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
            "side of the square structuring element; 1 leaves the mask as it is; 9 (after the 7x7 "
            "dilation, at the 240-row working size) was the choice of 22 of the 23 folds of the "
            'dev set\'s leave-one-clip-out (docs/evaluation-log.md, "A closing after the mask")',
            odd=True,
        ),
    )

    @property
    def radius(self) -> int:
        """Half-width of the structuring element, in pixels."""
        return (self.params["kernel_size"] - 1) // 2

    def halo(self) -> int:
        """The output reaches twice :attr:`radius` pixels into the input: the dilation's, then the
        erosion's."""
        return 2 * self.radius

    def reference(self, src, side=None):
        k = self.params["kernel_size"]
        if k == 1:
            return src.copy()
        element = np.ones((k, k), np.uint8)
        return cv2.erode(cv2.dilate(src, element), element)

    def apply_kernel(self, cuda, src, dst, side=None):
        from motiondetect.gpu.cuda_handler import BLOCK_2D

        frames, height, width = planes(src)
        fn = cuda.function(self.KERNEL, "md_close_u8", "PPiii")
        grid = (-(-width // TILE[0]), -(-height // TILE[1]), frames)  # a block's 32 x 8 threads loop over its tile
        fn.prepared_async_call(
            grid, BLOCK_2D, cuda.stream, src.gpudata, dst.gpudata, np.int32(width), np.int32(height), np.int32(self.radius)
        )
