"""Register: move each grey frame onto the stream's first frame before the comparison (camera jitter)."""

from __future__ import annotations

import numpy as np

from motiondetect.filters.base import Filter, Kind, Param, planes

#: Most frames one GPU call registers: the batched path's largest batch (``scan.batch``).
MAX_FRAMES = 1024
#: Tiles per side of the consensus check (:func:`tile_votes`): 4 x 4 = 16 tiles.
TILES = 4
#: Tiles that must agree before a shift is taken: half the frame. A camera that shakes moves every
#: tile with texture, and 15 or 16 of the 16 tiles of each of the 20 dev clips' first frames have
#: texture (mean gradient of 2 grey levels or more); an object that is the only structure of a
#: plain scene moves only the tiles it covers (a 16-pixel square on a 64 x 48 frame: 6), and phase
#: correlation would otherwise follow it and hide its motion.
MIN_VOTES = 8


def hann_window(height: int, width: int) -> np.ndarray:
    """The separable 2-D Hann window, (H, W) float32: ``w(y) * w(x)`` with the symmetric
    ``w(i) = 0.5 - 0.5 cos(2 pi i / (n - 1))`` (1 where n is 1), computed in float64.
    ``cv2.createHanningWindow`` (used by ``cv2.phaseCorrelate``) is its square root."""

    def one(n: int) -> np.ndarray:
        return np.ones(1) if n == 1 else 0.5 - 0.5 * np.cos(2 * np.pi * np.arange(n) / (n - 1))

    return np.outer(one(height), one(width)).astype(np.float32)


def peak_shift(corr: np.ndarray, max_shift: int, ratio: float = 1.0, floor: float = 0.0) -> tuple[int, int]:
    """The shift (dx, dy), pixels, of the largest value of a correlation surface (H, W) within
    ``+-max_shift`` (indices wrap around). Ties go to (0, 0), then to the first in row-major order
    of (dy, dx), so a flat frame, whose surface is all zeros, is not moved; NaN counts as
    -infinity, and a surface with no finite value gives (0, 0); a peak that does not exceed
    ``ratio`` times the value at (0, 0) (float32 product), or does not exceed ``floor``, gives
    (0, 0) (as ``md_peak_shift_f32``)."""
    side = 2 * max_shift + 1
    offsets = np.arange(-max_shift, max_shift + 1)
    height, width = corr.shape
    values = np.nan_to_num(corr[np.ix_(offsets % height, offsets % width)].ravel(), nan=-np.inf, posinf=np.inf, neginf=-np.inf)
    best = values.max()
    centre = side * side // 2
    if (
        best == -np.inf
        or values[centre] == best
        or not (best > np.float32(ratio) * np.float32(values[centre]) and best > np.float32(floor))
    ):
        k = centre
    else:
        k = int(np.flatnonzero(values == best)[0])
    return k % side - max_shift, k // side - max_shift


