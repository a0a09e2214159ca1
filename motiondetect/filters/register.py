"""Register: move each grey frame onto the stream's first frame before the comparison (camera jitter)."""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from motiondetect.filters.base import Filter, Kind, Param, planes

#: Most frames one GPU call registers: the batched path's largest batch (``scan.batch``).
MAX_FRAMES = 1024
#: Tiles per side of the refinement and consensus check (:func:`tile_sads`): 4 x 4 = 16 tiles.
TILES = 4
#: Most row bands a tile's sums are split over on the GPU (md_register_shift_u8), for a batch
#: too small to fill the device with one block a tile.
MAX_SPLITS = 8
#: Tiles that must agree before a shift is taken: half the frame. A camera that shakes moves every
#: tile with texture, and 15 or 16 of the 16 tiles of each of the 20 dev clips' first frames have
#: texture (mean gradient of 2 grey levels or more); an object that is the only structure of a
#: plain scene moves only the tiles it covers (a 16-pixel square on a 64 x 48 frame: 6), and phase
#: correlation would otherwise follow it and hide its motion.
MIN_VOTES = 8
#: The phase correlation runs on the image shrunk by this factor each way (sums of 2 x 2
#: blocks), a quarter of the pixels, and finds the shift to within one pixel either way; the sums
#: of absolute differences of the full image choose among the 3 x 3 shifts around it
#: (:func:`refine_shift`).
COARSE = 2
#: Candidates the refinement weighs: the 3 x 3 shifts around the coarse one, row-major
#: ((-1, -1), (0, -1), ... (1, 1)), then no shift, the consensus check's reference.
CANDIDATES = 10
#: The candidate at the centre of the 3 x 3, twice the coarse shift itself: ties go to it.
CENTRE = 4
#: The near window's largest half-width, pixels of the shrunk image (8 at the filter's size): a
#: coarse peak beyond it must beat the window's by ``far_ratio``, whatever the reach, so the
#: secondary peaks of a periodic scene (a highway's dashed lane markings) 8-16 pixels off stay
#: refused when the reach grows past 16 (``sbi_highway_ii`` jittered by 4 px: 0.870 with it, 0.821
#: with half of a reach of 32 as the window).
NEAR_MAX = 4
#: The default ``taper``: the share of each side of the coarse image that its window tapers
#: (:func:`tukey_window`), an eighth at each end. A Hann window (1) weighs the middle and fades
#: the outer quarter away, where a highway camera's texture often is (the verges, the barrier)
#: while the middle holds the road and its cars: ``sbi_highway_ii`` shaken by +-12 px (benchmarks/jitter_study.py)
#: 0.542 with the Hann window, 0.872 with 0.25. Leave-one-clip-out over the Hann window and
#: tapers of 0.5, 0.25 and 0.1 (the 20 dev clips, steady and shaken by whole pixels, fractions of
#: a pixel, and with a turn) chose 0.25 in 18 of 20 folds: 0.7663 held out against 0.7641; a
#: turn, which moves the edges most, is where it loses (docs/evaluation-log.md, "The correlation's
#: window").
TAPER = 0.25
#: The refinement compares the frame with the anchor at the frame's brightness when the two
#: differ by more than 1 / GAIN_DIVISOR (2 %) of the anchor's (:func:`matched_levels`): a light
#: switched or dimmed makes every candidate's sum of absolute differences large, and the one-pixel
#: error of a shifted texture then decides less than the level change does; a shift of one pixel
#: taken on such a frame sets a whole frame of false motion (``baseline_pedestrians`` with its
#: light at 0.4 of its level halfway through: frame F1 0.473 without the match, 0.945 with it, as
#: with a steady light; docs/evaluation-log.md, "A refinement that sees a gain").
#: Within 2 % the anchor is compared as it is, so steady footage is refined as before.
GAIN_DIVISOR = 50


