"""RunningAverage: compare each frame with a background that learns (an exponential running average)."""

from __future__ import annotations

import cv2
import numpy as np

from motiondetect.filters.bands import Scratch, chunk_rows, run_bands
from motiondetect.filters.base import Filter, Kind, Param, element_count

#: Fixed-point scale of the background and the learning rate (Q16): must match the kernel.
Q16 = 1 << 16


def to_q16(rate: float) -> int:
    """A learning rate in [0, 1] as the integer ``round(rate * 2**16)`` the kernels use."""
    return int(np.floor(rate * Q16 + 0.5))


class RunningAverage(Filter):
    """``|current - round(B)|`` per pixel, then ``B += alpha * (current - B)``: a learning reference.

    The frame-pair step with a background model instead of the previous frame, the reference
    that Frigate (``frame_alpha``) and Motion keep. Input ``(H, W)`` uint8 grey (the current
    frame) with side input ``reference`` (the previous grey frame); output ``(H, W)`` uint8
    absolute difference in grey levels, like ``difference``, for a ``threshold`` to follow.

    State: the background ``B``, one per pixel, set from the reference frame on the first call
    of a stream (after :meth:`reset`, or when the frame size changes) and updated after each
    comparison. Arithmetic is integer fixed point so both backends agree bit for bit: ``B`` is
    kept as ``B * 2**16`` (int32), ``alpha`` is quantised to ``a = round(alpha * 2**16)``, the
    update is ``B += ((x * 2**16 - B) * a + 2**15) >> 16`` with 64-bit products (arithmetic
    shift, i.e. floor), and the comparison uses ``(B + 2**15) >> 16`` (rounded half up).
    """

    NAME = "running_average"
    KERNEL = "running_average"
    INPUT = Kind.GRAY
    OUTPUT = Kind.GRAY
    SIDE_INPUT = "reference"
    LEARNING_RATES = ("alpha",)
    PARAMS = (
        Param(
            "alpha",
            float,
            0.01,
            0.0,
            1.0,
            "fraction per frame",
            "learning rate: weight of the current frame in the background; 0.01 is Frigate's "
            "frame_alpha; 1 makes this the plain previous-frame difference",
        ),
    )

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self.alpha_q16 = to_q16(self.params["alpha"])
        self.reset()

    def reset(self) -> None:
        self._background: np.ndarray | None = None
        self._scratch = Scratch(d=(np.int32, ()), t=(np.float64, ()), level=(np.uint8, ()))
        self._device_shape: tuple[int, ...] | None = None

    @property
    def background(self) -> np.ndarray | None:
        """The CPU model's background, ``(H, W)`` int32 in grey levels * 2**16 (a copy), or ``None``."""
        return None if self._background is None else self._background.copy()

    def reference(self, src, side=None):
        if self._background is None or self._background.shape != src.shape:
            if side is None:
                raise ValueError("running_average: the first frame of a stream needs the reference frame")
            # int32 holds B, as in the kernel: it stays between its old value and x * 2**16.
            self._background = np.left_shift(side, 16, dtype=np.int32)
        out = np.empty(src.shape, np.uint8)
        height, width = src.shape
        rows = chunk_rows(width)
        run_bands(
            height, width, lambda band, start, stop: self._update(src, out, slice(start, stop), self._scratch.get(band, rows, width)), rows
        )
        return out

    def _update(self, src, out, rows: slice, scratch: dict[str, np.ndarray]) -> None:
        """Compare rows ``rows`` of ``src`` with the background into ``out``, then update it there."""
        b, x = self._background[rows], src[rows]
        n = len(b)
        d, t, level = scratch["d"][:n], scratch["t"][:n], scratch["level"][:n]
        np.add(b, 32768, out=d)
        d >>= 16  # the background rounded half up, at most 255
        np.copyto(level, d, casting="unsafe")
        cv2.absdiff(x, level, dst=out[rows])
        # The update B + ((d * a + 2**15) >> 16), d = x * 2**16 - B, is floor(B + d * (a * 2**-16)
        # + 1/2): |d| < 2**24 and a <= 2**16, so every term is exact in float64, and the value lies
        # between B and x * 2**16, so it is positive and truncation (the cast) is the floor.
        np.left_shift(x, 16, out=d, dtype=np.int32)
        d -= b
        np.multiply(d, self.alpha_q16 * 2.0**-16, out=t)
        t += b
        np.add(t, 0.5, out=b, casting="unsafe")

    def apply_kernel(self, cuda, src, dst, side=None):
        init = self._device_shape != src.shape
        if init and side is None:
            raise ValueError("running_average: the first frame of a stream needs the reference frame")
        background = cuda.buffer(self.state_key("background"), src.shape, np.int32)
        fn = cuda.function(self.KERNEL, "md_running_average_u8", "PPPPiii")
        n = element_count(dst)
        reference = side if side is not None else src  # not read once the background exists
        cuda.launch_1d(
            fn, int(n), src.gpudata, reference.gpudata, background.gpudata, dst.gpudata, n, np.int32(self.alpha_q16), np.int32(init)
        )
        self._device_shape = src.shape
