"""Subsense: a SuBSENSE-family sample-consensus background model (grey level and LBSP texture).

St-Charles, Bilodeau and Bergevin, "SuBSENSE: A Universal Change Detection Method With Local
Adaptive Sensitivity", IEEE Transactions on Image Processing 24(1), 2015 (below: the paper), on
the grey image the pipeline has (the decoder's luma, downscaled). Randomness comes from a
counter-based hash (:func:`counter_hash`), and all arithmetic is integer, so the CPU reference
here and the CUDA kernels (``kernels/subsense.cu``) give the same bits.
"""

from __future__ import annotations

import cv2
import numpy as np

from motiondetect.filters.base import Filter, Kind, Param, planes

Q16 = 1 << 16

#: The 16-point LBSP pattern in a 5x5 window (Bilodeau, Jodoin, Saunier, "Change detection in
#: feature space using local binary similarity patterns", CRV 2013): (dy, dx) of each bit, the 8
#: neighbours at distance 1, then the 8 at distance 2. Must match ``md_lbsp`` in the kernel.
LBSP_PATTERN = (
    (-1, -1),
    (-1, 0),
    (-1, 1),
    (0, -1),
    (0, 1),
    (1, -1),
    (1, 0),
    (1, 1),
    (-2, -2),
    (-2, 0),
    (-2, 2),
    (0, -2),
    (0, 2),
    (2, -2),
    (2, 0),
    (2, 2),
)
#: The 8 neighbours a pixel's value can spread to, (dy, dx) of direction 0..7 (kernel: md_subsense_spread_u8).
NEIGHBOURS = ((-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1))

#: Hash purposes: the own-sample update, the spread to a neighbour, then 2 + n for sample n at start.
_OWN, _SPREAD, _INIT = 0, 1, 2
#: Largest normalised distance, in units of 1/8160: 16 * 255 (grey) + 255 * 16 (LBSP bits).
_DIST_MAX = 8160

#: Feedback constants of the paper's authors (their implementation, SuBSENSE 1.0, shipped in
#: bgslibrary as BackgroundSubtractorSuBSENSE), as Q16 integers: v(x) rises by V_INCR = 1 on a
#: blink and falls by the parameter ``blink_decay`` (their v_decr, 0.1) otherwise, never below
#: V_DECR = 0.1, starting at V_INIT = 10; R(x) moves by the parameter ``threshold_step`` (their
#: R_var, 0.01) times (v - V_DECR) up, or by ``threshold_step`` / v down; T(x) rises by
#: T_INCR / (D_min v) = 0.5 / (D_min v) and falls by T_DECR v / D_min = 0.25 v / D_min; a
#: blink counts only where D_min > BLINK_DMIN = 0.1. V_MAX = 256 bounds v so the Q16 state fits
#: 32 bits (the authors' float has no bound).
V_INCR, V_DECR, V_INIT, V_MAX = Q16, 6554, 10 * Q16, 256 * Q16
T_INCR, T_DECR, BLINK_DMIN = Q16 // 2, Q16 // 4, 6554


def to_q16(value: float) -> int:
    """``round(value * 2**16)`` (half up), the Q16 integer the kernels use."""
    return int(np.floor(value * Q16 + 0.5))


def _fmix32(h: np.ndarray) -> np.ndarray:
    """murmur3's 32-bit finaliser (fmix32) on a uint32 array, in place (wrapping arithmetic)."""
    h ^= h >> np.uint32(16)
    h *= np.uint32(0x85EBCA6B)
    h ^= h >> np.uint32(13)
    h *= np.uint32(0xC2B2AE35)
    h ^= h >> np.uint32(16)
    return h