def tukey_window(height: int, width: int, taper: float = TAPER) -> np.ndarray:
    """The separable 2-D Tukey (tapered cosine) window, (H, W) float32: ``w(y) * w(x)``, where
    the symmetric ``w`` over n points is 1 in the middle and falls to 0 at each end over the outer
    ``taper / 2`` of the points as half a Hann window: ``w(i) = 0.5 - 0.5 cos(2 pi x / taper)`` for
    ``x = i / (n - 1) < taper / 2``, mirrored at the other end (Harris 1978;
    ``scipy.signal.windows.tukey`` with ``alpha = taper``; 1 is the Hann window, 0 none). 1 where n
    is 1. Computed in float64."""

    def one(n: int) -> np.ndarray:
        if n == 1 or taper <= 0:
            return np.ones(n)
        x = np.minimum(np.arange(n), np.arange(n)[::-1]) / (n - 1)  # distance to the nearer end
        return np.where(x < taper / 2, 0.5 - 0.5 * np.cos(2 * np.pi * x / taper), 1.0)

    return np.outer(one(height), one(width)).astype(np.float32)


def coarse_size(height: int, width: int) -> tuple[int, int]:
    """(rows, columns) of :func:`block_sums` of an (H, W) image: ``ceil(H / 2)``, ``ceil(W / 2)``."""
    return -(-height // COARSE), -(-width // COARSE)


def block_sums(image: np.ndarray) -> np.ndarray:
    """The (H, W) uint8 image shrunk by :data:`COARSE`: each value of the (ceil(H / 2),
    ceil(W / 2)) float32 result is the sum of a 2 x 2 block (0..1020 grey levels, exact), the last
    row and column repeated where H or W is odd (as ``md_coarse_window_u8_f32``)."""
    height, width = image.shape
    full = cv2.copyMakeBorder(image, 0, height % 2, 0, width % 2, cv2.BORDER_REPLICATE).astype(np.float32)
    return full[0::2, 0::2] + full[1::2, 0::2] + full[0::2, 1::2] + full[1::2, 1::2]


def matched_levels(frame: int, anchor: int) -> np.ndarray | None:
    """The table (256,) uint8 that takes the anchor's grey levels to the frame's brightness: level
    ``v`` to ``round(v * frame / anchor)`` (halves up), at most 255, where ``frame`` and
    ``anchor`` are the brightness of the two, grey levels: the sum of their :func:`block_sums`
    (the last row and column counted twice where H or W is odd, as ``md_coarse_window_u8_f32``
    accumulates it); None (the anchor as it is) where they differ by no more than ``anchor /
    GAIN_DIVISOR`` or the anchor is black. A gain (a light dimmed, an iris, an exposure step)
    multiplies every level alike, so the anchor at the frame's brightness differs from the frame
    by its shift alone. Integer arithmetic, as ``md_register_shift_u8``."""
    if anchor <= 0 or GAIN_DIVISOR * abs(frame - anchor) <= anchor:
        return None
    levels = np.arange(256, dtype=np.int64)
    return np.minimum((2 * levels * frame + anchor) // (2 * anchor), 255).astype(np.uint8)


def peak_shift(corr: np.ndarray, max_shift: int, ratio: float = 1.0, floor: float = 0.0, far_ratio: float = 1.0) -> tuple[int, int] | None:
    """The shift (dx, dy), pixels, of the largest value of a correlation surface (H, W) within
    ``+-max_shift`` (indices wrap around), or None when that value does not exceed ``floor`` (the
    frame shares too little with the anchor to be registered). Ties go to (0, 0), then to the
    first in row-major order of (dy, dx), so a flat frame, whose surface is all zeros, is not
    moved; NaN counts as -infinity, and a surface with no finite value gives None.

    Near shifts are preferred: a peak beyond ``+-min(ceil(max_shift / 2), NEAR_MAX)`` (either
    coordinate) is taken only when it is at least ``far_ratio`` times the largest value within that near window
    (float32 product; 1 keeps the plain peak), else the near window's peak stands in for it, so the secondary peaks of a
    periodic scene (dashed lane markings, fences) do not beat a small true shift while a large
    shake, whose peak stands alone, is still found. Then a peak that does not exceed ``ratio``
    times the value at (0, 0) (float32 product) gives (0, 0). As ``md_peak_search`` (kernels/register.cu)."""
    side = 2 * max_shift + 1
    offsets = np.arange(-max_shift, max_shift + 1)
    height, width = corr.shape
    values = np.nan_to_num(corr[np.ix_(offsets % height, offsets % width)].ravel(), nan=-np.inf, posinf=np.inf, neginf=-np.inf)
    centre = side * side // 2

    def peak(candidates: np.ndarray) -> tuple[np.float32, int]:
        best = candidates.max()
        return best, centre if candidates[centre] == best else int(np.flatnonzero(candidates == best)[0])

    best, k = peak(values)
    if not best > np.float32(floor):
        return None
    near = min(-(-max_shift // 2), NEAR_MAX)
    if max(abs(k % side - max_shift), abs(k // side - max_shift)) > near:  # a far peak
        dy, dx = np.divmod(np.arange(side * side), side)
        inside = (np.abs(dx - max_shift) <= near) & (np.abs(dy - max_shift) <= near)
        near_best, near_k = peak(np.where(inside, values, -np.inf))
        if not best >= np.float32(far_ratio) * np.float32(near_best):
            best, k = near_best, near_k
    if values[centre] == best or not best > np.float32(ratio) * np.float32(values[centre]):
        k = centre
    return k % side - max_shift, k // side - max_shift


def candidates(coarse: tuple[int, int], reach: int) -> list[tuple[int, int]]:
    """The :data:`CANDIDATES` shifts (dx, dy) the refinement weighs for a coarse shift (pixels of
    the shrunk image): ``COARSE * coarse + (a, b)`` for b, a in -1, 0, 1 (row-major), each
    coordinate clamped to ``+-reach``, then (0, 0)."""
    cx, cy = coarse

    def clamp(v: int) -> int:
        return min(max(v, -reach), reach)

    return [(clamp(COARSE * cx + a), clamp(COARSE * cy + b)) for b in (-1, 0, 1) for a in (-1, 0, 1)] + [(0, 0)]


def _shifted(frame: np.ndarray, shifts: list[tuple[int, int]]) -> list[np.ndarray]:
    """Views of the (H, W) uint8 ``frame`` read at ``(x + dx, y + dy)``, one per shift, borders
    replicated."""
    height, width = frame.shape
    pad = max((max(abs(dx), abs(dy)) for dx, dy in shifts), default=0)
    padded = _padded(frame, pad, replicate=True)
    return [padded[pad + dy : pad + dy + height, pad + dx : pad + dx + width] for dx, dy in shifts]


def tile_sads(frame: np.ndarray, anchor: np.ndarray, shifts: list[tuple[int, int]]) -> np.ndarray:
    """Sums of absolute differences, (len(shifts), TILES, TILES) int64, between the (H, W) uint8
    ``anchor`` and the (H, W) uint8 frame read at ``(x + dx, y + dy)`` (borders replicated), per
    tile: tile (i, j) holds rows ``i H // TILES`` to ``(i + 1) H // TILES``, columns alike (integers,
    as ``md_register_shift_u8``)."""
    return _tile_sums(_shifted(frame, shifts), anchor)


def _tile_sums(views: list[np.ndarray], anchor: np.ndarray) -> np.ndarray:
    """:func:`tile_sads` of views already shifted (:func:`_shifted`)."""
    height, width = anchor.shape
    rows = np.arange(TILES + 1) * height // TILES
    cols = np.arange(TILES + 1) * width // TILES
    sads = np.empty((len(views), TILES, TILES), np.int64)
    for n, view in enumerate(views):
        diff = cv2.absdiff(view, anchor)
        # Summed-area table in float64, exact below 2**53; tile sums from its corners.
        table = cv2.integral(diff, sdepth=cv2.CV_64F)[np.ix_(rows, cols)]
        sads[n] = (table[1:, 1:] - table[:-1, 1:] - table[1:, :-1] + table[:-1, :-1]).astype(np.int64)
    return sads


def refine_shift(frame: np.ndarray, anchor: np.ndarray, coarse: tuple[int, int], reach: int) -> tuple[int, int]:
    """The frame's shift (dx, dy), pixels: of the :func:`candidates` around the ``coarse`` shift,
    the 3 x 3 one with the lowest sum of absolute differences to the ``anchor`` over the whole
    frame (ties to the centre, then to the first in row-major order), kept only when at least
    :data:`MIN_VOTES` tiles agree with it: a tile agrees when its sum is lower with the shift than
    without (a flat tile ties and does not vote, so only structure votes: the whole scene when the
    camera moved, one object's tiles when a moving object is all the texture there is). Else (0,
    0). Integer sums, as ``md_register_shift_u8``. (A margin, such as 4/5 of the sum, refused real shifts
    of smooth tiles: over the 20 dev clips jittered by 4 px the mean pixel F fell from 0.727 to
    0.718; the plain comparison keeps 0.727.)"""
    shifts = candidates(coarse, reach)  # the 3 x 3, then (0, 0)
    views = _shifted(frame, shifts)
    # Whole-frame sums first (cv2.norm's L1 is exact in float64 below 2**53), the tiles' only for
    # the chosen shift against none: 0.06 ms a frame at 480x270 instead of 0.63 for all the tiles.
    totals = np.array([cv2.norm(view, anchor, cv2.NORM_L1) for view in views[: CANDIDATES - 1]])
    best = CENTRE if totals[CENTRE] == totals.min() else int(np.argmin(totals))
    if shifts[best] == (0, 0):
        return 0, 0
    moved, still = _tile_sums([views[best], views[CANDIDATES - 1]], anchor)
    return shifts[best] if int(np.sum(moved < still)) >= MIN_VOTES else (0, 0)


def translate(image: np.ndarray, dx: int, dy: int, sign: int, replicate: bool) -> np.ndarray:
    """``out(x, y) = image(x + sign * dx, y + sign * dy)`` for an (H, W) uint8 image; outside the
    image: the nearest edge pixel (``replicate``, OpenCV's ``BORDER_REPLICATE``) or 0."""
    height, width = image.shape
    pad = max(abs(dx), abs(dy))
    padded = _padded(image, pad, replicate)
    x0, y0 = pad + sign * dx, pad + sign * dy
    return np.ascontiguousarray(padded[y0 : y0 + height, x0 : x0 + width])


def _padded(image: np.ndarray, pad: int, replicate: bool) -> np.ndarray:
    """A copy of the (H, W) uint8 image with ``pad`` pixels added on every side: the nearest edge
    pixel (``replicate``) or 0."""
    border = cv2.BORDER_REPLICATE if replicate else cv2.BORDER_CONSTANT
    return cv2.copyMakeBorder(np.ascontiguousarray(image), pad, pad, pad, pad, border, value=0)


@dataclass(frozen=True)
class _Launch:
    """What :meth:`Register.apply_kernel` launches with for one size and set of parameters."""

    key: tuple
    shrunk: tuple[int, int]  # the coarse image, (rows, columns)
    bins: tuple[int, int]  # its half spectrum, (rows, columns)
    splits: int  # row bands per tile (md_register_shift_u8)
    window_args: tuple  # md_coarse_window_u8_f32's sizes
    shift_args: tuple  # md_register_shift_u8's scalars


class Register(Filter):
    """Registration for a shaking camera: each grey frame is moved onto the stream's first frame
    (the anchor) by a global whole-pixel translation before the frame-pair filter compares it,
    and the comparison is moved back onto the frame after it.

    The translation is found in two steps. Phase correlation (Kuglin and Hines, 1975) on the
    frame shrunk by :data:`COARSE` (:func:`block_sums`): the shrunk frame and anchor, each
    multiplied by a 2-D Tukey window (:func:`tukey_window`; with the default ``taper``, flat but
    for the outer eighth of each side), are Fourier transformed (float32: NumPy's pocketfft on
    the CPU, cuFFT through scikit-cuda on the GPU), their cross-power spectrum
    ``F conj(A) / |F conj(A)|`` is transformed back, and the peak of that surface within
    ``+-max_shift / 2`` is the coarse shift, a peak beyond half that reach (at most 8 pixels at the
    filter's size, :data:`NEAR_MAX`) taken only when it
    beats the nearer ones by ``far_ratio`` (:func:`peak_shift`). A frame whose surface nowhere
    there exceeds ``min_peak``
    (the share of the frame that agrees on a shift: rippling water gives low random peaks, a scene
    unlike the anchor no peak) is not moved; a peak elsewhere than (0, 0) is taken only when it
    is more than ``peak_ratio`` times the surface at (0, 0) (moving objects on a steady camera do
    not move the frame), else the coarse shift is (0, 0). Then the sums of
    absolute differences of the full frame to the anchor choose among the 3 x 3 whole-pixel
    shifts around twice the coarse one (the anchor's levels scaled to the frame's brightness
    where a light or the exposure moved it by more than 2 %, :func:`matched_levels`: the
    correlation ignores a gain, the sums would not), and the tiles vote (:func:`refine_shift`: a lone object on
    a plain background cannot move the frame). The result (dx, dy) says the frame shows the
    anchor's scene moved by (dx, dy), within ``+-max_shift`` pixels and at most one tile (a
    quarter of the height or width: a longer shift would give a lone object the votes of two
    places). The shrunk correlation costs a
    quarter of the full one's transforms (1080p on an H200: see docs/evaluation-log.md, "Camera
    jitter"); the refinement keeps whole-pixel precision, including shifts of one pixel, which
    the shrunk surface splits between two peaks. The frame is then read at
    ``(x + dx, y + dy)`` (borders replicated), so the frame-pair
    filter and its background model always see the scene where the anchor had it; the detector
    reads the filter's output back at ``(x - dx, y - dy)``, 0 where that falls outside (no
    background is known there), so every later filter, the mask and the boxes are in the
    frame's own pixels (:class:`~motiondetect.pipeline.detector.MotionDetector`).

    Place it immediately before the frame-pair filter (``difference``, ``running_average``,
    ``gaussian_background``, ``subsense``), after the downscale: ``max_shift`` counts pixels of
    the image it gets. Input and output ``(H, W)`` uint8 grey.

    Both backends compute the surface in float32 with different FFTs, so its values differ in
    the last bits; the coarse shift, its peak, is the same unless two candidates tie within
    rounding or the peak lies within rounding of a threshold, which on camera footage a sharp
    correlation peak makes rare, and the refinement is integer arithmetic (the GPU tests compare every
    frame's shift on real clips). The anchor is the stream's first frame for good
    (``ANCHORED``): a chunk scanned on its own first runs the file's first frame, then
    :meth:`seek` keeps the anchor, so its shifts are a sequential run's (:meth:`chunk_warmup`).
    """

    NAME = "register"
    KERNEL = "register"
    BATCHED = True
    ALIGNS = True
    CUFFT = True
    ANCHORED = True
    INPUT = Kind.GRAY
    OUTPUT = Kind.GRAY
    PARAMS = (
        Param(
            "max_shift",
            int,
            32,
            1,
            64,
            "pixels",
            "largest shift searched, each way, at the size the filter sees (13 % of the default "
            "240 rows). On the 20 dev clips jittered by up to 20 px (benchmarks/jitter_study.py) 32 "
            "holds mean pixel F 0.697 where 16 fell to 0.436; steady, +-4 and +-12 px within 0.003 "
            "(16 held +-12 px where 8 fell to 0.396); a pan of 5 % of the width 0.532 -> 0.778 "
            "(benchmarks/pan_study.py; docs/evaluation-log.md)",
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
            "0.610, and jittered by +-4 px 0.589 (1: 0.590; 5: 0.587) (docs/evaluation-log.md)",
        ),
        Param(
            "min_peak",
            float,
            0.08,
            0.0,
            1.0,
            "fraction",
            "a frame is moved only when the coarse correlation surface peaks above this height: "
            "the surface of unit-magnitude cross-power spectra peaks at 1 when the whole frame "
            "moved by one shift, so its height is the share of the frame that agrees on it. 0.08: "
            "on the 20 dev clips the real shake of camerajitter_badminton peaks at 0.30 to 0.74, "
            "and the spurious peaks of steady footage (rippling water, a zoom, leaves before the "
            "lens) at a median of 0.04 to 0.05; 19 of the 20 leave-one-clip-out folds over 0.02, "
            "0.05 and 0.08 (steady and jittered by 2 and 4 px) chose 0.08 (docs/evaluation-log.md)",
        ),
        Param(
            "taper",
            float,
            TAPER,
            0.0,
            1.0,
            "fraction",
            "share of each side of the shrunk image over which the correlation's Tukey window "
            "falls to 0 (an eighth at each end); 1: the Hann window, which weighs the middle. 0.25: "
            "leave-one-clip-out over 1, 0.5, 0.25 and 0.1 (the 20 dev clips steady, shaken by whole "
            "and fractions of pixels, and turned) chose it in 18 of 20 folds, 0.7663 held out "
            "against the Hann window's 0.7641; a camera that rolls may do better with 0.5 or 1 "
            "(docs/evaluation-log.md)",
        ),
        Param(
            "far_ratio",
            float,
            2.0,
            1.0,
            1000.0,
            "ratio",
            "a coarse peak beyond half the search's reach is taken only when it is at least this "
            "factor times the nearer ones (periodic scenes have secondary peaks at their "
            "period); 1: the plain peak. 2.0: the choice of 19 of the 20 leave-one-clip-out "
            "folds over 1, 1.5, 2, 3 and 4 (steady and jittered by 4, 8 and 12 px; held out "
            "0.736, max_shift 8 without it 0.659); a highway's lane markings jittered by 4 px "
            "(sbi_highway_ii) 0.839 with max_shift 8, 0.798 with 16 alone, 0.834 with it "
            "(docs/evaluation-log.md)",
        ),
    )

    def __init__(self, engine: str = "kernel", **params) -> None:
        super().__init__(engine, **params)
        self.reset()

    def reset(self) -> None:
        self._anchor: np.ndarray | None = None  # conj-free half spectrum of the windowed anchor
        self._anchor_image: np.ndarray | None = None  # the anchor, (H, W) uint8, for refine_shift
        self._anchor_brightness = 0  # the sum of its block_sums, for matched_levels
        self._window: np.ndarray | None = None  # the Tukey window of the shrunk anchor's size
        self._shift = (0, 0)
        self._device_anchor: tuple[int, int] | None = None  # (H, W) of the anchor on the device
        self._launch: _Launch | None = None

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

    @staticmethod
    def _limit(height: int, width: int) -> int:
        """The longest shift searched in an (h, w) image, pixels: one tile of the vote
        (``min(h, w) // TILES``). A longer shift lets a lone object's old and new places cover
        separate tiles, twice the votes it has (a 16-pixel square on a 64 x 48 frame 18 pixels from
        its start: 9 of the 16); it also keeps the search window from wrapping onto itself. 240
        rows leave 60."""
        return min(height, width) // TILES

    def _reach(self, height: int, width: int) -> int:
        """``max_shift``, limited by :meth:`_limit`."""
        return min(self.params["max_shift"], self._limit(height, width))

    def _coarse_reach(self, height: int, width: int) -> int:
        """The coarse search's reach, pixels of the shrunk (h, w) image: ``ceil(max_shift / 2)``,
        limited by :meth:`_limit`."""
        return min(-(-self.params["max_shift"] // COARSE), self._limit(height, width))

    def _floor(self, height: int, width: int) -> np.float32:
        """``min_peak`` on the unnormalised surface of an (h, w) shrunk image: ``min_peak * h * w``
        in float32, the value both backends compare the peak with."""
        return np.float32(self.params["min_peak"]) * np.float32(height * width)

    def reference(self, src, side=None):
        height, width = src.shape
        shrunk = block_sums(src)
        if self._window is None or self._window.shape != shrunk.shape:
            self._window, self._anchor = tukey_window(*shrunk.shape, self.params["taper"]), None
        spectrum = np.fft.rfft2(shrunk * self._window)
        brightness = int(shrunk.sum(dtype=np.float64))  # exact below 2**53
        if self._anchor is None:
            self._anchor, self._anchor_image, self._anchor_brightness = spectrum, src.copy(), brightness
        product = spectrum * np.conj(self._anchor)
        magnitude = np.abs(product)
        # A flat frame (a covered lens) has spectra of rounding noise, whose ratios may overflow to
        # inf and NaN; the peak search counts NaN as -infinity, as the kernel does: no warning.
        with np.errstate(over="ignore", invalid="ignore"):
            cross = np.divide(product, magnitude, out=np.zeros_like(product), where=magnitude > 0)
            # Unnormalised inverse, as cuFFT's: the surface is h * w times the share of the frame.
            corr = np.fft.irfft2(cross, s=shrunk.shape, norm="forward").astype(np.float32, copy=False)
        params = self.params
        coarse = peak_shift(corr, self._coarse_reach(*shrunk.shape), params["peak_ratio"], self._floor(*shrunk.shape), params["far_ratio"])
        if coarse is None:  # nothing in common with the anchor: no shift to refine
            self._shift = (0, 0)
        else:
            levels = matched_levels(brightness, self._anchor_brightness)
            anchor = self._anchor_image if levels is None else cv2.LUT(self._anchor_image, levels)  # at the frame's brightness
            self._shift = refine_shift(src, anchor, coarse, self._reach(height, width))
        return translate(src, *self._shift, sign=1, replicate=True)

    def reference_planes(self, planes: np.ndarray) -> np.ndarray:
        """Move each (H, W) plane by the last frame's shift, as :meth:`reference` moved it."""
        return np.stack([translate(plane, *self._shift, sign=1, replicate=True) for plane in planes])

    def apply_planes(self, cuda, src, dst, frames: int = 1) -> bool:
        """Each plane's K frames moved by their frames' shifts of the last :meth:`apply_kernel`
        call (frame k of each plane by frame k's), all planes in one launch."""
        shifts = cuda.buffer(self.state_key("shift"), (MAX_FRAMES, 2), np.int32)
        self._translate(cuda, src, dst, shifts.gpudata, sign=1, replicate=True, period=frames)
        return True

    def unshift_reference(self, image: np.ndarray) -> np.ndarray:
        """Move the frame-pair filter's output (H, W) uint8 back onto the last frame: read at
        ``(x - dx, y - dy)``, 0 outside."""
        return translate(image, *self._shift, sign=-1, replicate=False)

    def _launch_values(self, frames: int, height: int, width: int, multiprocessors: int) -> _Launch:
        """The sizes and scalar arguments of :meth:`apply_kernel`'s launches for ``frames``
        images of (H, W): pure values (no device addresses), made again only when the size or a
        parameter changes, so a frame at a time does not rebuild them."""
        key = (frames, height, width, multiprocessors, tuple(self.params.values()))
        if self._launch is None or self._launch.key != key:
            shrunk = coarse_size(height, width)
            # Row bands per tile, enough blocks of 256 threads to fill the device (8 per
            # multiprocessor); any number gives the same sums.
            splits = min(MAX_SPLITS, max(1, -(-8 * multiprocessors // (TILES * TILES * frames))))
            params = self.params
            self._launch = _Launch(
                key=key,
                shrunk=shrunk,
                bins=(shrunk[0], shrunk[1] // 2 + 1),
                splits=splits,
                window_args=(width, height, shrunk[1], shrunk[0]),
                shift_args=(
                    shrunk[1],
                    shrunk[0],
                    self._coarse_reach(*shrunk),
                    np.float32(params["peak_ratio"]),
                    self._floor(*shrunk),
                    np.float32(params["far_ratio"]),
                    width,
                    height,
                    TILES,
                    splits,
                    self._reach(height, width),
                    MIN_VOTES,
                    GAIN_DIVISOR,
                ),
            )
        return self._launch

    def apply_with_planes(self, cuda, src, dst, side, planes_src, planes_dst, frames: int = 1) -> bool:
        """:meth:`apply` and :meth:`apply_planes` with the grey frames and their planes moved in
        one launch."""
        self.apply_kernel(cuda, src, dst, side, chroma=(planes_src, planes_dst))
        return True

    def apply_kernel(self, cuda, src, dst, side=None, chroma=None):
        """Enqueue the registration of a grey frame (H, W) or batch (K, H, W) into ``dst``, and
        with ``chroma`` = (source, destination), each (2 K, H, W) uint8, the move of the frames'
        Cb and Cr planes in the same launch as theirs."""
        frames, height, width = planes(src)
        if frames > MAX_FRAMES:
            raise ValueError(f"register: at most {MAX_FRAMES} frames per call; got {frames}")
        launch = self._launch_values(frames, height, width, cuda.multiprocessors)
        shrunk, bins, splits = launch.shrunk, launch.bins, launch.splits
        taper = self.params["taper"]
        window = cuda.buffer(("register_window", *shrunk, taper), shrunk, np.float32)  # per taper: shared by filters
        real = cuda.buffer(("register_real", frames, *shrunk), (frames, *shrunk), np.float32)
        spectra = cuda.buffer(("register_spectra", frames, *bins), (frames, *bins), np.complex64)
        anchor = cuda.buffer(self.state_key("anchor"), (1, *bins), np.complex64)
        # md_register_shift_u8's last-block tickets, one per frame: zero, and left zero by it.
        tickets = cuda.buffer(("register_tickets",), (MAX_FRAMES,), np.uint32, zeroed=True)
        shifts = cuda.buffer(self.state_key("shift"), (MAX_FRAMES, 2), np.int32)
        # Each frame's brightness, which md_coarse_window_u8_f32 adds up and md_register_shift_u8
        # reads and leaves zero; the anchor's is kept.
        brightness = cuda.buffer(("register_brightness",), (MAX_FRAMES,), np.uint64, zeroed=True)
        anchor_brightness = cuda.buffer(self.state_key("anchor_brightness"), (1,), np.uint64)
        sads = cuda.buffer(("register_sads", frames, splits), (frames, TILES * TILES * splits, CANDIDATES), np.uint64)
        windowed = cuda.function(self.KERNEL, "md_coarse_window_u8_f32", "PPPPiiii")
        anchor_image = cuda.buffer(self.state_key("anchor_image"), (height, width), np.uint8)
        if self._device_anchor != (height, width):
            import pycuda.driver as drv

            window.set(tukey_window(*shrunk, taper))
            drv.memset_d8_async(anchor_brightness.gpudata, 0, anchor_brightness.nbytes, cuda.stream)
            cuda.launch_2d(windowed, shrunk, src.gpudata, window.gpudata, real.gpudata, anchor_brightness.gpudata, *launch.window_args)
            cuda.fft.forward(real[:1], anchor)
            drv.memcpy_dtod_async(anchor_image.gpudata, src.gpudata, height * width, cuda.stream)
            self._device_anchor = (height, width)
        cuda.launch_2d(windowed, shrunk, src.gpudata, window.gpudata, real.gpudata, brightness.gpudata, *launch.window_args, frames=frames)
        cuda.fft.forward(real, spectra)
        cross = cuda.function(self.KERNEL, "md_cross_power_c64", "PPii")
        cuda.launch_2d(cross, bins, spectra.gpudata, anchor.gpudata, bins[1], bins[0], frames=frames)
        cuda.fft.inverse(spectra, real)
        shift = cuda.function(self.KERNEL, "md_register_shift_u8", "PPPPPPPPiiifffiiiiiii")
        shift.prepared_async_call(
            (TILES * TILES * splits, frames),
            (256, 1, 1),
            cuda.stream,
            real.gpudata,
            src.gpudata,
            anchor_image.gpudata,
            sads.gpudata,
            tickets.gpudata,
            shifts.gpudata,
            brightness.gpudata,
            anchor_brightness.gpudata,
            *launch.shift_args,
        )
        self._translate(cuda, src, dst, shifts.gpudata, sign=1, replicate=True, chroma=chroma)

    def unshift(self, cuda, src, dst, offset: int = 0) -> None:
        """Enqueue :meth:`unshift_reference` on the device for a (K, H, W) or (H, W) uint8
        output of the frame-pair filter, image ``k`` moved by the shift of frame ``offset + k``
        of the last :meth:`apply_kernel` call (``offset`` 1 when that call's first frame was the
        stream's first, which the frame-pair filter skips)."""
        shifts = cuda.buffer(self.state_key("shift"), (MAX_FRAMES, 2), np.int32)
        self._translate(cuda, src, dst, int(shifts.gpudata) + 8 * offset, sign=-1, replicate=False)

    def _translate(self, cuda, src, dst, shifts, sign: int, replicate: bool, period: int | None = None, chroma=None) -> None:
        """Enqueue ``md_translate_u8`` on the images of ``src`` into ``dst``, image ``z`` by the
        shift of frame ``z % period`` (default: the number of images); ``chroma`` = (source,
        destination) of the frames' chroma planes, (2 K, H, W) each, moved in the same launch."""
        frames, height, width = planes(src)
        fn = cuda.function(self.KERNEL, "md_translate_u8", "PPPiiiiiiPP")
        extra, planes_src, planes_dst = (0, 0, 0) if chroma is None else (chroma[0].shape[0], chroma[0].gpudata, chroma[1].gpudata)
        cuda.launch_2d(
            fn,
            (height, width),
            src.gpudata,
            dst.gpudata,
            shifts,
            width,
            height,
            sign,
            int(replicate),
            period or frames,
            frames,
            planes_src,
            planes_dst,
            frames=frames + extra,
        )
