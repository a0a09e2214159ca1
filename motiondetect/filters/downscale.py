"""Downscale: detect motion at a working resolution (:mod:`~motiondetect.filters.upscale` restores the size).

Peers do the same for speed and robustness: Frigate resizes to ``frame_height`` 100 rows and
DVR-Scan subsamples by ``--downscale-factor``. Working at a resolution that does not grow with
the camera's makes the structuring elements and windows after it cover the same share of the
scene on a 320x240 and a 1920x1080 stream, and cuts the work of every filter in between.

Both filters use one partition of the frame: output row ``i`` of an ``h``-row image stands for
the input rows ``y`` with ``y * h // H == i`` (columns alike), blocks of ``f`` rows when the
frame's height ``H`` is ``f * h``. :class:`Downscale` averages each block; :class:`Upscale`
copies each block's value back to all of its pixels, so it needs only the two shapes.
"""

from __future__ import annotations

import cv2
import numpy as np

from motiondetect.filters.base import Filter, Kind, Param, planes


def block_starts(size: int, blocks: int) -> np.ndarray:
    """First input index of each of ``blocks`` blocks partitioning ``size`` (ceil(i * size / blocks))."""
    i = np.arange(blocks, dtype=np.int64)
    return (i * size + blocks - 1) // blocks


def block_bounds(size: int, blocks: int) -> np.ndarray:
    """The ``blocks + 1`` bounds of the blocks partitioning ``size`` pixels (:func:`block_starts`,
    then ``size``), int64: block ``i`` covers ``bounds[i]`` to ``bounds[i + 1] - 1``. The same
    blocks are an upscale's: its output pixel ``y`` of ``size`` belongs to block ``y * blocks // size``."""
    return np.append(block_starts(size, blocks), size)