def counter_hash(frame: int, pixels: np.ndarray, purpose: int) -> np.ndarray:
    """The model's random numbers: a counter-based hash of (frame, pixel index, purpose).

    ``fmix32(pixel * 0x9E3779B1 + fmix32(frame * 0x632BE5AB + purpose))`` in unsigned 32-bit
    arithmetic (wrapping), with fmix32 the finaliser of Appleby's MurmurHash3. Stateless, so
    any pixel's number can be drawn in any order on any backend; ``md_hash`` in
    ``kernels/subsense.cu`` is the same function.

    Args:
        frame: the frame pair of the stream (1 for the first; 0 draws the starting samples).
        pixels: pixel indices ``y * width + x`` (any integer array of values < 2**32).
        purpose: which decision the number is for (an integer < 2**32).

    Returns:
        uint32 array shaped like ``pixels``.
    """
    key = np.array([(frame * 0x632BE5AB + purpose) & 0xFFFFFFFF], np.uint32)
    h = np.asarray(pixels).astype(np.uint32)
    h *= np.uint32(0x9E3779B1)
    h += _fmix32(key)[0]
    return _fmix32(h)


def _distance(colour: np.ndarray, hamming: np.ndarray) -> np.ndarray:
    """The normalised distance ``(colour / 255 + hamming / 16) / 2`` in units of 1/8160, as uint16
    (``16 colour + 255 hamming``, at most 8160), from uint8 grey-level and Hamming distances."""
    return colour.astype(np.uint16) * np.uint16(16) + hamming.astype(np.uint16) * np.uint16(255)


def lbsp(image: np.ndarray, tr_q16: int) -> np.ndarray:
    """16-bit LBSP descriptors of a grey image (intra-LBSP: each pixel its own centre).

    Bit k is set where ``|I(p + LBSP_PATTERN[k]) - I(p)| > round(T_r * I(p))`` (neighbours
    outside the image take the nearest edge pixel's value): 1 marks a dissimilar neighbour.

    Args:
        image: ``(H, W)`` uint8 grey levels.
        tr_q16: the relative threshold ``T_r`` in Q16.

    Returns:
        ``(H, W)`` uint16 descriptors.
    """
    height, width = image.shape
    padded = cv2.copyMakeBorder(image, 2, 2, 2, 2, cv2.BORDER_REPLICATE)
    table = ((np.arange(256, dtype=np.int64) * tr_q16 + 32768) >> 16).clip(0, 255).astype(np.uint8)
    threshold = cv2.LUT(image, table)
    desc = np.zeros((height, width), np.uint16)
    for k, (dy, dx) in enumerate(LBSP_PATTERN):
        neighbour = padded[2 + dy : 2 + dy + height, 2 + dx : 2 + dx + width]
        dissimilar = cv2.compare(cv2.absdiff(neighbour, image), threshold, cv2.CMP_GT)  # 255 or 0
        desc |= (dissimilar.astype(np.uint16) & np.uint16(1)) << np.uint16(k)
    return desc


