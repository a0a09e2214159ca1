"""Gray: BGR frame to BT.601 luma."""

from __future__ import annotations

import cv2
import numpy as np

from motiondetect.core.picture import Picture, chroma_table, luma_table
from motiondetect.filters.bands import Scratch, run_bands
from motiondetect.filters.base import Filter, Kind, element_count, planes

#: BT.601 luma weights (ITU-R BT.601: Y = 0.299 R + 0.587 G + 0.114 B) in 16-bit fixed point,
#: round(w * 65536); they sum to 65536. Must match kernels/gray.cu.
B2Y, G2Y, R2Y = 7471, 38470, 19595
#: cv2.transform row: the three weights and the rounding offset 2**15 as a constant column, all
#: scaled by 2**-16 (exact: each is an integer below 2**16 times a power of two).
_WEIGHTS_AND_OFFSET = np.array([[B2Y, G2Y, R2Y, 1 << 15]], np.float32) * np.float32(2.0**-16)
#: Full-range BT.601 chroma weights (JFIF / ITU-T T.871: Cb = 128 - 0.168736 R - 0.331264 G + 0.5 B,
#: Cr = 128 + 0.5 R - 0.418688 G - 0.081312 B) in 16-bit fixed point, round(w * 65536); each row
#: sums to 0. Must match kernels/gray.cu.
CB_WEIGHTS = (32768, -21710, -11058)  # B, G, R
CR_WEIGHTS = (-5329, -27439, 32768)
#: cv2.transform rows (each (1, 4)) for Cb and for Cr: the weights and the offset 128 * 2**16 + 2**15
#: (128, rounded half up), scaled by 2**-16. Every partial sum is an integer of magnitude at most
#: 2**24 times 2**-16 (255 * 32768 + 128 * 65536 + 32768 = 2**24), exact in float32 in any order.
_CB_ROW, _CR_ROW = (np.array([[*w, 128 * 65536 + 32768]], np.float32) * np.float32(2.0**-16) for w in (CB_WEIGHTS, CR_WEIGHTS))
#: Rows converted at a time: their float32 copy (1.5 MB at 1920 pixels wide) stays in the cache.
_CHUNK_ROWS = 64


def bgr_chroma(bgr: np.ndarray, scratch: Scratch | None = None) -> np.ndarray:
    """Full-range BT.601 chroma of a BGR image, rounded half up, in integer fixed point.

    ``Cb = (32768 B - 21710 G - 11058 R + 128 * 2**16 + 2**15) >> 16`` and
    ``Cr = (-5329 B - 27439 G + 32768 R + 128 * 2**16 + 2**15) >> 16`` (:data:`CB_WEIGHTS`,
    :data:`CR_WEIGHTS`), clipped to 255 (pure blue and pure red give 256); the chroma that the
    JPEG (JFIF) conversion and ``cv2.COLOR_BGR2YCrCb`` give, within 1 level. 128 is no colour.

    Computed a few rows at a time (the float32 copies stay in the cache), in row bands on the
    filter threads.

    Args:
        bgr: (H, W, 3) uint8, channels B, G, R.
        scratch: the float32 buffers of each band ("pixels" (3,), "value" ()), kept by a caller
            that converts frame after frame; ``None``: made for this call.

    Returns:
        (2, H, W) uint8: Cb, then Cr.
    """
    height, width = bgr.shape[:2]
    out = np.empty((2, height, width), np.uint8)
    rows = min(_CHUNK_ROWS, height)
    scratch = scratch or Scratch(pixels=(np.float32, (3,)), value=(np.float32, ()))
    run_bands(height, width, lambda band, start, stop: _chroma_rows(bgr, out, scratch.get(band, rows, width), start, stop), rows)
    return out


def _chroma_rows(bgr: np.ndarray, out: np.ndarray, buffers: dict, start: int, stop: int) -> None:
    """Rows ``start..stop-1`` of :func:`bgr_chroma` into ``out`` (2, H, W), through the float32
    scratch ``buffers`` ("pixels" (rows, W, 3), "value" (rows, W)): each plane one single-channel
    cv2.transform of the rows while they are in the cache, clipped to 255, then truncated."""
    n = stop - start
    pixels, value = buffers["pixels"][:n], buffers["value"][:n]
    np.copyto(pixels, bgr[start:stop], casting="unsafe")
    for plane, row in ((out[0], _CB_ROW), (out[1], _CR_ROW)):
        cv2.transform(pixels, row, dst=value)
        np.minimum(value, 255.0, out=value)
        np.copyto(plane[start:stop], value, casting="unsafe")