class Downscale(Filter):
    """Shrink a grey image by a whole factor to a working height of at least ``height`` rows.

    The factor is ``f = max(1, H // height)`` and the output ``(max(1, H // f), max(1, W // f))``
    uint8 grey levels, each pixel the mean of its block of the input (about ``f`` x ``f``
    pixels; see the module docstring), an exact integer sum rounded half up on both backends.
    With ``f = 1`` the image passes through unchanged. Input ``(H, W)`` uint8 grey levels.
    Follow it by the filters to run at the working resolution, then :class:`Upscale`.
    """

    NAME = "downscale"
    KERNEL = "downscale"
    BATCHED = True
    INPUT = Kind.GRAY
    OUTPUT = Kind.GRAY
    RESAMPLE = "down"
    PARAMS = (
        Param(
            "height",
            int,
            240,
            16,
            4320,
            "pixels",
            "working height: frames are shrunk by the largest whole factor that keeps at least this "
            "many rows; 240 scored best on the CDnet clips (README, Detection quality); Frigate uses 100",
        ),
    )

    def factor(self, height: int) -> int:
        """The whole shrink factor for a frame ``height`` pixels tall."""
        return max(1, height // self.params["height"])

    def output_shape(self, input_shape, side_shape=None):
        height, width = input_shape[:2]
        f = self.factor(height)
        return (max(1, height // f), max(1, width // f))

    def reference(self, src, side=None):
        out_h, out_w = self.output_shape(src.shape)
        height, width = src.shape
        if (out_h, out_w) == (height, width):
            return src.copy()  # factor 1: every block is one pixel
        f = self.factor(height)
        if (out_h * f, out_w * f) == (height, width) and f <= 16:
            return _uniform_block_means(src, f)
        return self._plan(src.shape).block_means(src)

    def reference_planes(self, planes: np.ndarray) -> np.ndarray:
        """Each plane's block means, as :meth:`reference` gives the grey image's."""
        return np.stack([self.reference(plane) for plane in planes])

    def reference_chroma_420(self, picture) -> np.ndarray | None:
        """:meth:`reference_planes` of :meth:`Picture.chroma <motiondetect.core.picture.Picture.chroma>`
        without the full-size planes: a block's sum over its pixels is a sum over the 4:2:0
        samples they read (pixel ``(x, y)`` reads sample ``(x // 2, y // 2)``), each weighted by
        how many of the block's pixels read it. Where the factor ``f`` is even and divides the
        picture, each block reads (f / 2) x (f / 2) whole samples, 4 pixels each, so its mean is
        the samples' mean; at other factors from 4 up, from the samples' summed-area table
        (:class:`_Partition420`). Each mean is rounded half up, as :meth:`reference`'s. ``None``
        otherwise (factors 1 to 3: the caller expands the samples, then shrinks).

        Returns:
            (2, h, w) uint8 Cb and Cr, or ``None``.
        """
        from motiondetect.core.picture import chroma_table

        height, width = picture.y.shape
        f = self.factor(height)
        out_h, out_w = self.output_shape((height, width))
        even = f % 2 == 0 and (out_h * f, out_w * f) == (height, width) and f <= 32
        if not even and f < 4:
            # The general sums cost about the same per output pixel at any input size: at factors
            # 2 and 3 expanding and shrinking is as fast (720p: 1.0-1.1 ms against 1.2; 2160p, f 9:
            # 6.7-8.8 against 2.5), and factor 1 has no blocks.
            return None
        table = chroma_table(picture.full_range)
        samples = [cv2.LUT(plane, table) for plane in (picture.u, picture.v)]
        if even:
            return np.stack([_uniform_block_means(plane, f // 2) for plane in samples])
        partition = self._plan((height, width))
        if getattr(self, "_partition_420", None) is None or self._partition_420.partition is not partition:
            self._partition_420 = _Partition420(partition, samples[0].shape)
        return np.stack([partition.means(self._partition_420.sums(plane)) for plane in samples])

    def apply_planes(self, cuda, src, dst, frames: int = 1) -> bool:
        self.apply_kernel(cuda, src, dst)
        return True

    def _plan(self, shape: tuple[int, int]) -> _Partition:
        """The partition of an input of ``shape`` (made once per size)."""
        if getattr(self, "_partition", None) is None or self._partition.shape != shape:
            self._partition = _Partition(shape, self.output_shape(shape))
        return self._partition

    def apply_kernel(self, cuda, src, dst, side=None):
        frames, height, width = planes(src)
        _, out_h, out_w = planes(dst)
        fn = cuda.function(self.KERNEL, "md_downscale_area_u8", "PPiiii")
        cuda.launch_2d(
            fn, (out_h, out_w), src.gpudata, dst.gpudata, np.int32(width), np.int32(height), np.int32(out_w), np.int32(out_h), frames=frames
        )


class _Partition420:
    """Block sums of a 4:2:0 plane expanded to pixels (pixel ``(x, y)`` reads sample
    ``(x // 2, y // 2)``; an odd last row or column cuts the last samples' second) over the
    blocks of a :class:`_Partition` of the pixels, without the expansion.

    From the samples' summed-area table ``I``: the sum ``F(y, x)`` over the pixels above and
    left of ``(x, y)`` is ``4 I[y//2, x//2]``, plus, for an odd ``y``, the samples of row
    ``y // 2`` left of ``x // 2`` (each read by one more row of pixels, twice across), plus,
    for an odd ``x``, the column's likewise, plus sample ``(x // 2, y // 2)`` once when both are
    odd; a block's sum is ``F`` at its four corners. Made once per size: the corners' flat
    indices into ``I`` and the samples, and their weights.
    """

    def __init__(self, partition: _Partition, shape: tuple[int, int]) -> None:
        ch, cw = shape
        rows, cols = partition.rows, partition.cols
        self.partition = partition
        ry, oy = (rows // 2)[:, None], (rows % 2)[:, None]
        rx, ox = (cols // 2)[None, :], (cols % 2)[None, :]
        # The table is exact in int32 while 255 * ch * cw < 2**31 (8K pictures' planes fit).
        self.depth = cv2.CV_32S if 255 * ch * cw < 2**31 else cv2.CV_64F
        self.at = (ry * (cw + 1) + rx).ravel()
        self.below = (np.minimum(ry + 1, ch) * (cw + 1) + rx).ravel()  # weighted 0 where y is even
        self.right = (ry * (cw + 1) + np.minimum(rx + 1, cw)).ravel()  # weighted 0 where x is even
        self.corner = (np.minimum(ry, ch - 1) * cw + np.minimum(rx, cw - 1)).ravel()
        # F = (4 - 2 oy - 2 ox) I[at] + 2 oy I[below] + 2 ox I[right] + oy ox S[corner]
        self.weights = [
            np.broadcast_to(w, (len(rows), len(cols))).ravel().astype(np.float64) for w in (4 - 2 * oy - 2 * ox, 2 * oy, 2 * ox, oy * ox)
        ]
        self.grid = (len(rows), len(cols))

    def sums(self, samples: np.ndarray) -> np.ndarray:
        """(h, w) float64 block sums (whole numbers, exact) of ``samples`` (ch, cw) uint8."""
        table = cv2.integral(samples, sdepth=self.depth).ravel()
        flat = samples.ravel()
        w = self.weights
        f = w[0] * table.take(self.at) + w[1] * table.take(self.below) + w[2] * table.take(self.right) + w[3] * flat.take(self.corner)
        return _corner_differences(f.reshape(self.grid))


def _corner_differences(c: np.ndarray) -> np.ndarray:
    """The (h, w) block sums from an (h + 1, w + 1) summed-area table read at the blocks' corners."""
    sums = c[1:, 1:] - c[:-1, 1:]
    sums -= c[1:, :-1]
    sums += c[:-1, :-1]
    return sums


def _uniform_block_means(src: np.ndarray, f: int) -> np.ndarray:
    """Means of the ``f`` x ``f`` blocks of ``src`` (H = f * h, W = f * w), rounded half up.

    Sums in uint16, exact for f <= 16 (at most 256 * 255 < 2**16): the ``f`` rows of each
    block are added by a reduction over a reshaped view (contiguous rows, vectorised), then the
    ``f`` columns by strided slices. Measured at 1080p: 4x faster than the summed-area table
    with integer division, 1.7x faster than with the float64 division of :class:`_Partition`.
    """
    height, width = src.shape
    h = height // f
    rows = np.add.reduce(src.reshape(h, f, width), axis=1, dtype=np.uint16)
    sums = rows[:, 0::f].copy()
    for k in range(1, f):
        sums += rows[:, k::f]
    n = f * f
    sums += n // 2
    if n & (n - 1) == 0:
        sums >>= n.bit_length() - 1  # n is a power of two: the shift is the floor division
    else:
        sums //= n
    return sums.astype(np.uint8)


class _Partition:
    """Block geometry of one input size for the general (unequal blocks) case.

    Attributes:
        shape: (H, W) of the input.
        rows, cols: int64 (h + 1,) and (w + 1,) bounds of the blocks (their starts, then H or W).
        corners: int64 (h + 1, w + 1) flat indices into the (H + 1, W + 1) summed-area table of
            the blocks' corners.
        half, counts: (h, w) int32 half of each block's pixel count and float64 the count.
    """

    def __init__(self, shape: tuple[int, int], out_shape: tuple[int, int]) -> None:
        height, width = shape
        rows, cols = block_bounds(height, out_shape[0]), block_bounds(width, out_shape[1])
        self.shape, self.rows, self.cols = shape, rows, cols
        self.corners = rows[:, None] * (width + 1) + cols[None, :]
        counts = np.outer(np.diff(rows), np.diff(cols))
        self.half = (counts // 2).astype(np.int32)
        self.counts = counts.astype(np.float64)

    def block_means(self, src: np.ndarray) -> np.ndarray:
        """Each block's mean of ``src`` (H, W) uint8, rounded half up, as (h, w) uint8."""
        # Block sums from the summed-area table, exact in int32 for frames below 2**31 / 255
        # pixels. The division is float64: (sum + n // 2) / n is correctly rounded, so it is
        # exact when the quotient is a whole number and otherwise at least 1 / n away from one,
        # far more than the rounding error; truncation is then the floor (5x faster than
        # NumPy's integer division by an array).
        table = cv2.integral(src, sdepth=cv2.CV_32S)
        return self.means(_corner_differences(table.ravel().take(self.corners)))

    def means(self, sums: np.ndarray) -> np.ndarray:
        """(h, w) uint8 means of the blocks from their (h, w) exact sums (int32 or float64,
        used up: the half counts are added in place), rounded half up."""
        sums += self.half
        return (sums / self.counts).astype(np.uint8)
