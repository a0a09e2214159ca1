"""Picture: a decoded frame as its Y'CbCr 4:2:0 planes, the form video decoders produce.

Motion is found on the luma: :meth:`Picture.luma` is the grey image every pipeline starts from
for video files, on both backends and with either decoder (PyAV on the CPU, NVDEC on the GPU),
so H.264/HEVC files, whose decoding is bit-exact by standard, give identical masks whichever
decoder ran. Colour is converted only when something colour is written, and the red blend can
be applied in Y'CbCr space (:func:`blend_red_yuv`) so annotated video goes to the encoder as
yuv420p without a colour-space round trip.

Conventions (ITU-R BT.601, the matrix H.264 and FFmpeg assume for SD and unspecified streams):

- limited ("MPEG", "TV") range: Y' = 16 + 219 E'Y, Cb/Cr = 128 + 224 E'Pb/Pr, in 8 bits;
- full ("JPEG", "PC") range: Y' = 255 E'Y, Cb/Cr = 128 + 255 E'Pb/Pr;
- chroma sample (i, j) covers pixels (2i..2i+1, 2j..2j+1), cut at odd edges; planes of
  ``ceil(H / 2) x ceil(W / 2)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Callable, Hashable

import cv2
import numpy as np

#: Q16 constants of the BT.601 conversions used below: R from Y'CbCr, and the change of Y', Cb,
#: Cr for a change dR of red alone (dY' = Kr dR, dCb = -Kr / (2 (1 - Kb)) dR, dCr = dR / 2 with
#: Kr = 0.299, Kb = 0.114), each scaled for the range (219/255 luma, 224/255 chroma when limited).
#: Keys: full_range -> (luma offset, R per Y', R per Cr, dY' per dR, dCb per dR, dCr per dR).
YUV_Q16 = {
    False: (16, 76309, 104597, 16829, -9714, 28784),
    True: (0, 65536, 91881, 19595, -11058, 32768),
}


@lru_cache(maxsize=2)
def luma_table(full_range: bool) -> np.ndarray:
    """The 256-entry table from decoded luma to full-range grey levels.

    Limited range: ``round((Y' - 16) * 255 / 219)`` rounded half up and clipped to 0..255 (the
    inverse of BT.601's ``Y' = 16 + 219 E'Y``); full range: the identity. Both backends index
    this one table, so they agree bit for bit.

    Returns:
        (256,) uint8, read-only.
    """
    y = np.arange(256, dtype=np.int64)
    table = y if full_range else np.clip((2 * 255 * (y - 16) + 219) // (2 * 219), 0, 255)
    table = table.astype(np.uint8)
    table.flags.writeable = False
    return table


@lru_cache(maxsize=2)
def chroma_table(full_range: bool) -> np.ndarray:
    """The 256-entry table from decoded chroma (Cb or Cr) to full-range chroma.

    Limited range: ``round((C - 128) * 255 / 224) + 128`` rounded half up and clipped to 0..255
    (the inverse of BT.601's ``C = 128 + 224 E'Pb``); full range: the identity. 128 is no colour.

    Returns:
        (256,) uint8, read-only.
    """
    c = np.arange(256, dtype=np.int64)
    table = c if full_range else np.clip((2 * 255 * (c - 128) + 224) // (2 * 224) + 128, 0, 255)
    table = table.astype(np.uint8)
    table.flags.writeable = False
    return table


@dataclass(frozen=True, eq=False)
class Picture:
    """A frame as decoded: Y'CbCr 4:2:0 planes in host memory.

    Attributes:
        y: (H, W) uint8 luma, as coded (limited or full range).
        u, v: (ceil(H / 2), ceil(W / 2)) uint8 Cb and Cr.
        full_range: the stream's colour range is full ("JPEG"); ``False`` for limited
            ("MPEG"), which is also what an unspecified range means for yuv420p video.
        pool: for planes that view a decoder's pooled frame buffers, which stay allocated at
            the same addresses while the decoder lives: a key naming that pool (equal keys,
            the same pool); ``None`` for any other memory (copies, conversions). The GPU path
            registers pooled buffers as pinned memory and reads them by DMA
            (:mod:`motiondetect.gpu.registered_buffers`).
    """

    y: np.ndarray
    u: np.ndarray
    v: np.ndarray
    full_range: bool = False
    pool: Hashable | None = None

    @property
    def size(self) -> tuple[int, int]:
        """(width, height) in pixels."""
        return self.y.shape[1], self.y.shape[0]

    @property
    def shape(self) -> tuple[int, int, int]:
        """(H, W, 3): the shape of the BGR frame this picture stands for."""
        return self.y.shape[0], self.y.shape[1], 3

    def luma(self) -> np.ndarray:
        """The full-range grey image motion is found on: (H, W) uint8, a new array
        (:func:`luma_table` applied to :attr:`y`)."""
        return cv2.LUT(self.y, luma_table(self.full_range))

    def chroma(self) -> np.ndarray:
        """The full-range chroma at the luma's size: (2, H, W) uint8, Cb then Cr, 128 = no colour
        (:func:`chroma_table` applied to :attr:`u` and :attr:`v`, each 4:2:0 sample repeated over
        the 2 x 2 pixels it covers, cut at odd edges), a new array."""
        height, width = self.y.shape
        out = np.empty((2, height, width), np.uint8)
        table = chroma_table(self.full_range)
        for plane, target in zip((self.u, self.v), out):
            full = cv2.LUT(plane, table)  # then an exact 2x nearest-neighbour resize, cut at odd edges
            target[...] = cv2.resize(full, (2 * full.shape[1], 2 * full.shape[0]), interpolation=cv2.INTER_NEAREST)[:height, :width]
        return out

    def copy(self) -> Picture:
        """A picture with its own copies of the planes."""
        return Picture(self.y.copy(), self.u.copy(), self.v.copy(), self.full_range)

    def i420(self) -> np.ndarray:
        """The planes packed as yuv420p, (H * 3 / 2, W) uint8 (even sizes only), the layout
        ``cv2.COLOR_YUV2BGR_I420`` and PyAV's ``VideoFrame.from_ndarray(..., "yuv420p")`` take.

        A view, not a copy, when the planes already lie packed one after another in one buffer
        (pictures from :func:`unpack_planes`, as the GPU path returns them): treat the result
        as read-only.

        Raises:
            ValueError: the width or height is odd.
        """
        height, width = self.y.shape
        if width % 2 or height % 2:
            raise ValueError(f"yuv420p packing needs even sizes; the picture is {width}x{height}")
        packed = self._packed()
        if packed is not None:
            return packed.reshape(height * 3 // 2, width)
        return np.concatenate((self.y.reshape(-1), self.u.reshape(-1), self.v.reshape(-1))).reshape(height * 3 // 2, width)

    def _packed(self) -> np.ndarray | None:
        """The one flat buffer holding Y', Cb and Cr back to back, as a view; else ``None``."""
        planes = (self.y, self.u, self.v)
        if not all(plane.flags.c_contiguous for plane in planes):
            return None
        root = _root(self.y)
        if not root.flags.c_contiguous or any(_root(plane) is not root for plane in planes[1:]):
            return None
        start = self.y.__array_interface__["data"][0] - root.__array_interface__["data"][0]
        offset = start
        for plane in planes:
            if plane.__array_interface__["data"][0] - root.__array_interface__["data"][0] != offset:
                return None
            offset += plane.nbytes
        return root.reshape(-1)[start:offset]

    def to_bgr(self) -> np.ndarray:
        """The frame as (H, W, 3) uint8 BGR (BT.601 matrix, this picture's range), for outputs
        that need colour (OpenCV's conversion for even-sized limited-range pictures, else the
        same matrix in NumPy)."""
        height, width = self.y.shape
        if not self.full_range and width % 2 == 0 and height % 2 == 0:
            return cv2.cvtColor(self.i420(), cv2.COLOR_YUV2BGR_I420)
        up = lambda plane: np.repeat(np.repeat(plane, 2, 0), 2, 1)[:height, :width].astype(np.float32) - 128
        cb, cr = up(self.u), up(self.v)
        luma = self.y.astype(np.float32)
        if not self.full_range:
            luma, cb, cr = (luma - 16) * (255 / 219), cb * (255 / 224), cr * (255 / 224)
        r = luma + 1.402 * cr
        g = luma - 0.344136 * cb - 0.714136 * cr
        b = luma + 1.772 * cb
        return np.clip(np.rint(np.dstack((b, g, r))), 0, 255).astype(np.uint8)

    @classmethod
    def from_i420(cls, packed: np.ndarray, full_range: bool = False) -> Picture:
        """Views of a packed (H * 3 / 2, W) yuv420p buffer (even sizes) as a picture."""
        rows, width = packed.shape
        return unpack_planes(packed, rows * 2 // 3, width, full_range)

    @classmethod
    def from_bgr(cls, bgr: np.ndarray) -> Picture:
        """A limited-range picture of an (H, W, 3) uint8 BGR frame with even sides
        (``cv2.COLOR_BGR2YUV_I420``), for tests and synthetic inputs."""
        return cls.from_i420(cv2.cvtColor(bgr, cv2.COLOR_BGR2YUV_I420))


def chroma_shape(height: int, width: int) -> tuple[int, int]:
    """(rows, columns) of a 4:2:0 chroma plane for an (height, width) picture."""
    return (height + 1) // 2, (width + 1) // 2


def _root(array: np.ndarray) -> np.ndarray:
    """The array that owns ``array``'s memory (the end of its chain of bases)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def unpack_planes(buffer: np.ndarray, height: int, width: int, full_range: bool) -> Picture:
    """Views of a planar 4:2:0 buffer (Y', then Cb, then Cr, each packed; the layout the
    Y'CbCr blend kernel writes) as a picture of (height, width) pixels."""
    ch, cw = chroma_shape(height, width)
    flat = buffer.reshape(-1)
    y = flat[: height * width].reshape(height, width)
    u = flat[height * width : height * width + ch * cw].reshape(ch, cw)
    v = flat[height * width + ch * cw : height * width + 2 * ch * cw].reshape(ch, cw)
    return Picture(y, u, v, full_range)


@lru_cache(maxsize=8)
def _blend_tables(full_range: bool, red_lut: bytes) -> tuple[np.ndarray, np.ndarray, tuple]:
    """The Y'CbCr blend's per-pixel results as tables over the 16-bit index ``Cr << 8 | Y'``:
    the blended Y' (uint8) and dR (int16) of a masked pixel; and for Cb then Cr, the Q16
    d/dR constant and the change (int16) for each sum of dR over a whole 2x2 block."""
    offset, r_y, r_cr, dy_dr, du_dr, dv_dr = YUV_Q16[full_range]
    lut = np.frombuffer(red_lut, np.uint8).astype(np.int64)
    cr, y = np.divmod(np.arange(65536, dtype=np.int64), 256)
    red = np.clip((r_y * (y - offset) + r_cr * (cr - 128) + 32768) >> 16, 0, 255)
    delta = lut[red] - red
    new_y = np.clip(y + ((dy_dr * delta + 32768) >> 16), 0, 255).astype(np.uint8)
    sums = np.arange(-1020, 1021, dtype=np.int64)  # 4 pixels of dR in -255..255
    chroma = tuple((d_dr, ((d_dr * sums + 4 * 32768) // (4 * 65536)).astype(np.int16)) for d_dr in (du_dr, dv_dr))
    return new_y, delta.astype(np.int16), chroma


def _blend_box(mask: np.ndarray, picture: Picture, tables: tuple, box: tuple[int, int, int, int], out: tuple) -> None:
    """:func:`blend_red_yuv` on luma rows ``top..bottom-1`` and columns ``left..right-1`` (``top``
    and ``left`` even; ``bottom`` and ``right`` even or the picture's edge) into ``out`` (Y', Cb, Cr)."""
    top, bottom, left, right = box
    new_y, new_u, new_v = out
    luma_box = (slice(top, bottom), slice(left, right))
    chroma_box = (slice(top // 2, (bottom + 1) // 2), slice(left // 2, (right + 1) // 2))
    rows, cols = bottom - top, right - left
    new_y_of, delta_of, chroma_of = tables
    # Each pixel's (Cr, Y') pair as one 16-bit index into the 65,536-entry tables; Cr brought to
    # the luma grid by an exact 2x nearest-neighbour resize, cut at an odd edge.
    cr = picture.v[chroma_box].astype(np.uint16) << 8
    index: np.ndarray = cv2.resize(cr, (2 * cr.shape[1], 2 * cr.shape[0]), interpolation=cv2.INTER_NEAREST)[:rows, :cols]
    index |= picture.y[luma_box]
    # Select by bit masks (0 or all ones), not by `where`: branch-free, 3x faster on real masks.
    moving = np.negative((mask[luma_box] != 0).view(np.uint8))  # 0 or 0xFF
    new_y[luma_box] = (new_y_of[index] & moving) | (new_y[luma_box] & ~moving)
    delta = np.zeros((rows + (rows & 1), cols + (cols & 1)), np.int16)  # padded to whole blocks
    delta[:rows, :cols] = delta_of[index] & moving.view(np.int8).astype(np.int16)  # 0 or 0xFFFF
    pairs = delta[0::2] + delta[1::2]  # |sum| <= 4 * 255: int16 holds it
    sums = pairs[:, 0::2] + pairs[:, 1::2]
    if rows & 1 or cols & 1:
        count = np.full(sums.shape, 4, np.int64)  # pixels per block: fewer where the odd edge cuts it
        count[-1, :] //= 1 + (rows & 1)
        count[:, -1] //= 1 + (cols & 1)
    for plane, changed, (d_dr, change_of_sum) in zip((picture.u, picture.v), (new_u, new_v), chroma_of):
        if rows & 1 or cols & 1:
            change = (d_dr * sums.astype(np.int64) + count * 32768) // (count * 65536)
        else:  # whole blocks: a lookup on the block's sum (-1020..1020)
            change = change_of_sum[sums + 1020]
        changed[chroma_box] = np.clip(plane[chroma_box] + change, 0, 255)


def blend_red_yuv(mask: np.ndarray, picture: Picture, red_lut: np.ndarray, split: Callable | None = None) -> Picture:
    """The red blend applied in Y'CbCr space: the CPU reference of ``md_red_blend_yuv``.

    Where the mask is set, the pixel's red R (from its Y' and its block's Cr, BT.601) becomes
    ``red_lut[R]`` (the :class:`~motiondetect.filters.RedBlend` table) and the change dR moves
    Y' by Kr dR (rounded half up, clipped); each chroma sample moves by the mean dR of the pixels
    of its block (unmasked pixels count 0) times dCb/dR and dCr/dR (rounded half up, clipped).
    Integer Q16 arithmetic (:data:`YUV_Q16`); the GPU kernel computes the same bits.

    Compared with the BGR reference (blend the BGR conversion, then convert back), blocks whose
    four pixels share one mask value differ by the conversions' rounding only; at a mask edge the
    block's one chroma sample carries the mean change, as any 4:2:0 encoding of the BGR blend
    must.

    Args:
        mask: (H, W) uint8, 0 or 255, at the picture's size.
        picture: the frame.
        red_lut: (256,) uint8, blended red for each red.
        split: runs ``work(band, start, stop)`` over row bands that partition ``range(rows)``
            (:func:`motiondetect.filters.bands.run_bands`, whose signature it has), so the rows
            of chroma blocks are blended on several threads; ``None``: on this one. The bits
            are the same either way.

    Returns:
        A new picture.
    """
    new_y, new_u, new_v = picture.y.copy(), picture.u.copy(), picture.v.copy()
    x, y, w, h = cv2.boundingRect(mask)
    if not w:
        return Picture(new_y, new_u, new_v, picture.full_range)
    # Only the mask's bounding box changes, widened to whole chroma blocks (even start, end even
    # or the picture's edge): outside it delta = 0 leaves Y', Cb and Cr as they are.
    height, width = picture.y.shape
    top, left = y & ~1, x & ~1
    bottom, right = min(height, (y + h + 1) & ~1), min(width, (x + w + 1) & ~1)
    tables = _blend_tables(picture.full_range, red_lut.tobytes())

    def blend_rows(band: int, start: int, stop: int) -> None:  # chroma rows start..stop-1 of the box
        first, last = top + 2 * start, min(bottom, top + 2 * stop)
        _blend_box(mask, picture, tables, (first, last, left, right), (new_y, new_u, new_v))

    chroma_rows = (bottom - top + 1) // 2
    if split is None:
        blend_rows(0, 0, chroma_rows)
    else:
        split(chroma_rows, right - left, blend_rows)
    return Picture(new_y, new_u, new_v, picture.full_range)


def as_bgr(image: np.ndarray | Picture) -> np.ndarray:
    """The (H, W, 3) uint8 BGR form of a frame's image (a picture is converted, BT.601)."""
    return image.to_bgr() if isinstance(image, Picture) else image