class Subsense(Filter):
    """SuBSENSE-family background subtraction: per-pixel samples with adaptive threshold and rate.

    Each pixel keeps ``samples`` (N) samples of its grey level and 16-bit LBSP texture descriptor
    (:func:`lbsp`). Input ``(H, W)`` uint8 grey (the current frame) with side input
    ``reference`` (the previous grey frame, read only to start the model); output ``(H, W)``
    uint8 mask in {0, 255}. Per frame, following the paper's Section III (its pixel-level model,
    sample-consensus segmentation and feedback loop; the formulas are the ones implemented):

    - Sample consensus: the pixel is background when at least
      ``min_matches`` (#min) samples lie within ``R_color = floor(R(x) * color_threshold)`` in
      grey level **and** within ``R_lbsp = 2**round(R(x)) + lbsp_offset`` in Hamming distance of
      the LBSP descriptors (with the authors' implementation's form of R_lbsp).
    - D_min(x), the dynamic-background measure: a running mean, at rate
      ``1 / min(t, dmin_frames)`` on frame pair t, of d_t(x), the smallest normalised distance
      ``(|I - B_n| / 255 + hamming / 16) / 2`` to any sample.
    - v(x), the blink accumulator: + 1 where the raw decision blinked (changed since the last frame) and
      D_min > 0.1, else - ``blink_decay`` (0.1), at least 0.1 (starts at 10).
    - R(x), the distance threshold factor: while ``R < (1 + 2 D_min)**2`` it grows by
      ``threshold_step (v - 0.1)`` (0.01), else it shrinks by ``threshold_step / v``, never below 1
      (starts at 1).
    - T(x), the update period: ``+ 0.5 / (D_min v)`` where foreground, ``- 0.25 v / D_min``
      where background, within ``[t_lower, t_upper]`` (starts at ``t_lower``).
    - Update (conservative, as ViBe's): a background pixel replaces one of its own
      samples, picked at random, with probability 1 / T(x), by its grey level and descriptor,
      and, with probability 1 / T(x), it puts them into one random sample of a random
      8-neighbour (spatial diffusion). T(x) there is the previous frame's.
    - Ghost absorption (the authors' implementation): a pixel whose short-term share of
      foreground decisions s_avg exceeds ``ghost_share`` while its short-term distance to the
      last frame d_last stays below ``ghost_distance`` (both running means over
      ``dmin_frames / 4`` frames) is foreground yet static, and takes its neighbours' spread
      values at the higher rate 1 / t_lower, so a ghost melts from its edges.

    The feedback constants (v's rise, T's rates) are the authors' (module constants), and so are
    the defaults of ``blink_decay`` and ``threshold_step``; those two, ``t_lower``, ``t_upper`` and
    ``dmin_frames`` follow the source's frame rate (``tuned_fps``,
    :mod:`motiondetect.pipeline.frame_rate`);
    the paper's defaults N = 50, #min = 2, R0_lbsp = 3, T_lower = 2, T_upper = 256 are the
    parameters' defaults. The paper's colour threshold R0_color = 30 is for RGB; its authors'
    grey-image path halves it, hence ``color_threshold`` 15 here, and divides the LBSP
    threshold 0.333 by 3, hence ``lbsp_threshold`` 0.111.

    Simplifications against the authors' implementation, named so they are not mistaken for
    the method: grey only (no colour channels); intra-LBSP only (the current descriptor is
    compared with the stored one; the authors also average in the inter-LBSP distance, taken
    with the sample's grey level as centre); one D_min at one rate (they keep a short- and a
    long-term mean); the decision is the raw consensus (they fill holes, take a 9x9 median and
    feed the post-processed mask back into T and the blinks: here the pipeline's own median
    and morphology follow); no "unstable region" offsets, LBSP threshold adaptation or
    frame-level model reset; all N samples are compared (no early exit), so d_t is the minimum
    over all of them, not only over the matching ones.

    Randomness: :func:`counter_hash` of (frame pair, pixel index, purpose): purpose 0 decides
    the own update (low 16 bits against T, high 16 bits mod N the sample), purpose 1 the
    spread (low 16 bits against T, bits 16..18 the direction in :data:`NEIGHBOURS`, bits 19..31
    mod N the neighbour's sample); at the start, sample n of each pixel is the value of the
    3x3 neighbour ``counter_hash(0, i, 2 + n) % 9`` (row-major, clamped at the borders) of the
    first frame. "With probability 1 / T" is ``(h & 0xFFFF) * T_q16 < 2**32``.

    Fixed point (identical on both backends): R, T, v and D_min in Q16 int32; the normalised
    distance in units of 1/8160 (``16 |I - B| + 255 hamming``) and in Q16 as
    ``(8160ths * 65536 + 4080) // 8160``; ``D += ((d - D) a + 2**15) >> 16`` with
    ``a = round(65536 / min(t, dmin_frames))``; T's steps ``(t_incr << 32) // (max(D, 1) v)`` and
    ``(t_decr v) // max(D, 1)``; R's ``(r_var (v - v_decr) + 2**15) >> 16`` and
    ``(r_var << 16) // v``; the bound ``(65536 + 2 D)**2 >> 16``; the LBSP threshold
    ``(I * tr_q16 + 2**15) >> 16``. Quotients are of non-negative numbers (C's truncation is
    NumPy's floor) and shifts of negative numbers are arithmetic in both.
    """

    NAME = "subsense"
    KERNEL = "subsense"
    SENSITIVITY = ("color_threshold", 1)
    BATCHED = True
    INPUT = Kind.GRAY
    OUTPUT = Kind.MASK
    SIDE_INPUT = "reference"
    # Rescaled to the source's frame rate (motiondetect.pipeline.frame_rate). T(x)'s own steps
    # stay per frame: its bounds shrink with the period, which makes up for them.
    FRAME_COUNTS = ("dmin_frames",)
    FRAME_PERIODS = ("t_lower", "t_upper")
    FRAME_STEPS = ("blink_decay", "threshold_step")
    PARAMS = (
        Param("samples", int, 50, 2, 100, "samples", "background samples per pixel, N; 50 is the paper's default"),
        Param(
            "min_matches",
            int,
            2,
            1,
            100,
            "samples",
            "samples that must match for background, #min; 2 is the paper's default (more than samples: all foreground)",
        ),
        Param(
            "color_threshold",
            int,
            15,
            1,
            255,
            "grey levels",
            "R0_color, the grey-level distance threshold at R(x) = 1; 15 is the paper's 30 halved, as its "
            "authors' implementation does for grey images",
        ),
        Param(
            "lbsp_threshold",
            float,
            0.111,
            0.0,
            1.0,
            "fraction of the centre's grey level",
            "T_r, the LBSP similarity threshold relative to the centre pixel; 0.111 is the authors' 0.333 "
            "divided by 3, as their implementation does for grey images",
        ),
        Param(
            "lbsp_offset",
            int,
            3,
            0,
            16,
            "bits",
            "R0_lbsp, added to 2**round(R(x)) for the LBSP Hamming threshold; 3 is the paper's default",
        ),
        Param("t_lower", float, 2.0, 1.0, 4096.0, "frames", "lower bound of the update period T(x); 2 is the paper's T_lower"),
        Param("t_upper", float, 256.0, 1.0, 4096.0, "frames", "upper bound of the update period T(x); 256 is the paper's T_upper"),
        Param(
            "ghost_share",
            float,
            0.995,
            0.0,
            1.0,
            "fraction of frames",
            "a pixel whose short-term share of foreground decisions s_avg exceeds this while d_last stays "
            "below ghost_distance is a ghost (foreground yet static: an object in the first frame, or one "
            "that left) and takes its background neighbours' spread values at rate 1/t_lower; 0.995 is the "
            "authors' GHOSTDET_S_MIN",
        ),
        Param(
            "ghost_distance",
            float,
            0.01,
            0.0,
            1.0,
            "normalised distance",
            "d_last, the short-term mean normalised distance to the last frame, below which a foreground "
            "pixel counts as static; 0.01 is the authors' GHOSTDET_D_MAX",
        ),
        Param(
            "dmin_frames",
            int,
            100,
            1,
            100000,
            "frames",
            "window of the running mean D_min(x): rate 1/min(t, dmin_frames); 100 is the authors' long-term window",
        ),
        Param(
            "blink_decay",
            float,
            0.1,
            0.0,
            16.0,
            "per frame",
            "how much the blink count v(x) falls on a frame without a blink (it rises by 1 on one); 0.1 is the paper's v_decr",
        ),
        Param(
            "threshold_step",
            float,
            0.01,
            0.0,
            1.0,
            "per frame",
            "R_var, the step of the distance threshold factor R(x) each frame: up by threshold_step (v - 0.1), "
            "or down by threshold_step / v; 0.01 is the paper's",
        ),
    )

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self.reset()

    def chunk_warmup(self) -> int | None:
        """``None``: a chunk cannot start this model in a sequential run's state (its samples
        are replaced at random, one in T(x) frames, so they never forget the stream's start
        exactly; :mod:`motiondetect.scaleout.chunks` has the measurement), so a file is scanned
        as one chunk."""
        return None

    def reset(self) -> None:
        self._model: dict[str, np.ndarray] | None = None
        self._pairs = 0
        self._device_shape: tuple[int, int] | None = None
        self._device_pairs = 0
        self._device_samples: int | None = None

    def constants(self) -> dict[str, int]:
        """The integer constants of the current parameters, as both backends use them."""
        p = self.params
        t_lower = to_q16(p["t_lower"])
        return {
            "samples": p["samples"],
            "min_matches": p["min_matches"],
            "tr_q16": to_q16(p["lbsp_threshold"]),
            "color_r0": p["color_threshold"],
            "lbsp_r0": p["lbsp_offset"],
            "t_lower_q16": t_lower,
            "t_upper_q16": max(t_lower, to_q16(p["t_upper"])),
            "ghost_s_q16": to_q16(p["ghost_share"]),
            "ghost_d_q16": to_q16(p["ghost_distance"]),
            "v_decay_q16": to_q16(p["blink_decay"]),
            "r_var_q16": to_q16(p["threshold_step"]),
        }

    def rate(self, pair: int, window: int | None = None) -> int:
        """The Q16 rate of a running mean over ``window`` frames (default ``dmin_frames``) on frame
        pair ``pair`` (1 for the first): round(65536 / min(pair, window)), half up."""
        m = min(pair, self.params["dmin_frames"] if window is None else window)
        return (2 * Q16 + m) // (2 * m)

    @property
    def short_window(self) -> int:
        """Frames of the short-term running means s_avg and d_last: dmin_frames / 4 (the authors'
        25 for their 100), at least 1."""
        return max(1, self.params["dmin_frames"] // 4)

    def frame_arguments(self, pair: int) -> tuple[int, ...]:
        """The integer arguments of ``md_subsense_classify_u8`` after the width and height, for
        frame pair ``pair`` of the stream, in the kernel's order."""
        c = self.constants()
        return (
            c["samples"],
            c["min_matches"],
            pair,
            c["tr_q16"],
            c["color_r0"],
            c["lbsp_r0"],
            self.rate(pair),
            self.rate(pair, self.short_window),
            c["t_lower_q16"],
            c["t_upper_q16"],
            T_INCR,
            T_DECR,
            V_INCR,
            V_DECR,
            c["v_decay_q16"],
            V_MAX,
            c["r_var_q16"],
            BLINK_DMIN,
        )

    @property
    def model(self) -> dict[str, np.ndarray] | None:
        """Copies of the CPU model, or ``None`` before the first frame pair: ``colours`` (N, H, W)
        uint8, ``descs`` (N, H, W) uint16, ``r``, ``t``, ``v``, ``dmin``, ``savg``, ``dlast`` (H, W)
        int64 in Q16, ``last`` (H, W) uint8 (1 where the last raw decision was foreground),
        ``last_colour`` (H, W) uint8 and ``desc`` (H, W) uint16 (the last frame's grey levels
        and LBSP descriptors)."""
        if self._model is None:
            return None
        shape = self._model["last"].shape
        out = {name: value.copy() for name, value in self._model.items()}
        n = self.params["samples"]
        out["colours"] = out["colours"].reshape(n, *shape)
        out["descs"] = out["descs"].reshape(n, *shape)
        for name in ("r", "t", "v", "dmin", "savg", "dlast"):
            out[name] = out[name].astype(np.int64)
        return out

    # -- CPU reference -----------------------------------------------------------------------------
    def _start(self, first: np.ndarray) -> None:
        """The model of a new stream from its first grey frame (see the class docstring)."""
        c = self.constants()
        height, width = first.shape
        count, n = height * width, c["samples"]
        desc = lbsp(first, c["tr_q16"]).reshape(-1)
        ys, xs = np.divmod(np.arange(count, dtype=np.int64), width)
        colours = np.empty((n, count), np.uint8)
        descs = np.empty((n, count), np.uint16)
        flat = first.reshape(-1)
        for s in range(n):
            k = counter_hash(0, np.arange(count), _INIT + s) % np.uint32(9)
            yy = np.clip(ys + k // 3 - 1, 0, height - 1)
            xx = np.clip(xs + k % 3 - 1, 0, width - 1)
            source = yy * width + xx
            colours[s] = flat[source]
            descs[s] = desc[source]
        self._model = {
            "colours": colours,
            "descs": descs,
            "r": np.full(first.shape, Q16, np.int32),
            "t": np.full(first.shape, c["t_lower_q16"], np.int32),
            "v": np.full(first.shape, V_INIT, np.int32),
            "dmin": np.zeros(first.shape, np.int32),
            "savg": np.zeros(first.shape, np.int32),
            "dlast": np.zeros(first.shape, np.int32),
            "last": np.zeros(first.shape, np.uint8),
            "last_colour": first.copy(),
            "desc": desc.reshape(height, width),
        }
        self._pairs = 0

    def reference(self, src, side=None):
        n = self.params["samples"]
        if self._model is None or self._model["last"].shape != src.shape or self._model["colours"].shape[0] != n:
            if side is None:
                raise ValueError("subsense: the first frame of a stream needs the reference frame")
            self._start(side)
        self._pairs += 1
        c = self.constants()
        m = self._model
        height, width = src.shape
        count = height * width
        pixel = src.reshape(-1)
        desc = lbsp(src, c["tr_q16"]).reshape(-1)
        r, t, v, d = (m[k].reshape(-1).astype(np.int64) for k in ("r", "t", "v", "dmin"))

        # Sample consensus.
        r_color = (r * c["color_r0"]) >> 16
        r_lbsp = (np.int64(1) << np.minimum((r + 32768) >> 16, 16)) + c["lbsp_r0"]
        r_color8 = np.minimum(r_color, 255).astype(np.uint8)  # a distance is at most 255
        r_lbsp8 = np.minimum(r_lbsp, 16).astype(np.uint8)  # and a Hamming distance at most 16
        matches = np.zeros(count, np.uint8)
        best = np.full(count, _DIST_MAX, np.uint16)
        for s in range(n):
            colour = cv2.absdiff(m["colours"][s].reshape(height, width), src).reshape(-1)
            hamming = np.bitwise_count(np.bitwise_xor(m["descs"][s], desc))
            matches += (colour <= r_color8) & (hamming <= r_lbsp8)
            np.minimum(best, _distance(colour, hamming), out=best)
        foreground = matches < c["min_matches"]

        # Updates of the background pixels, with the previous frame's T.
        index = np.arange(count, dtype=np.uint32)
        own = counter_hash(self._pairs, index, _OWN)
        chance = np.uint64(1) << np.uint64(32)
        t_u64 = t.astype(np.uint64)
        lucky = ~foreground & ((own & np.uint32(0xFFFF)).astype(np.uint64) * t_u64 < chance)
        at = np.flatnonzero(lucky)
        slot = ((own[at] >> np.uint32(16)) % np.uint32(n)).astype(np.int64)
        m["colours"][slot, at] = pixel[at]
        m["descs"][slot, at] = desc[at]
        spread_hash = counter_hash(self._pairs, index, _SPREAD)
        u = (spread_hash & np.uint32(0xFFFF)).astype(np.uint64)
        spreads = ~foreground & (u * np.uint64(c["t_lower_q16"]) < chance)  # drawn at 1 / t_lower
        usual = u * t_u64 < chance  # and at 1 / T: every neighbour takes it, not only ghosts
        direction = ((spread_hash >> np.uint32(16)) & np.uint32(7)) | np.where(usual, np.uint32(8), np.uint32(0))
        push = np.where(spreads, direction, np.uint32(255)).reshape(height, width)

        # Ghost statistics at the short-term rate: s_avg (share of foreground decisions) and
        # d_last (normalised distance to the last frame).
        short = self.rate(self._pairs, self.short_window)
        c_last = cv2.absdiff(src, m["last_colour"]).reshape(-1)
        h_last = np.bitwise_count(np.bitwise_xor(desc, m["desc"].reshape(-1)))
        d_last = (_distance(c_last, h_last).astype(np.int64) * Q16 + _DIST_MAX // 2) // _DIST_MAX
        savg, dlast = (m[k].reshape(-1).astype(np.int64) for k in ("savg", "dlast"))
        savg += ((np.where(foreground, Q16, 0) - savg) * short + 32768) >> 16
        dlast += ((d_last - dlast) * short + 32768) >> 16
        ghost = (savg > c["ghost_s_q16"]) & (dlast < c["ghost_d_q16"])
        self._spread(push, ghost.reshape(height, width), pixel, desc, spread_hash, height, width, n)

        # Feedback: D_min, then T (with the old v), v and R.
        d_now = (best.astype(np.int64) * Q16 + _DIST_MAX // 2) // _DIST_MAX
        d += ((d_now - d) * self.rate(self._pairs) + 32768) >> 16
        dsafe = np.maximum(d, 1)
        up = t + (np.int64(T_INCR) << 32) // (dsafe * v)
        down = t - (np.int64(T_DECR) * v) // dsafe
        t = np.clip(np.where(foreground, up, down), c["t_lower_q16"], c["t_upper_q16"])
        blink = (foreground != (m["last"].reshape(-1) != 0)) & (d > BLINK_DMIN)
        v = np.where(blink, np.minimum(v + V_INCR, V_MAX), np.maximum(v - c["v_decay_q16"], V_DECR))
        bound = ((Q16 + 2 * d) * (Q16 + 2 * d)) >> 16
        grow = r + ((c["r_var_q16"] * (v - V_DECR) + 32768) >> 16)
        shrink = np.maximum(r - (np.int64(c["r_var_q16"]) << 16) // v, Q16)
        r = np.where(r < bound, grow, shrink)
        for name, value in (("r", r), ("t", t), ("v", v), ("dmin", d), ("savg", savg), ("dlast", dlast)):
            m[name] = value.astype(np.int32).reshape(height, width)
        m["last"] = foreground.astype(np.uint8).reshape(height, width)
        m["last_colour"] = src.copy()
        m["desc"] = desc.reshape(height, width)
        return (foreground.astype(np.uint8) * np.uint8(255)).reshape(height, width)

    def _spread(self, push, ghost, pixel, desc, spread_hash, height, width, n) -> None:
        """Write each spread value into its neighbour's sample, direction 0..7 in order (a later
        direction overwrites an earlier one where two land on the same sample), as the kernel's
        gather does: ``push`` (H, W) holds each pixel's direction with bit 3 set when every
        neighbour takes it, else only a ``ghost`` (H, W bool) one does; 255 for none."""
        m = self._model
        for k, (dy, dx) in enumerate(NEIGHBOURS):
            # Sources (sy, sx) whose target (sy + dy, sx + dx) is inside the image.
            sy0, sy1 = max(0, -dy), min(height, height - dy)
            sx0, sx1 = max(0, -dx), min(width, width - dx)
            if sy0 >= sy1 or sx0 >= sx1:
                continue
            sources_push = push[sy0:sy1, sx0:sx1]
            taken = (sources_push == k + 8) | ((sources_push == k) & ghost[sy0 + dy : sy1 + dy, sx0 + dx : sx1 + dx])
            hits = np.argwhere(taken)
            if hits.size == 0:
                continue
            sources = (hits[:, 0] + sy0) * width + hits[:, 1] + sx0
            targets = sources + dy * width + dx
            slot = ((spread_hash[sources] >> np.uint32(19)) % np.uint32(n)).astype(np.int64)
            m["colours"][slot, targets] = pixel[sources]
            m["descs"][slot, targets] = desc[sources]

    # -- GPU ---------------------------------------------------------------------------------------
    def apply_kernel(self, cuda, src, dst, side=None):
        """Enqueue the model on a frame (H, W) or a batch (K, H, W) of consecutive frames.

        Each frame takes two launches, the comparison with its updates of each pixel's own model
        (``md_subsense_classify_u8``) and then the spread into the neighbours' samples
        (``md_subsense_spread_u8``), since the next frame's comparison must see the whole
        spread; a batch runs them frame after frame, so K frames equal K calls of one frame.
        ``side`` (the previous grey frame; a batch: each frame's predecessor) is read only when
        the model starts.
        """
        frames, height, width = planes(src)
        c = self.constants()
        n, count = c["samples"], height * width
        init = self._device_shape != (height, width) or self._device_samples != n
        if init and side is None:
            raise ValueError("subsense: the first frame of a stream needs the reference frame")
        buffer = lambda name, shape, dtype: cuda.buffer(self.state_key(name), shape, dtype)
        colours = buffer("colours", (n, count), np.uint8)
        descs = buffer("descs", (n, count), np.uint16)
        r, t, v, d, savg, dlast = (buffer(name, (count,), np.int32) for name in ("r", "t", "v", "dmin", "savg", "dlast"))
        last, last_colour, push = (buffer(name, (count,), np.uint8) for name in ("last", "last_colour", "push"))
        desc = buffer("desc", (count,), np.uint16)
        shape = (height, width)
        state = (
            colours.gpudata,
            descs.gpudata,
            r.gpudata,
            t.gpudata,
            v.gpudata,
            d.gpudata,
            savg.gpudata,
            dlast.gpudata,
            last.gpudata,
            last_colour.gpudata,
            desc.gpudata,
        )
        if init:
            fn = cuda.function(self.KERNEL, "md_subsense_init_u8", "P" * 12 + "i" * 6)
            cuda.launch_2d(
                fn,
                shape,
                side.gpudata,
                *state,
                np.int32(width),
                np.int32(height),
                np.int32(n),
                np.int32(c["tr_q16"]),
                np.int32(c["t_lower_q16"]),
                np.int32(V_INIT),
            )
            self._device_pairs = 0
        classify = cuda.function(self.KERNEL, "md_subsense_classify_u8", "P" * 14 + "i" * 20)
        spread = cuda.function(self.KERNEL, "md_subsense_spread_u8", "P" * 7 + "i" * 6)
        arguments = [np.int32(x) for x in self.frame_arguments(1)]  # per frame only the pair (2) and the rates (6, 7) change
        size = (np.int32(width), np.int32(height))
        ghost = (np.int32(c["ghost_s_q16"]), np.int32(c["ghost_d_q16"]))
        for k in range(frames):
            pair = self._device_pairs + 1
            frame = np.uintp(int(src.gpudata) + k * count)
            mask = np.uintp(int(dst.gpudata) + k * count)
            arguments[2], arguments[6], arguments[7] = (
                np.int32(pair),
                np.int32(self.rate(pair)),
                np.int32(self.rate(pair, self.short_window)),
            )
            cuda.launch_2d(classify, shape, frame, *state, push.gpudata, mask, *size, *arguments)
            cuda.launch_2d(
                spread,
                shape,
                frame,
                desc.gpudata,
                push.gpudata,
                savg.gpudata,
                dlast.gpudata,
                colours.gpudata,
                descs.gpudata,
                *size,
                np.int32(n),
                np.int32(pair),
                *ghost,
            )
            self._device_pairs = pair
        self._device_shape = (height, width)
        self._device_samples = n