def tile_votes(frame: np.ndarray, anchor: np.ndarray, dx: int, dy: int) -> int:
    """How many of the :data:`TILES` x :data:`TILES` tiles of an (H, W) uint8 frame agree that it
    shows the (H, W) uint8 ``anchor`` moved by (dx, dy): a tile (rows ``i H // TILES`` to
    ``(i + 1) H // TILES``, columns alike) agrees when its sum of absolute differences to the anchor
    with the frame read at ``(x + dx, y + dy)`` (borders replicated) is lower than the sum with
    the frame where it is (integers, as ``md_confirm_shift_u8``). A flat tile ties and does not
    vote, so only structure votes: the whole scene when the camera moved, one object's tiles when
    a moving object is all the texture there is. (A margin, such as 4/5 of the sum, refused real
    shifts of smooth tiles: over the 20 dev clips jittered by 4 px the mean pixel F fell from
    0.727 to 0.718; the plain comparison keeps 0.727.)"""
    height, width = frame.shape
    base = anchor.astype(np.int32)
    moved = np.abs(translate(frame, dx, dy, sign=1, replicate=True).astype(np.int32) - base)
    still = np.abs(frame.astype(np.int32) - base)
    votes = 0
    for i in range(TILES):
        rows = slice(i * height // TILES, (i + 1) * height // TILES)
        for j in range(TILES):
            cols = slice(j * width // TILES, (j + 1) * width // TILES)
            votes += int(moved[rows, cols].sum()) < int(still[rows, cols].sum())
    return votes


def translate(image: np.ndarray, dx: int, dy: int, sign: int, replicate: bool) -> np.ndarray:
    """``out(x, y) = image(x + sign * dx, y + sign * dy)`` for an (H, W) uint8 image; outside the
    image: the nearest edge pixel (``replicate``, OpenCV's ``BORDER_REPLICATE``) or 0."""
    height, width = image.shape
    xs = np.arange(width) + sign * dx
    ys = np.arange(height) + sign * dy
    out = image[np.ix_(np.clip(ys, 0, height - 1), np.clip(xs, 0, width - 1))]
    if not replicate:
        out[(ys < 0) | (ys >= height), :] = 0
        out[:, (xs < 0) | (xs >= width)] = 0
    return out


class Register(Filter):
    """Registration for a shaking camera: each grey frame is moved onto the stream's first frame
    (the anchor) by a global whole-pixel translation before the frame-pair filter compares it,
    and the comparison is moved back onto the frame after it.

    The translation is found by phase correlation (Kuglin and Hines, 1975): the frame and the
    anchor, each multiplied by a 2-D Hann window, are Fourier transformed (float32: NumPy's
    pocketfft on the CPU, cuFFT through scikit-cuda on the GPU), their cross-power spectrum
    ``F conj(A) / |F conj(A)|`` is transformed back, and the peak of that surface within
    ``+-max_shift`` pixels is the frame's shift (dx, dy): the frame shows the anchor's scene moved by
    (dx, dy). That peak is taken only when it is more than ``peak_ratio`` times the surface at
    (0, 0) (moving objects on a steady camera do not move the frame), higher than ``min_peak``
    (the share of the frame that agrees on the shift: rippling water gives low random peaks) and
    agreed by :data:`MIN_VOTES` of the tiles (:func:`tile_votes`: a lone object on a plain
    background cannot move the frame); otherwise the shift is (0, 0). The frame is then read at
    ``(x + dx, y + dy)`` (borders replicated), so the frame-pair
    filter and its background model always see the scene where the anchor had it; the detector
    reads the filter's output back at ``(x - dx, y - dy)``, 0 where that falls outside (no
    background is known there), so every later filter, the mask and the boxes are in the
    frame's own pixels (:class:`~motiondetect.pipeline.detector.MotionDetector`).

    Place it immediately before the frame-pair filter (``difference``, ``running_average``,
    ``gaussian_background``, ``subsense``), after the downscale: ``max_shift`` counts pixels of
    the image it gets. Input and output ``(H, W)`` uint8 grey.

    Both backends compute the surface in float32 with different FFTs, so its values differ in
    the last bits; the shift, its peak, is the same unless two candidates tie within rounding
    or the peak lies within rounding of a threshold,
    which on camera footage a sharp correlation peak makes rare (the GPU tests compare every
    frame's shift on real clips). The anchor is the stream's first frame for good
    (``ANCHORED``): a chunk scanned on its own first runs the file's first frame, then
    :meth:`seek` keeps the anchor, so its shifts are a sequential run's (:meth:`chunk_warmup`).
    """

    NAME = "register"
    KERNEL = "register"
    BATCHED = True
    ALIGNS = True
    ANCHORED = True
    INPUT = Kind.GRAY
    OUTPUT = Kind.GRAY
    PARAMS = (
        Param(
            "max_shift",
            int,
            8,
            1,
            64,
            "pixels",
            "largest shift searched, each way, at the size the filter sees; 8 covers the +-4 px "
            "jitter of benchmarks/jitter_study.py twice over (3 % of the default 240 rows)",
        ),
        Param(
            "peak_ratio",
            float,
            3.0,
            1.0,
            1000.0,
            "ratio",
            "a shift other than (0, 0) is taken only when its correlation exceeds the no-shift "
            "correlation by more than this factor, so moving objects on a steady camera do not "
            "move the frame; 1: the plain peak. 3: on the 11 dev clips, steady, 1 moved waving "
            "trees and oncoming cars (mean pixel F 0.600 against 0.611 unregistered), 3 keeps "
            "0.610, and jittered by +-4 px 0.589 (1: 0.590; 5: 0.587) (docs/evaluation.md)",
        ),
        Param(
            "min_peak",
            float,
            0.05,
            0.0,
            1.0,
            "fraction",
            "a shift other than (0, 0) is taken only when its peak exceeds this height: the "
            "surface of unit-magnitude cross-power spectra peaks at 1 when the whole frame moved "
            "by one shift, so its height is the share of the frame that agrees on it. 0.05: on "
            "the 20 dev clips the spurious shifts of steady footage (rippling water, a zoom, "
            "leaves before the lens) peak at 0.033 or less and the real shake of "
            "camerajitter_badminton at 0.18 or more; every leave-one-clip-out fold over 0, 0.03, "
            "0.05 and 0.08 (steady and jittered by 2 and 4 px) chose 0.05 (docs/evaluation.md)",
        ),
    )

    def __init__(self, engine: str = "kernel", **params) -> None:
        super().__init__(engine, **params)
        self.reset()

    def reset(self) -> None:
        self._anchor: np.ndarray | None = None  # conj-free half spectrum of the windowed anchor
        self._anchor_image: np.ndarray | None = None  # the anchor, (H, W) uint8, for tile_votes
        self._window: np.ndarray | None = None  # the Hann window of the anchor's size
        self._shift = (0, 0)
        self._device_anchor: tuple[int, int] | None = None  # (H, W) of the anchor on the device

    def seek(self) -> None:
        """Keep the anchor (and its window), forget the last frame's shift."""
        self._shift = (0, 0)

    def chunk_warmup(self) -> int | None:
        """0: each frame's shift depends only on the frame and the anchor, which a chunk task
        takes from the file's first frame (``ANCHORED``), not on the frames before it."""
        return 0

    @property
    def shift(self) -> tuple[int, int]:
        """The last frame's shift (dx, dy) in pixels, on the CPU backend."""
        return self._shift

    def _reach(self, height: int, width: int) -> int:
        """``max_shift``, limited so the search window does not wrap onto itself."""
        return max(0, min(self.params["max_shift"], (height - 1) // 2, (width - 1) // 2))

    def _floor(self, height: int, width: int) -> np.float32:
        """``min_peak`` on the unnormalised surface of an (H, W) image: ``min_peak * H * W`` in
        float32, the value both backends compare the peak with."""
        return np.float32(self.params["min_peak"]) * np.float32(height * width)

    def reference(self, src, side=None):
        height, width = src.shape
        if self._window is None or self._window.shape != src.shape:
            self._window, self._anchor = hann_window(height, width), None
        spectrum = np.fft.rfft2(src.astype(np.float32) * self._window)
        if self._anchor is None:
            self._anchor, self._anchor_image = spectrum, src.copy()
        product = spectrum * np.conj(self._anchor)
        magnitude = np.abs(product)
        cross = np.divide(product, magnitude, out=np.zeros_like(product), where=magnitude > 0)
        # Unnormalised inverse, as cuFFT's: the surface is H * W times the share of the frame.
        corr = np.fft.irfft2(cross, s=(height, width), norm="forward")
        shift = peak_shift(
            corr.astype(np.float32, copy=False), self._reach(height, width), self.params["peak_ratio"], self._floor(height, width)
        )
        if shift != (0, 0) and tile_votes(src, self._anchor_image, *shift) < MIN_VOTES:
            shift = (0, 0)
        self._shift = shift
        return translate(src, *self._shift, sign=1, replicate=True)

    def unshift_reference(self, image: np.ndarray) -> np.ndarray:
        """Move the frame-pair filter's output (H, W) uint8 back onto the last frame: read at
        ``(x - dx, y - dy)``, 0 outside."""
        return translate(image, *self._shift, sign=-1, replicate=False)

    def apply_kernel(self, cuda, src, dst, side=None):
        import pycuda.driver as drv

        frames, height, width = planes(src)
        if frames > MAX_FRAMES:
            raise ValueError(f"register: at most {MAX_FRAMES} frames per call; got {frames}")
        fft = cuda.fft
        bins = (height, width // 2 + 1)
        window = cuda.buffer(("register_window", height, width), (height, width), np.float32)
        if self._device_anchor != (height, width):
            window.set(hann_window(height, width))
        real = cuda.buffer(("register_real", frames, height, width), (frames, height, width), np.float32)
        spectra = cuda.buffer(("register_spectra", frames, *bins), (frames, *bins), np.complex64)
        anchor = cuda.buffer(self.state_key("anchor"), (1, *bins), np.complex64)
        shifts = cuda.buffer(self.state_key("shift"), (MAX_FRAMES, 2), np.int32)
        size = (np.int32(width), np.int32(height))
        windowed = cuda.function(self.KERNEL, "md_window_u8_f32", "PPPii")
        anchor_image = cuda.buffer(self.state_key("anchor_image"), (height, width), np.uint8)
        if self._device_anchor != (height, width):
            cuda.launch_2d(windowed, (height, width), src.gpudata, window.gpudata, real.gpudata, *size)
            fft.forward(real[:1], anchor)
            drv.memcpy_dtod_async(anchor_image.gpudata, src.gpudata, height * width, cuda.stream)
            self._device_anchor = (height, width)
        cuda.launch_2d(windowed, (height, width), src.gpudata, window.gpudata, real.gpudata, *size, frames=frames)
        fft.forward(real, spectra)
        cross = cuda.function(self.KERNEL, "md_cross_power_c64", "PPii")
        cuda.launch_2d(cross, bins, spectra.gpudata, anchor.gpudata, np.int32(bins[1]), np.int32(bins[0]), frames=frames)
        fft.inverse(spectra, real)
        peak = cuda.function(self.KERNEL, "md_peak_shift_f32", "PPiiiff")
        reach = np.int32(self._reach(height, width))
        ratio = np.float32(self.params["peak_ratio"])
        floor = self._floor(height, width)
        peak.prepared_async_call((frames, 1), (256, 1, 1), cuda.stream, real.gpudata, shifts.gpudata, *size, reach, ratio, floor)
        confirm = cuda.function(self.KERNEL, "md_confirm_shift_u8", "PPPiiii")
        votes = (np.int32(TILES), np.int32(MIN_VOTES))
        confirm.prepared_async_call((frames, 1), (256, 1, 1), cuda.stream, src.gpudata, anchor_image.gpudata, shifts.gpudata, *size, *votes)
        self._translate(cuda, src, dst, shifts.gpudata, sign=1, replicate=True)

    def unshift(self, cuda, src, dst, offset: int = 0) -> None:
        """Enqueue :meth:`unshift_reference` on the device for a (K, H, W) or (H, W) uint8
        output of the frame-pair filter, image ``k`` moved by the shift of frame ``offset + k``
        of the last :meth:`apply_kernel` call (``offset`` 1 when that call's first frame was the
        stream's first, which the frame-pair filter skips)."""
        shifts = cuda.buffer(self.state_key("shift"), (MAX_FRAMES, 2), np.int32)
        self._translate(cuda, src, dst, int(shifts.gpudata) + 8 * offset, sign=-1, replicate=False)

    def _translate(self, cuda, src, dst, shifts, sign: int, replicate: bool) -> None:
        frames, height, width = planes(src)
        fn = cuda.function(self.KERNEL, "md_translate_u8", "PPPiiii")
        cuda.launch_2d(
            fn,
            (height, width),
            src.gpudata,
            dst.gpudata,
            shifts,
            np.int32(width),
            np.int32(height),
            np.int32(sign),
            np.int32(replicate),
            frames=frames,
        )