class Gray(Filter):
    """BT.601 luma of a BGR frame, rounded half up, in integer fixed point.

    Input ``(H, W, 3)`` uint8 BGR; output ``(H, W)`` uint8 grey levels. CPU and GPU agree bit for
    bit; the result is within 1 grey level of ``cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)``, which
    uses 14/15-bit weights (measured: 0.13% of random pixels differ, never by more than 1).

    The cuBLAS engine computes the same bits as a matrix-vector product (SGEMV): the frame as a
    (P, 3) float32 matrix times the integer weights, scaled by 2**-16, then rounded half up.
    Every partial sum is k / 65536 with integer k < 2**24, exact in float32 in any order.
    """

    NAME = "gray"
    KERNEL = "gray"
    BATCHED = True
    ENGINES = ("kernel", "cublas")
    INPUT = Kind.BGR
    OUTPUT = Kind.GRAY
    POINTWISE = True

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self._scratch = Scratch(pixels=(np.float32, (3,)), luma=(np.float32, ()))
        self._chroma_scratch = Scratch(pixels=(np.float32, (3,)), value=(np.float32, ()))

    def reference(self, src, side=None):
        height, width = src.shape[:2]
        out = np.empty((height, width), np.uint8)
        rows = min(_CHUNK_ROWS, height)
        run_bands(
            height, width, lambda band, start, stop: self._luma_rows(src, out, self._scratch.get(band, rows, width), start, stop), rows
        )
        return out

    @staticmethod
    def _luma_rows(src, out, scratch, start, stop):
        # Integer arithmetic carried out in float32 by cv2.transform: every product and partial
        # sum is an integer below 2**24 (at most 255 * 65536 + 32768) times 2**-16, so float32
        # holds it exactly in any order of summation, and the cast to uint8 truncates the
        # non-negative result, i.e. it is the integer shift. A test checks all 2**24 BGR colours
        # against the integer formula. Done a few rows at a time so the float32 copy stays in
        # the cache (2x faster than converting the whole frame at once at 1080p).
        n = stop - start
        pixels, luma = scratch["pixels"][:n], scratch["luma"][:n]
        np.copyto(pixels, src[start:stop], casting="unsafe")
        cv2.transform(pixels, _WEIGHTS_AND_OFFSET, dst=luma)
        np.copyto(out[start:stop], luma, casting="unsafe")

    def apply_kernel(self, cuda, src, dst, side=None):
        fn = cuda.function(self.KERNEL, "md_gray_bt601_u8", "PPi")
        n = element_count(dst)
        cuda.launch_1d(fn, int(n), src.gpudata, dst.gpudata, n)

    def reference_luma(self, picture: Picture) -> np.ndarray:
        """The grey image of a decoded frame: its luma, expanded to full range.

        Luma first: a video decoder already delivers BT.601 luma (the Y' plane), so the grey
        image is that plane through :func:`~motiondetect.core.picture.luma_table` (limited range:
        ``round((Y' - 16) * 255 / 219)``; full range: unchanged), with no colour conversion.

        Args:
            picture: the decoded frame.

        Returns:
            (H, W) uint8 grey levels, a new array.
        """
        return picture.luma()

    def apply_luma(self, cuda, luma: int, pitch: int, image_bytes: int, dst, full_range: bool, size: tuple[int, int] | None = None) -> None:
        """Enqueue the luma-to-grey table on ``cuda.stream`` (kernel ``md_luma_to_gray_u8``),
        shrunk to ``dst``'s size with :class:`~motiondetect.filters.Downscale`'s blocks in the
        same pass when ``dst`` is smaller than the luma: bit for bit the full-size grey image
        followed by the downscale, without writing that image.

        Args:
            cuda: the entered handler.
            luma: device address of the first image's Y' plane (a decoder's surface or a
                packed buffer).
            pitch: bytes from one row of the plane to the next (>= the width).
            image_bytes: bytes from one image's plane to the next in a batch.
            dst: device grey image (h, w), or a batch (K, h, w), uint8, packed.
            full_range: the stream's colour range is full.
            size: (H, W) pixels of the luma read; ``None``: ``dst``'s (h, w), no shrink.
        """
        frames, out_h, out_w = planes(dst)
        height, width = size or (out_h, out_w)
        table = cuda.constant(("luma_table", full_range), luma_table(full_range))
        fn = cuda.function(self.KERNEL, "md_luma_to_gray_u8", "PiqPPiiii")
        cuda.launch_2d(fn, (out_h, out_w), luma, pitch, image_bytes, table.gpudata, dst.gpudata, width, height, out_w, out_h, frames=frames)

    def reference_chroma(self, src: np.ndarray) -> np.ndarray:
        """:func:`bgr_chroma` of an (H, W, 3) uint8 BGR frame with this filter's scratch
        buffers: (2, H, W) uint8, Cb then Cr."""
        return bgr_chroma(src, self._chroma_scratch)

    def apply_chroma(self, cuda, src, dst) -> None:
        """Enqueue :func:`bgr_chroma` on ``cuda.stream``, shrunk to ``dst``'s size with
        :class:`~motiondetect.filters.Downscale`'s blocks in the same pass when ``dst`` is smaller
        than the frame (kernel ``md_bgr_chroma_blocks_u8``): bit for bit the full-size planes
        followed by the downscale, in one launch.

        Args:
            cuda: the entered handler.
            src: device BGR image (H, W, 3) uint8.
            dst: device chroma planes (2, h, w) uint8, Cb then Cr; (h, w) is (H, W) or the
                output size of a :class:`~motiondetect.filters.Downscale` of the frame.
        """
        height, width = src.shape[:2]
        out_h, out_w = dst.shape[1:]
        fn = cuda.function(self.KERNEL, "md_bgr_chroma_blocks_u8", "PPiiii")
        cuda.launch_2d(fn, (out_h, out_w), src.gpudata, dst.gpudata, width, height, out_w, out_h)

    def apply_chroma_420(
        self,
        cuda,
        chroma: tuple[int, int],
        pitch: int,
        step: int,
        image_bytes: int,
        crop: tuple[int, int, int, int],
        dst,
        full_range: bool,
    ) -> None:
        """Enqueue the decoder's chroma as full-range planes (kernel ``md_chroma_420_blocks_u8``):
        :meth:`Picture.chroma <motiondetect.core.picture.Picture.chroma>` on the device, cropped,
        and shrunk to ``dst``'s size with :class:`~motiondetect.filters.Downscale`'s blocks in
        the same pass when ``dst`` is smaller than the crop.

        Args:
            cuda: the entered handler.
            chroma: device addresses of the first image's Cb and Cr samples (NV12: Cr is Cb + 1).
            pitch: bytes from one row of chroma samples to the next.
            step: bytes from one sample to the next in a row (1 planar, 2 NV12).
            image_bytes: bytes from one image's chroma to the next in a batch.
            crop: (x0, y0, x1, y1), the half-open rectangle of the picture in luma pixels.
            dst: device (2 * K, h, w) uint8: the K images' Cb planes, then their Cr planes.
            full_range: the stream's colour range is full.
        """
        count, out_h, out_w = planes(dst)
        frames = count // 2
        x0, y0, x1, y1 = crop
        table = cuda.constant(("chroma_table", full_range), chroma_table(full_range))
        fn = cuda.function(self.KERNEL, "md_chroma_420_blocks_u8", "PPiiqiiPPiiiiq")
        cuda.launch_2d(
            fn,
            (out_h, out_w),
            np.uintp(chroma[0]),
            np.uintp(chroma[1]),
            np.int32(pitch),
            np.int32(step),
            np.int64(image_bytes),
            np.int32(x0),
            np.int32(y0),
            table.gpudata,
            dst.gpudata,
            np.int32(x1 - x0),
            np.int32(y1 - y0),
            np.int32(out_w),
            np.int32(out_h),
            np.int64(frames * out_h * out_w),
            frames=frames,
        )

    def apply_cublas(self, cuda, src, dst, side=None):
        from motiondetect.gpu.blas import round_to_u8, to_float

        pixels = to_float(cuda, src, "gray_pixels").reshape(dst.size, 3)
        weights = cuda.constant("bt601_weights_f32", np.array([B2Y, G2Y, R2Y], np.float32))
        luma = cuda.buffer(("cublas", "gray_luma"), (dst.size,), np.float32)
        cuda.blas.rows_dot(pixels, weights, luma, alpha=1.0 / 65536)
        round_to_u8(cuda, luma, dst)
