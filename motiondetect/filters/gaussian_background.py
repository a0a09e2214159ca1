"""GaussianBackground: a per-pixel Gaussian background model that gives the motion mask directly."""

from __future__ import annotations

import cv2
import numpy as np

from motiondetect.filters import recent_gate
from motiondetect.filters.bands import Scratch, chunk_rows, run_bands
from motiondetect.filters.base import WEAK, Filter, Kind, Param, frames_view, planes
from motiondetect.filters.ghosts import GhostWindow
from motiondetect.filters.light_field import explained, queue_light_field
from motiondetect.filters.running_average import to_q16


def to_q8(value: float) -> int:
    """A non-negative number as the integer ``round(value * 2**8)`` (Q8) the kernel uses."""
    return int(np.floor(value * 256 + 0.5))


#: Blocks of 256 threads per frame for the light switch's counts, a grid-stride loop beyond: one
#: pixel a thread at the default working size (480x270: 507 blocks), and K frames fill the GPU.
LIGHT_COUNT_BLOCKS = 512

#: The exposure's ratios of a pixel's grey level to the previous frame's, in Q8 (256 is 1.0), are
#: binned up to 4x (larger ones fall in the last bin); pixels darker than EXPOSURE_DARK grey levels
#: in the previous frame (too few levels for a ratio) and saturated ones (255 in either frame) are
#: not measured. A pixel is explained by a gain when the previous frame's grey level times the
#: gain lies within EXPOSURE_TOLERANCE grey levels of its own (compression noise is 1-3 levels).
EXPOSURE_BINS, EXPOSURE_ONE, EXPOSURE_DARK, EXPOSURE_TOLERANCE = 1024, 256, 16, 3
#: The exposure's drift (:meth:`GaussianBackground.exposure_gain`) in Q16: 1.0, and its bounds
#: (the gains a bin can hold, 1/256 to 1023/256).
DRIFT_ONE, DRIFT_MIN, DRIFT_MAX = 1 << 16, 1 << 8, (EXPOSURE_BINS - 1) << 8


def grey_chroma(chroma: np.ndarray) -> np.ndarray:
    """Where ``chroma`` ``(2, ...)`` uint8 (Cb, Cr) is no colour: both within
    :data:`GREY_CHROMA` of 128. Returns a bool array of the shape after the first axis."""
    return np.logical_and(_GREY_LEVELS[chroma[0]], _GREY_LEVELS[chroma[1]])


def clipped(grey: np.ndarray, chroma: np.ndarray, out: np.ndarray | None = None, scratch: tuple | None = None) -> np.ndarray:
    """Where a frame's colour is clipped: one of R, G, B, made back from the grey level ``grey``
    ``(...)`` uint8 and ``chroma`` ``(2, ...)`` uint8 (full-range BT.601 Cb, Cr; the JFIF
    inverse in Q16, ``R = Y + 1.402 (Cr - 128)``, ``G = Y - 0.344136 (Cb - 128) - 0.714136 (Cr -
    128)``, ``B = Y + 1.772 (Cb - 128)``, each product floored), reaches :data:`CLIPPED`. A
    clipped channel no longer follows the light, so its chroma says little about the colour
    (the kernel's ``md_no_colour`` computes the same). Returns a bool array of ``grey``'s shape,
    into ``out`` when given; ``scratch``: a uint16 and an int16 array of that shape to work in
    (the model's every frame allocates nothing)."""
    pairs, limits = scratch or (None, None)
    pairs = np.left_shift(chroma[0], 8, out=pairs, dtype=np.uint16)
    pairs |= chroma[1]
    return np.greater_equal(grey, np.take(_CLIPPED_FROM, pairs, out=limits), out=out)


def _clipped_from() -> np.ndarray:
    """The grey level from which a pixel of each (Cb, Cr), indexed ``Cb * 256 + Cr``, is
    :func:`clipped`: each channel is the grey level plus an offset of the chroma alone, so the
    channel that clips first has the largest offset. int16."""
    cb, cr = np.meshgrid(np.arange(256) - 128, np.arange(256) - 128, indexing="ij")
    offsets = np.stack([(91881 * cr) >> 16, -((22554 * cb + 46802 * cr) >> 16), (116130 * cb) >> 16])  # R, G, B
    return (CLIPPED - offsets.max(axis=0)).astype(np.int16).ravel()


def no_colour(grey: np.ndarray, chroma: np.ndarray) -> np.ndarray:
    """Where a frame has no colour to compare or learn: its chroma is grey (:func:`grey_chroma`,
    a camera's night mode) or clipped (:func:`clipped`, a highlight). Bool, ``grey``'s shape."""
    return grey_chroma(chroma) | clipped(grey, chroma)


def take_ghosts(take, src, chroma, mean, chroma_mean, still, mask) -> None:
    """Take the ghost pixels ``take`` ((H, W) bool) into the background, in place: the mean
    becomes the frame ``src`` (grey levels * 2**16), the chroma means the frame's ``chroma``
    ((2, H, W) Cb, Cr) where it has colour (:func:`no_colour`: a grey or clipped frame keeps the
    colours known), the still count (``still``, or ``None``) restarts and ``mask`` is cleared there. The
    arrays are the CPU model's, or host copies of the device model's (both backends run this)."""
    mean[take] = src[take].astype(np.int32) << 16
    if chroma is not None and chroma_mean is not None:
        coloured = take & ~no_colour(src, chroma)
        for p in range(2):
            chroma_mean[p][coloured] = chroma[p][coloured].astype(np.int32) << 16
    if still is not None:
        still[take] = 0
    mask[take] = 0


def chroma_shadow(
    x: np.ndarray, mean: np.ndarray, chroma: np.ndarray, chroma_mean: np.ndarray, tolerance_q8: int, ratio_q16: int
) -> np.ndarray:
    """Which darker pixels are shadows by their colour: where the light dims by ``r = x / m``,
    every R, G and B falls by ``r`` and so do Cb - 128 and Cr - 128 (linear in them, BT.601), so a
    shadow's chroma is ``128 + r (mean - 128)``. That is the colour half of the shadow tests of
    Horprasert, Harwood and Davis (1999: brightness and chromaticity distortion) and Cucchiara et
    al. (2003), with a lowest ratio as OpenCV MOG2's ``fTau`` (0.5 there). A pixel is a shadow when

    - ``x >= ratio * m`` (``x << 32 >= ratio_q16 * m``),
    - the chroma means lie at least 4 tolerances from grey, ``|Cb_m - 128| + |Cr_m - 128| >= 4 t``
      (near grey, a grey object's chroma fits any ratio), and
    - Cb and Cr each lie within the tolerance ``t`` of the prediction, tested without a division:
      ``|((c - 128) m - x (c_m - 128 * 2**16)) * 256| <= tolerance_q8 * m``.

    Args:
        x: (N,) grey levels of the frame (any integer dtype), darker than their means.
        mean: (N,) the grey level's means, Q16 (grey level * 2**16), positive.
        chroma: (2, N) Cb and Cr of the frame, levels.
        chroma_mean: (2, N) their means, Q16.
        tolerance_q8: the tolerance ``t`` in Q8 (``shadow_chroma``); ratio_q16: ``shadow_ratio`` in Q16.

    Returns:
        (N,) bool. int64 throughout (every product below 2**41); the kernel's
        ``md_chroma_shadow`` computes the same bits.
    """
    x, m = x.astype(np.int64), mean.astype(np.int64)
    shadow = (x << 32) >= ratio_q16 * m
    centre = np.int64(128 << 16)
    offsets = chroma_mean.astype(np.int64) - centre
    shadow &= np.abs(offsets[0]) + np.abs(offsets[1]) >= tolerance_q8 << 10
    within = tolerance_q8 * m
    for p in range(2):
        error = (chroma[p].astype(np.int64) - 128) * m - x * offsets[p]
        shadow &= np.abs(error) * 256 <= within
    return shadow


def _relative_var(mean: np.ndarray, fraction_q16: int, out: np.ndarray) -> np.ndarray:
    """The variance floor (Q8) of a standard deviation ``fraction_q16 / 2**16`` of each mean
    (int32 Q16), into ``out`` (float64, the shape of ``mean``), as the kernel's
    ``md_relative_var`` computes it: ``s = (m * f + 2**15) >> 16`` (< 2**24), then
    ``(s**2 + 2**23) >> 24``, each the floor of a float64 product with at most 48 significant
    bits, so exact."""
    np.multiply(mean, fraction_q16 * 2.0**-16, out=out)
    out += 0.5
    np.floor(out, out=out)
    out *= out
    out *= 2.0**-24
    out += 0.5
    np.floor(out, out=out)
    return out


def lower_median(values: np.ndarray) -> np.ndarray:
    """The lower median along axis 0 of ``values`` ``(n, ...)`` uint8: the element of rank
    ``(n - 1) // 2`` in ascending order, which for an odd n is the median (the bootstrap's)."""
    kth = (len(values) - 1) // 2
    return np.partition(values, kth, axis=0)[kth]


def _ratio_bins() -> np.ndarray:
    """The exposure's bin of every (previous, current) grey level pair, indexed ``previous * 256
    + current``: ``min((current * 256 + previous // 2) // previous, EXPOSURE_BINS - 1)``, or
    ``EXPOSURE_BINS`` for a pair that is not measured (see EXPOSURE_DARK)."""
    previous, current = np.meshgrid(np.arange(256), np.arange(256), indexing="ij")
    bins = np.minimum((current * EXPOSURE_ONE + previous // 2) // np.maximum(previous, 1), EXPOSURE_BINS - 1)
    measured = (previous >= EXPOSURE_DARK) & (previous <= 254) & (current <= 254)
    return np.where(measured, bins, EXPOSURE_BINS).astype(np.int16).ravel()


_RATIO_BINS = _ratio_bins()

#: Blocks per frame of the exposure's histogram kernel (grid-stride beyond): each block merges a
#: shared-memory histogram into the frame's, so fewer blocks mean fewer global atomics. The last
#: of them takes the frame's median ratio, 4 bins a thread.
EXPOSURE_BLOCKS = 64

#: A Cb or Cr value within this many levels of 128 is no colour: a pixel of the frame (or a model's
#: chroma mean) whose Cb and Cr both are is grey. A camera in night (infrared) mode sends grey
#: frames; through an encoder they come back within a few levels of 128 (an H.264 file of grey
#: frames, at the working size: 81-90 % of the pixels within 1, 96-98 % within 3), so 1 left a
#: flood of 21 % of the frame there, 3 none. The dev clips' scores did not fall (docs/evaluation-log.md,
#: "Night mode").
GREY_CHROMA = 3
#: A frame's R, G or B at or above this (grey levels, made back from Y, Cb and Cr) is clipped, and
#: the pixel's chroma is not compared (:func:`clipped`): a camera saturates highlights, and a
#: brightening that clips a channel moves the chroma, not the colour. 250: within the rounding
#: of the conversion and of 4:2:0 chroma (one sample per 2 x 2 pixels) of 255.
CLIPPED = 250
_CLIPPED_FROM = _clipped_from()
#: 255 for the Cb or Cr levels within GREY_CHROMA of 128, else 0 (a cv2.LUT table).
_GREY_LEVELS = np.where(np.abs(np.arange(256) - 128) <= GREY_CHROMA, 255, 0).astype(np.uint8)
#: The Q16 chroma means that round ((m + 2**15) >> 16) to a level within GREY_CHROMA of 128.
_GREY_MEANS = (((128 - GREY_CHROMA) << 16) - (1 << 15), ((129 + GREY_CHROMA) << 16) - (1 << 15) - 1)

#: Per-pixel scratch buffers of the CPU comparison and update of one plane (see
#: GaussianBackground._update); the luma's are suffixed 0, the chroma planes' 1 and 2.
_PLANE_SCRATCH = {"d": np.int32, "vmax": np.int32, "df": np.float64, "e": np.float64, "limit": np.float64}
#: Scratch buffers shared by the planes: the mask's learning rates, the shadow floor (and then the
#: weak limit), one plane's flags, the weak pixels (grow_sigmas).
_SHARED_SCRATCH = {"rate": np.float64, "vrate": np.float64, "shade": np.float64, "flag": np.uint8, "darker": np.bool_, "weak": np.bool_}
#: With chroma: the grey pixels of the frame and of the means (255 where grey), the pixels with
#: colour to compare (255, and as bool), the grey level's own foreground, and the chroma's
#: learning rates (0 where grey).
_CHROMA_SCRATCH = {
    "frame_grey": np.uint8,
    "mean_grey": np.uint8,
    "colour": np.uint8,
    "coloured": np.bool_,
    "grey_foreground": np.bool_,
    "weak_chroma": np.bool_,
    "chroma_rate": np.float64,
    "chroma_vrate": np.float64,
    "chroma_pairs": np.uint16,  # clipped()'s (Cb, Cr) index and grey level it clips from
    "clips_from": np.int16,
}


class GaussianBackground(Filter):
    """Per-pixel Gaussian background (mean and variance) with selective update; outputs the mask.

    The frame-pair step with a statistical reference: each pixel keeps a running mean ``m`` and
    variance ``v`` of its grey level (the running Gaussian average of Wren et al., 1997, the
    one-component case of the mixture models behind OpenCV's MOG2). A pixel is foreground (255)
    where ``(x - m)**2 > sigmas**2 * max(v, min_sigma**2)``, i.e. more than ``sigmas`` standard
    deviations from its background. The floor is also ``relative_floor * m`` on every pixel: a
    camera's slow exposure or white-balance drift moves each grey level in proportion to it
    (Weber's law), so a bright pixel needs a wider floor than a dark one, and ``min_sigma`` can
    stay low enough for faint objects on dark backgrounds. Where the pixel is darker than its mean
    (``x < m``), the floor is also ``shadow_floor * m``: a cast shadow or a dimmed reflection darkens the background in
    proportion to its brightness, so with ``sigmas`` 2 and ``shadow_floor`` 0.08 a pixel must
    darken by more than 16 % of its background grey level to move. This is the brightness half of the shadow tests of Cucchiara et
    al. (2003) and OpenCV MOG2 (a darkening by a ratio near 1 is shadow). Their colour half is
    ``shadow_chroma``: a darker pixel, down to ``shadow_ratio`` of its mean, whose Cb and Cr are the
    background's dimmed by the same ratio is a shadow and not foreground by its grey level
    (:func:`chroma_shadow`; the chroma's own comparison, below, still applies). Then the model learns (selective update, Koller et al.,
    1994): background pixels at rates ``alpha`` (mean) and ``variance_alpha`` (variance),
    foreground pixels at the slower ``alpha_foreground`` and ``variance_alpha_foreground``, so
    passing objects barely enter the background while a parked car or a moved chair is absorbed
    in time. The means learn from a foreground pixel only on the frames on which it is quiet, its
    grey level within ``quiet_tolerance`` of the previous frame's (0 by default: unchanged, the
    still count's test; 255: on every foreground frame): what stays in view and moves (a person at a desk, the cars of a busy lane)
    would otherwise draw the background towards itself over minutes and then be missed, while a
    parked car, a moved chair or a ghost is quiet and is absorbed as before (docs/evaluation-log.md,
    "Long runs"). The variance learns from ``min((x - m)**2, threshold)``, so a single outlier cannot
    raise it above the current threshold; past the warm-up, a foreground pixel's variances learn
    only on frames on which its grey level changed by at least ``variance_min_change`` (9) from the
    previous frame's: leaves or water that start moving change that much and are learnt, while a
    person who stops in view, never still for the still count on a real camera's noise, no longer
    widens his own threshold until he is missed (docs/evaluation-log.md, "People who stop"). During
    the first ``warmup`` frame pairs of a stream the variance learns at least at rate
    ``1 / (t + 1)`` on frame pair ``t`` (a plain average of the first frames), on foreground pixels too, the way OpenCV's MOG2 starts with the rate
    ``1 / min(2 t, history)``: the model knows the scene's noise and its waving trees after a few
    seconds, and later passing objects barely widen the threshold.

    Still foreground (``still_frames`` > 0; 7 by default): a foreground pixel whose grey level
    has stayed within ``still_tolerance`` of the previous frame's on ``still_frames`` frame pairs
    in a row is taken into the background at once: its mean (and its chroma means) become the
    frame's values, its variance stays. Background uncovered where something stood when the
    stream began (a ghost) is perfectly still, and is then gone within a fraction of a second
    instead of the ``1 / alpha_foreground`` frames of the selective update; an object that stops
    goes the same way, as a motion detector wants, and is found again when it moves. This is the
    time-out map of SACON (Wang and Suter, Pattern Recognition 2007: a pixel foreground for long
    enough becomes background), counted only over frames on which the pixel is still, so waving
    leaves or a person shifting their weight do not qualify. An inter-coded video (H.264...)
    repeats the pixels of a block its encoder skipped exactly, so there a person at rest qualifies
    too, and the count is ``still_frames_inter`` (17) instead, chosen on H.264 copies of the dev
    clips; the pipeline swaps it in for such a source (:mod:`motiondetect.pipeline.coding`) and the
    model itself never reads it.

    Bootstrap (``bootstrap`` > 0; 24 by default): the model keeps the grey levels of the stream's
    first ``bootstrap + 1`` frames (the reference and pairs 1..N) and the chroma of pairs 1..N,
    and after the update of pair N takes each pixel's lower median over them (rank
    ``(n - 1) // 2`` of n values). Where the grey level's median lies beyond the model's smallest
    threshold from its mean (``d**2 > k2 * min_var``, ``d`` in Q16, as the comparison's limit),
    or a chroma median beyond ``k2 * chroma_min_var`` from its mean, the start was wrong there:
    all the pixel's means become its medians and its still count restarts. What moved through the
    first frames then leaves no ghost, also on noisy footage where a pixel is never still for
    ``still_frames`` and the warm-up would widen the ghost's variance until it hides in it. W4
    (Haritaoglu, Harwood and Davis, IEEE PAMI 2000) starts its background from a median over its
    first frames in the same way. A light switch or an exposure gain taken on pairs 1..N cancels
    the restart (the earlier frames no longer describe the background).

    Ghosts of the start (``ghost_frames`` > 0; 100 by default): someone who stood in view through
    most of the bootstrap's frames stays in its median, and when they leave, their ghost stays
    too on footage too noisy for the still count. On pairs N + 1 .. N + ``ghost_frames`` (pair N,
    or pair 1 without a bootstrap, starts the test) each blob of the frame's mask is tested as a
    whole (:mod:`motiondetect.filters.ghosts`): its outline in the model's mean and not in the
    frame, where the frame is still, makes it a ghost, and a pixel in a ghost blob on 3 such
    pairs in a row is taken into the background as the still count takes one (:func:`take_ghosts`),
    its mask cleared. A blob is a whole-frame question, which the kernel, one pixel a thread
    through a batch, cannot ask between frames: the CUDA backend runs those pairs one frame a
    launch and tests on the host with the same code (:meth:`apply_kernel`).

    Light switch (``lightswitch`` > 0): before a frame is compared, the pixels that turned brighter
    than the previous frame by more than the model's smallest threshold at their previous grey
    level ``p`` (``sigmas * min_sigma`` grey levels, rounded down, or ``sigmas * relative_floor * p``
    where larger: :attr:`light_changes`) are counted, and those that turned darker by as much; when either
    count reaches ``lightswitch`` of the frame, the model restarts from the frame: its mean (and
    chroma means) become the frame's values, its variance stays, the still counts restart. Unless
    the exposure (below) follows a gain that explains at least half as many pixels as the larger
    count: a dimmer, an iris or one lamp of two going off scales the whole picture, and the
    means scaled by the gain keep what is in view foreground, where a restart takes it into the
    background (a light switched to 0.6 halfway through each of the 20 dev clips: 0.668 -> 0.768
    mean pixel F; docs/evaluation-log.md, "Light switches a gain explains"). A light
    switched on or off, or a camera's day/night switch, changes most of the picture the same way
    between two frames, and would otherwise flag the whole frame until the model has learnt it
    (hundreds of frames at ``alpha_foreground``); the frame of the switch compares equal to the
    restarted model and reports nothing. A person or a car, even close to the lens, brightens
    some pixels and darkens others: on the 20 dev clips neither count passed 0.58 of the frame.
    This is the guard of Motion's ``lightswitch_percent`` and Frigate's ``lightning_threshold``
    (0.8: more motion than that and Frigate recalibrates its background), decided on the frame
    difference, which both backends count over a whole batch before the model runs.

    Exposure (``exposure`` > 0; 1.25 by default): a camera that changes its exposure, gain or iris,
    or a cloud over the sun, multiplies the whole picture's brightness by one gain, and the
    gamma-encoded grey level by a gain too (a power of a product is the product of the powers), so
    a frame that is no light switch is checked for one: the gain is the median ratio of each
    pixel's grey level to the previous frame's (:meth:`light_measures`), and when it is not 1 and
    the previous frame times the gain matches more than ``exposure`` times as many pixels (within
    3 grey levels) as the previous frame as it is, the model's means are multiplied by it (the
    chroma means' distances from grey too) before the frame is compared. An object that covers
    part of the frame stays foreground, where the light switch's restart would take it into the
    background, and a change spread over many frames, each too small for the light switch, is
    followed frame by frame. Moving objects, even leaves across most of the picture, give ratios
    that one gain explains poorly: on the 20 dev clips as they are, a gain explained at most 1.7
    times the pixels no change did, and following the few above 1.5 lost no clip anything.
    These are the "time of day" and gradual "light switch" problems of Wallflower (Toyama et al.,
    ICCV 1999), met with one frame-wide gain, estimated by a median so that moving objects do not
    sway it. The gain taken is not the frame pair's alone but the scene's since the model last
    matched it (:meth:`exposure_gain`): the frame pairs' gains the model did not follow, when
    each explained more pixels than no change, are kept as a drift, which fades as the
    means learn (at ``alpha``) and is taken with the next followed gain. Lights that flicker
    (mains light beating with the frame rate, an auto-exposure that hunts) are followed on some
    swings and not on the swings back; without the drift the means ratcheted away from the scene
    and the frame flooded (docs/evaluation-log.md, "Exposure").

    Light field (``light_field`` > 0; off by default): a change of light that is uneven over the
    picture (a cloud's shadow crossing a sunlit scene) is no one gain. The frame's gain over the
    background is measured in 8x8 blocks, only where the background's texture survives in the
    frame (an object hides it), spread to the blocks without texture and interpolated to each
    pixel; foreground within ``light_field`` grey levels of the background times that gain is
    background (:mod:`motiondetect.filters.light_field`, which gives the method and its sources).
    Only the output changes: the model learns from its own mask, so the field runs after the
    model on a whole batch. It is the mask's last step, after the ghost test and the
    recent-background gate: a cloud's shadow darkens a patch of road one way, as a car does, so the
    gate before it would add back what the field explains (the sunlight clip with ``light_field``
    24: pixel F 0.068 with the gate after the field, 0.272 before it).

    Chroma (``chroma_min_sigma`` > 0; 8 by default): the model also keeps a mean and variance of
    the pixel's full-range BT.601 Cb and Cr, and the pixel is foreground when its grey level *or*
    either chroma value is further than ``sigmas`` standard deviations from its mean, each chroma
    variance floored at ``chroma_min_sigma**2``. A person in clothes of the background's
    brightness but another colour then moves, while a shadow, which darkens the grey level but
    keeps the hue, is left to the grey level's ``shadow_floor``. The chroma means and variances
    learn as the grey level's do (the same rates, the same mask), starting from the first
    compared frame's chroma.

    Grey pixels have no colour to compare: where the frame's Cb and Cr are both within
    ``GREY_CHROMA`` (3) of 128, or the model's chroma means both are (in Q16), the chroma neither
    flags the pixel nor learns, and a restart (light switch, still foreground) keeps the chroma
    means where the frame is grey; where the means are grey and the frame is not, they take the
    frame's Cb and Cr at once when the grey level is background. A camera that switches to night
    (infrared) mode sends grey frames: the chroma then keeps the day's colours instead of flooding
    every coloured pixel, and a stream that starts at night learns the colours when they come (on
    the 20 dev clips turned grey from their middle frame on, mean pixel F 0.495 -> 0.789; grey up
    to it, 0.513 -> 0.781; as they are, 0.7995 -> 0.8001). A frame pixel whose colour is clipped
    (:func:`clipped`: its R, G or B, made back from Y, Cb and Cr, at :data:`CLIPPED` or above) has
    no colour to compare either: a brightening that saturates highlights moves their chroma while
    their colour stays (on the 20 dev clips brightened to 1.5 times over ten frames, mean pixel F
    0.635 -> 0.693; as they are, 0.8040 -> 0.8041). The chroma planes come with the frame (:meth:`needs_chroma`): from a
    decoder's 4:2:0 planes (:meth:`Picture.chroma <motiondetect.core.picture.Picture.chroma>`) or
    a BGR frame (:func:`~motiondetect.filters.gray.bgr_chroma`), through the same downscale and
    registration as the grey image.

    Weak pixels (``grow_sigmas`` > 0; 1.2 by default): the median and erosion after the model
    remove specks and thin the mask, and the dilation after them grows it back by a square; where
    the object's outline is not square, that growth covers background (a halo around people, most
    of a shaking camera's false positives). When a dilation follows (:attr:`weak_level`, set by
    :func:`~motiondetect.pipeline.detector.link_growth`), the model marks the pixels that are no
    foreground but lie further than ``grow_sigmas`` standard deviations from their means (the grey
    level with its floors, or a coloured pixel's Cb or Cr) with the weak level
    :data:`~motiondetect.filters.base.WEAK` (128); the median votes on it as a level (threshold
    decomposition), the erosion keeps the foreground it removes as weak, and the dilation grows
    the foreground into those pixels alone: hysteresis, as Canny (1986) grows strong edges into
    weak ones. A weak pixel learns as background, so the model itself is unchanged.

    Input ``(H, W)`` uint8 grey (the current frame) with side input ``reference`` (the previous
    grey frame), and with chroma on the ``(2, H, W)`` uint8 chroma planes (Cb, Cr) of the current
    frame; output ``(H, W)`` uint8 mask in {0, 255}, with the weak level 128 when
    :attr:`writes_weak`.

    State: ``m`` and ``v`` per pixel, set on the first call of a stream (after :meth:`reset`, or
    when the frame size changes) to the reference frame and ``min_sigma**2``, and the number of
    frame pairs seen; with ``still_frames``, ``lightswitch``, ``exposure``, ``quiet_tolerance`` below 255 or
    ``variance_min_change`` above 0, the previous grey frame (first the reference); with ``still_frames``, each pixel's count of still foreground frames (int32),
    reset to 0 by a frame that is not both, when the pixel is absorbed and by a light switch; with
    ``exposure``, its drift (an int, Q16; on the device two int32 slots, one read and one written
    by each launch); with
    ``bootstrap``, until pair N, the history of grey levels ``(N + 1, H, W)`` and chroma
    ``(N, 2, H, W)``, uint8; with ``ghost_frames``, on the host, the ghost test's previous frame
    and runs (:class:`~motiondetect.filters.ghosts.GhostWindow`).
    Arithmetic is
    integer fixed point, identical on both backends: ``m`` in Q16 (grey level * 2**16, int32),
    ``v`` in Q8 (grey level**2 * 2**8, int32), rates, ``relative_floor`` and ``shadow_floor`` in
    Q16, ``sigmas**2`` and ``min_sigma**2`` in Q8, each quantised once by rounding; the relative
    and the darker pixels' floors ``(s**2 + 2**23) >> 24`` (Q8) with ``s = (m * f_q16 + 2**15) >> 16``
    (``f`` the floor's fraction); 64-bit products; updates
    ``m += (d * a + 2**15) >> 16`` and ``v += ((s - v) * r + 2**15) >> 16`` with ``d = x * 2**16 - m``
    (arithmetic shifts, i.e. floor, after adding half: rounding half up).
    """

    NAME = "gaussian_background"
    SENSITIVITY = ("sigmas", 0.1)
    KERNEL = "gaussian_background"
    BATCHED = True
    INPUT = Kind.GRAY
    OUTPUT = Kind.MASK
    SIDE_INPUT = "reference"
    LEARNING_RATES = ("alpha", "alpha_foreground", "variance_alpha", "variance_alpha_foreground")
    FRAME_COUNTS = ("still_frames", "warmup", "bootstrap", "ghost_frames")
    INTER_CODED = {"still_frames": "still_frames_inter"}
    PARAMS = (
        Param(
            "sigmas",
            float,
            2.0,
            0.5,
            10.0,
            "standard deviations",
            "a pixel moves when it is further than this from its background mean; 2.0 (with "
            "min_sigma 8 and a 9x9 median) was the leave-one-clip-out choice of 19 of the 20 dev "
            "clips (docs/evaluation-log.md); OpenCV MOG2's varThreshold 16 is 4",
        ),
        Param(
            "min_sigma",
            float,
            6.0,
            0.5,
            64.0,
            "grey levels",
            "floor of the standard deviation, so a perfectly still pixel does not flag noise; 6 (with "
            "sigmas 2.0: at least 12 grey levels) with relative_floor 0.08 (docs/evaluation-log.md, "
            '"The relative floor"); 10 before it',
        ),
        Param(
            "shadow_floor",
            float,
            0.08,
            0.0,
            1.0,
            "fraction of the background's grey level",
            "floor of the standard deviation where the pixel is darker than its background mean, "
            "as a fraction of that mean, so a darkening by a small share of the background (a cast "
            "shadow, a dimmed reflection: a change in proportion to the brightness, after Weber) is "
            "not motion; 0.08 with chroma (the leave-one-clip-out choice of 12 of the 20 dev clips' "
            "folds, 0.06 of 7); 0 (off) keeps min_sigma's floor alone",
        ),
        Param(
            "relative_floor",
            float,
            0.08,
            0.0,
            1.0,
            "fraction of the background's grey level",
            "floor of the standard deviation on every pixel, as a fraction of its background mean "
            "(Weber's law: a camera's slow exposure or white-balance drift, which the exposure's "
            "frame-to-frame gain does not follow, changes bright pixels by more grey levels than "
            "dark ones), so min_sigma can be low enough for faint objects on dark backgrounds; "
            "shadow_floor stays the darker pixels' floor where it is higher; 0.08 with min_sigma 6: "
            "every leave-one-clip-out fold's choice of 0.07 or 0.08 over the 20 dev clips and the "
            'three check clips (docs/evaluation-log.md, "The relative floor"); 0 (off) keeps '
            "min_sigma's floor alone",
        ),
        Param(
            "chroma_min_sigma",
            float,
            8.0,
            0.0,
            64.0,
            "grey levels of Cb and Cr",
            "floor of the standard deviation of the pixel's chroma (full-range BT.601 Cb and Cr); a "
            "pixel also moves when its Cb or Cr is further than sigmas of these from its background's, "
            "so colour changes the grey level misses are found; 8 was the leave-one-clip-out choice of "
            "16 of the 20 dev clips' folds (6 of the other 4; held out 0.757 against 0.747 for the "
            "grey level alone); 0 (off) compares the grey level alone",
        ),
        Param(
            "shadow_chroma",
            float,
            2.0,
            0.0,
            64.0,
            "grey levels of Cb and Cr",
            "a pixel darker than its background, by a ratio down to shadow_ratio, is a shadow (not "
            "motion by its grey level) when its Cb and Cr lie within this of the background's dimmed "
            "by that ratio (128 + ratio * (mean - 128)) and the background has colour (its Cb and Cr "
            "4 of these from grey in all): the chromaticity test of Horprasert et al. (1999) and "
            "Cucchiara et al. (2003); needs chroma_min_sigma; 2 was every leave-one-clip-out fold's "
            "choice over 0, 1.5, 2 and 3 on the 20 dev clips (held out 0.805 against 0.804 without; "
            'docs/evaluation-log.md, "Shadows by their colour"); 0 (off) leaves shadows to shadow_floor',
        ),
        Param(
            "shadow_ratio",
            float,
            0.4,
            0.0,
            1.0,
            "fraction of the background's grey level",
            "the darkest a shadow of shadow_chroma may make a pixel, as a share of its background's "
            "grey level; 0.4 was the leave-one-clip-out choice of 19 of the 20 dev clips' folds over "
            "0.4, 0.5 and 0.6 (OpenCV MOG2's fTau is 0.5: a pixel more than twice darker is no shadow)",
        ),
        Param(
            "grow_sigmas",
            float,
            1.2,
            0.0,
            10.0,
            "standard deviations",
            "the dilation after the model (the default pipeline's) grows the mask only into pixels "
            "further than this from their background (grey level with its shadow floor, or a coloured "
            "pixel's Cb or Cr), so the outline it restores after the median and erosion follows the "
            "object, not a square around it (hysteresis, as Canny's edges grow from strong into weak "
            "pixels); with a 7x7 dilation, 1.2 was every leave-one-clip-out fold's choice over 0, 0.8, "
            "1.0, 1.2, 1.4 and 1.6 on the 17 dev clips whose labels do not count leaves (held out 0.865 "
            'against 0.859 without; docs/evaluation-log.md, "Growing into weak pixels"); 0 grows everywhere',
        ),
        Param(
            "alpha",
            float,
            0.01,
            0.0,
            1.0,
            "fraction per frame",
            "mean learning rate where the pixel is background; 0.01 is Frigate's frame_alpha",
        ),
        Param(
            "alpha_foreground",
            float,
            0.002,
            0.0,
            1.0,
            "fraction per frame",
            "mean learning rate where the pixel is foreground (selective update); 0.002 absorbs a "
            "stopped object in about 500 frames, MOG2's default history",
        ),
        Param(
            "variance_alpha",
            float,
            0.04,
            0.0,
            1.0,
            "fraction per frame",
            "variance learning rate where the pixel is background; 0.04: the leave-one-clip-out "
            "choice of 22 of the 23 dev clips' folds, with the two windows of the highway camera "
            'after the shared one (docs/evaluation-log.md, "Three windows of the highway camera")',
        ),
        Param(
            "variance_alpha_foreground",
            float,
            0.0025,
            0.0,
            1.0,
            "fraction per frame",
            "variance learning rate where the pixel is foreground, so trees that start waving widen "
            "their threshold; 0.0025 scored best on the CDnet clips",
        ),
        Param(
            "still_frames",
            int,
            7,
            0,
            100000,
            "frames",
            "a foreground pixel whose grey level stays within still_tolerance of the previous frame's "
            "for this many frames in a row is taken into the background at once (a ghost: background "
            "uncovered where something stood at the start); 7 with still_tolerance 0: the best of "
            "the 8 CDnet and Wallflower dev clips and no dev clip worse by 0.01, where 5, the "
            "leave-one-clip-out choice, lies a frame from 4, which absorbs slow cars on CDnet fall "
            '(docs/evaluation-log.md, "Still foreground"); 0 (off) leaves it to alpha_foreground',
        ),
        Param(
            "still_frames_inter",
            int,
            17,
            0,
            100000,
            "frames",
            "still_frames for an inter-coded video (H.264, HEVC, MPEG-4, VP9, AV1...), whose encoder "
            "repeats a still object's pixels exactly (skip blocks), so a resting person looks as still "
            "as a ghost; 17: the leave-one-clip-out choice over the dev clips through libx264 at CRF "
            '23, 28 and 35 (docs/evaluation-log.md, "Frame rate, compression and noise"); 0: off there',
        ),
        Param(
            "still_tolerance",
            int,
            0,
            0,
            255,
            "grey levels",
            "largest change from the previous frame's grey level that still_frames counts as still; "
            "0 (the same grey level); with 1, counts below 10 frames absorb moving water and people on "
            "the dev clips",
        ),
        Param(
            "quiet_tolerance",
            int,
            0,
            0,
            255,
            "grey levels",
            "largest change from the previous frame's grey level at which a foreground pixel's means "
            "learn at alpha_foreground; a larger change (something moving) teaches the background "
            "nothing; 255: every foreground frame. 0 (an unchanged grey level, as still_frames counts): "
            "the choice of all 20 folds of a leave-one-clip-out over 0, 1, 2, 4, 8 and 255 on the dev "
            'clips fresh and after long runs (docs/evaluation-log.md, "Long runs")',
        ),
        Param(
            "variance_min_change",
            int,
            9,
            0,
            255,
            "grey levels",
            "smallest change from the previous frame's grey level at which a foreground pixel's "
            "variances learn at variance_alpha_foreground after the warm-up: waving leaves and water "
            "change that much from frame to frame and are learnt, while something that stopped in view "
            "(a person reading, a parked car) no longer widens its own threshold until it is missed. 9: "
            "the 20 dev clips fresh and after long runs 0.815 / 0.821 against 0.814 / 0.809 with 0, the "
            "whole CDnet office sequence 0.754 -> 0.936 (a man reading for 30 s); an object parked on a "
            "camera's noise is still taken in by its means, after 1.7-3.2 minutes at 25 frames/s "
            '(docs/evaluation-log.md, "People who stop"); 0: every foreground frame',
        ),
        Param(
            "lightswitch",
            float,
            0.7,
            0.0,
            1.0,
            "fraction of the frame",
            "the model restarts from a frame on which at least this share of the pixels turned "
            "brighter (or this share darker) than the previous frame by more than sigmas * min_sigma "
            "grey levels (or sigmas * relative_floor of the previous grey level, where larger): a light "
            "switched on or off; 0.7: on the 20 dev clips, real motion turned at most 0.58 of the frame "
            "one way with min_sigma 10 (at most 0.66 with 6) and no clip changes, while with light switches added "
            "(+25, +40, x0.6) the mean pixel F rises from 0.24-0.30 to 0.56-0.58 (0.5 costs a dev "
            'clip 0.018; Frigate\'s lightning_threshold is 0.8; docs/evaluation-log.md, "Light switches"); not '
            "when the exposure follows a gain that explains half as many pixels or more (a dimmer or an iris: "
            'what is in view stays foreground; "Light switches a gain explains"); 0 (off) '
            "leaves it to the learning rates",
        ),
        Param(
            "exposure",
            float,
            1.25,
            0.0,
            100.0,
            "times as many pixels",
            "the model follows a frame-wide gain in brightness (a camera's exposure, gain or iris, a "
            "cloud): the median ratio of each pixel's grey level to the previous frame's scales the "
            "model's means when that gain explains (within 3 grey levels) more than this many times "
            "as many pixels as no change does; 1.25: on the 20 dev clips as they are no clip changes, while "
            "with exposure ramps added (x0.8 over 10 frames) the mean pixel F is 0.795 against 0.586 at 1.5, "
            "and with lights flickering by 5 % at 10 Hz 0.769 against 0.669 (1.5 was the default before; "
            "off, ramps and steps cost 0.2-0.5); the swings it misses are taken with the next gain (a drift "
            'fading at alpha), so flicker at 10 Hz by 1-5 % scores 0.790-0.793 (docs/evaluation-log.md, "Exposure"); '
            "0 (off) leaves it to the learning rates and the light switch",
        ),
        Param(
            "light_field",
            float,
            0.0,
            0.0,
            64.0,
            "grey levels",
            "foreground that a smooth gain over the background explains within this many grey "
            "levels is background: a gain measured in 8x8 blocks where the background's texture "
            "survives in the frame (a cloud's shadow, the sun coming out; "
            "motiondetect/filters/light_field.py); the dev set's sunlight clip rises from pixel F "
            "0.063 to 0.212 (12) or 0.272 (24, configs/outdoor.yaml) at a cost of 0.002 or 0.008 on "
            "the other 22 clips, which leave-one-clip-out does not take (docs/evaluation-log.md, "
            '"The light field as an option"); 0 (off) leaves it to exposure',
        ),
        Param(
            "warmup",
            int,
            50,
            0,
            100000,
            "frames",
            "frame pairs at the start of a stream during which the variance learns at least at "
            "1/(t+1); 50 is the CDnet clips' unscored start",
        ),
        Param(
            "bootstrap",
            int,
            24,
            0,
            255,
            "frames",
            "at this frame pair each pixel's median over the stream's first bootstrap + 1 frames "
            "is taken, and where it lies beyond the model's smallest threshold from the mean (the "
            "start was wrong) the means restart from it, so what moved through those frames (a car "
            "driving off, a person walking away) leaves no ghost, as W4 (Haritaoglu et al., 2000) "
            "starts its background from a median; 24: the choice of 19 of the 20 dev clips' "
            "leave-one-clip-out folds over 0, 14, 24 and 34 (mean pixel F 0.779 -> 0.787, held out "
            '0.784; docs/evaluation-log.md, "Bootstrap"); 0 (off) starts from the first frame alone',
        ),
        Param(
            "ghost_frames",
            int,
            100,
            0,
            100000,
            "frames",
            "on this many frame pairs after the bootstrap, each blob of the mask whose outline is in "
            "the model's mean and not in the frame, where the frame is still, is a ghost (someone "
            "who stood in view through the bootstrap and left) and is taken into the background "
            "(motiondetect/filters/ghosts.py); 100: the choice of all 20 dev clips' "
            "leave-one-clip-out folds over 0, 16, 40, 64 and 100 (mean pixel F 0.8001 -> 0.8045, "
            'sbi_caviar1 0.917 -> 0.975; docs/evaluation-log.md, "Ghosts"); the CUDA backend runs '
            "these frames one a launch; 0 (off)",
        ),
        Param(
            "recent_gate",
            int,
            15,
            0,
            255,
            "grey levels",
            "past the warm-up, a pixel the model calls background but whose standard deviation "
            "exceeds 15 is foreground where it and its 9x9 window moved away from each pixel's "
            "most recent still background grey level by more than this, one way (a queue of cars "
            "the warm-up's variance learnt; leaves move both ways; "
            "motiondetect/filters/recent_gate.py); 15: the choice of all 23 dev clips' "
            "leave-one-clip-out folds over 0, 15, 20, 25 and 30 (held-out mean pixel F 0.786 -> "
            '0.805; docs/evaluation-log.md, "The recent-background gate"); 0 (off)',
        ),
    )

    def __init__(self, **params) -> None:
        super().__init__(**params)
        self._constants_of: tuple | None = None  # the parameter values self._constants derive from
        self._light_changes_of: dict | None = None  # the constants self._light_changes derive from
        #: A dilation follows that grows into the weak level (set by
        #: :func:`~motiondetect.pipeline.detector.link_growth`); alone, the model writes 0 or 255.
        self.weak_level = False
        self.reset()

    @property
    def constants(self) -> dict[str, int]:
        """Integer constants shared by both backends (see the class docstring), made again when
        a parameter changed (the live preview's ``+`` and ``-`` keys move ``sigmas``)."""
        values = tuple(self.params.values())
        if values != self._constants_of:
            p = self.params
            self._constants = {
                "k2_q8": to_q8(p["sigmas"] ** 2),
                "min_var_q8": to_q8(p["min_sigma"] ** 2),
                "shadow_q16": to_q16(p["shadow_floor"]),
                "relative_q16": to_q16(p["relative_floor"]),
                "light_relative_q16": to_q16(p["sigmas"] * p["relative_floor"]),
                "chroma_min_var_q8": to_q8(p["chroma_min_sigma"] ** 2),
                "shadow_chroma_q8": to_q8(p["shadow_chroma"]),
                "shadow_ratio_q16": to_q16(p["shadow_ratio"]),
                "grow_k2_q8": to_q8(p["grow_sigmas"] ** 2),
                "alpha_q16": to_q16(p["alpha"]),
                "alpha_fg_q16": to_q16(p["alpha_foreground"]),
                "var_alpha_q16": to_q16(p["variance_alpha"]),
                "var_alpha_fg_q16": to_q16(p["variance_alpha_foreground"]),
                "exposure_q8": to_q8(p["exposure"]),
                "light_field_q16": to_q16(p["light_field"]),
            }
            self._constants_of = values
        return self._constants

    @property
    def writes_weak(self) -> bool:
        """The mask holds the weak level :data:`~motiondetect.filters.base.WEAK` (128) where a
        pixel is off its background by more than ``grow_sigmas`` but is not foreground: a
        dilation follows to grow into it (:attr:`weak_level`) and ``grow_sigmas`` is above 0."""
        return self.weak_level and self.constants["grow_k2_q8"] > 0

    @property
    def keeps_last(self) -> bool:
        """The model keeps the previous grey frame between calls (``still_frames``,
        ``lightswitch`` or ``exposure`` on, ``quiet_tolerance`` below 255, ``variance_min_change``
        or ``recent_gate`` above 0)."""
        return bool(
            self.params["still_frames"]
            or self.follows_light
            or self.gates_foreground
            or self.params["variance_min_change"]
            or self.params["recent_gate"]
        )

    @property
    def gates_foreground(self) -> bool:
        """The means learn from a foreground pixel only where it is quiet (``quiet_tolerance``
        below 255: a grey level's change never exceeds 255)."""
        return self.params["quiet_tolerance"] < 255

    @property
    def follows_light(self) -> bool:
        """The model measures each frame's change of light from the previous one (``lightswitch``
        or ``exposure`` on) before comparing it."""
        return bool(self.params["lightswitch"] or self.constants["exposure_q8"])

    @property
    def light_change(self) -> int:
        """Grey levels, ``floor(sigmas * min_sigma)``: a pixel turned brighter (darker) for the
        light switch when it exceeds the previous frame's grey level ``p`` by more than this (falls
        below it by more than this), or by more than ``(p * light_relative_q16) >> 16`` where that
        is larger (:attr:`light_changes`)."""
        return int(self.params["sigmas"] * self.params["min_sigma"])

    @property
    def light_changes(self) -> np.ndarray:
        """(256,) uint8, by the previous frame's grey level ``p``: the change the light switch
        counts beyond, ``max(light_change, (p * light_relative_q16) >> 16)`` with
        ``light_relative_q16`` the Q16 of ``sigmas * relative_floor``, the model's smallest
        threshold at that grey level (as the kernel computes it), so a flicker of bright pixels
        that the relative floor keeps out of the mask does not restart the model either. Made
        again only with the constants (it is read every frame); read-only."""
        c = self.constants
        if self._light_changes_of is not c:
            levels = np.arange(256, dtype=np.int64)
            self._light_changes = np.maximum(self.light_change, (levels * c["light_relative_q16"]) >> 16).clip(0, 255).astype(np.uint8)
            self._light_changes_of = c
        return self._light_changes

    def light_count(self, pixels: int) -> int:
        """Pixels, ``ceil(lightswitch * pixels)`` with ``lightswitch`` in Q16 (0 when off): as
        many turned brighter, or as many darker, restart the model. Both backends use this."""
        return (to_q16(self.params["lightswitch"]) * pixels + 65535) >> 16

    @property
    def needs_chroma(self) -> bool:
        """The model compares the chroma too (``chroma_min_sigma`` > 0): the detector passes each
        frame's chroma planes."""
        return self.constants["chroma_min_var_q8"] > 0

    def reset(self) -> None:
        self._mean: np.ndarray | None = None  # int32 Q16, kept like the kernel's (see reference)
        self._var: np.ndarray | None = None  # int32 Q8
        self._chroma_mean: np.ndarray | None = None  # (2, H, W) int32 Q16: Cb, Cr
        self._chroma_var: np.ndarray | None = None  # (2, H, W) int32 Q8
        self._last: np.ndarray | None = None  # (H, W) uint8, the previous grey frame (keeps_last)
        self._still: np.ndarray | None = None  # (H, W) int32, still foreground frames in a row
        self._recent: np.ndarray | None = None  # (H, W) uint8, the recent still background (recent_gate)
        # The bootstrap's history until pair `bootstrap`: grey levels of pairs 0..N (N + 1, H, W)
        # and chroma of pairs 1..N (N, 2, H, W), uint8; cancelled by a change of light.
        self._boot_grey: np.ndarray | None = None
        self._boot_chroma: np.ndarray | None = None
        self._boot_cancelled = False
        self._drift = DRIFT_ONE  # the exposure's drift (exposure_gain), Q16
        planes = 3 if self.needs_chroma else 1
        layout = {f"{name}{p}": (dtype, ()) for p in range(planes) for name, dtype in _PLANE_SCRATCH.items()}
        shared = {**_SHARED_SCRATCH, **(_CHROMA_SCRATCH if self.needs_chroma else {})}
        self._scratch = Scratch(**layout, **{name: (dtype, ()) for name, dtype in shared.items()})
        self._pairs = 0  # frame pairs seen by the CPU model
        self._ghosts = GhostWindow()  # the CPU model's ghost test (ghost_frames)
        self._device_ghosts = GhostWindow()  # the device model's
        self._device_shape: tuple[int, ...] | None = None
        self._device_pairs = 0
        self._drift_slot = 0  # the device's exposure drift: the slot the next launch reads

    def rates(self, pair: int) -> tuple[int, int, int, int]:
        """The Q16 learning rates (mean, mean foreground, variance, variance foreground) for the
        ``pair``-th frame pair of a stream (1 for the first), warm-up included."""
        c = self.constants
        warm = self.warm_rate(pair)
        return c["alpha_q16"], c["alpha_fg_q16"], max(c["var_alpha_q16"], warm), max(c["var_alpha_fg_q16"], warm)

    def warm_rate(self, pair: int) -> int:
        """The warm-up's least variance rate (Q16) on the ``pair``-th frame pair: round(65536 /
        (pair + 1)) half up in integers, as the kernel computes it (equal to to_q16(1 / (pair + 1))
        for every pair up to the largest warm-up; a test checks), and 0 after ``warmup`` pairs."""
        return (131072 + pair + 1) // (2 * (pair + 1)) if pair <= self.params["warmup"] else 0

    @property
    def model(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The CPU model: mean (grey level * 2**16) and variance (grey level**2 * 2**8), each
        ``(H, W)`` int64 (copies), or ``None`` before the first frame pair."""
        return None if self._mean is None else (self._mean.astype(np.int64), self._var.astype(np.int64))

    @property
    def chroma_model(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The CPU model's chroma: means and variances of Cb and Cr, each ``(2, H, W)`` int64
        (copies; units as :attr:`model`), or ``None`` without chroma or before the first frame pair."""
        if self._chroma_mean is None:
            return None
        return self._chroma_mean.astype(np.int64), self._chroma_var.astype(np.int64)

    @property
    def still_model(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The CPU model's still-foreground state: the previous grey frame ``(H, W)`` uint8 and
        each pixel's count of still foreground frames in a row ``(H, W)`` int32 (copies), or
        ``None`` with ``still_frames`` 0 or before the first frame pair."""
        return None if self._still is None else (self._last.copy(), self._still.copy())

    def reference(self, src, side=None, chroma=None):
        """Compare ``src`` with the model and update it (see the class docstring).

        Args:
            src: (H, W) uint8 grey levels, the current frame.
            side: (H, W) uint8, the previous frame: read on the first frame pair of a stream only.
            chroma: (2, H, W) uint8 Cb and Cr of the current frame when :attr:`needs_chroma`.

        Returns:
            (H, W) uint8 mask: 255 foreground, else 0, or 128 on weak pixels with :attr:`writes_weak`.

        Raises:
            ValueError: the first frame pair without ``side``, or chroma missing or of another size.
        """
        c = self.constants
        if self.needs_chroma and (chroma is None or chroma.shape != (2, *src.shape)):
            got = "none" if chroma is None else f"shape {chroma.shape}"
            raise ValueError(f"gaussian_background: chroma_min_sigma needs (2, {src.shape[0]}, {src.shape[1]}) chroma planes; got {got}")
        if self._mean is None or self._mean.shape != src.shape:
            if side is None:
                raise ValueError("gaussian_background: the first frame of a stream needs the reference frame")
            # int32 holds the state, as in the kernel: the mean stays between its old value and
            # the new sample, so in [0, 255 * 2**16]; the variance between its old value and the
            # sample, which is at most (255 * 2**16)**2 / 2**24 = 255**2 * 2**8 < 2**24.
            self._mean = np.left_shift(side, 16, dtype=np.int32)
            self._var = np.full(src.shape, c["min_var_q8"], np.int32)
            if self.needs_chroma:  # from the current frame: the reference's chroma is not kept
                self._chroma_mean = np.left_shift(chroma, 16, dtype=np.int32)
                self._chroma_var = np.full(chroma.shape, c["chroma_min_var_q8"], np.int32)
            if self.keeps_last:
                self._last = side.copy()
            if self.params["still_frames"]:
                self._still = np.zeros(src.shape, np.int32)
            if self.params["recent_gate"]:
                self._recent = side.copy()
            self._start_bootstrap(side)
            self._drift = DRIFT_ONE
            self._pairs = 0
            self._ghosts = GhostWindow()
        if self.follows_light and self._follow_light(src, chroma) and self._recent is not None:
            self._recent[...] = src  # an old brightness is no recent background
        tolerance = self.constants["light_field_q16"]
        compared = ((self._mean + (1 << 15)) >> 16).astype(np.uint8) if tolerance else None
        self._pairs += 1
        alpha, alpha_fg, var_alpha, var_alpha_fg = self.rates(self._pairs)
        # The rates of each pixel, looked up from its mask value (0 or 255), scaled as _learn needs.
        mean_rates = np.full(256, alpha * 2.0**-4)
        mean_rates[255] = alpha_fg * 2.0**-4
        var_rates = np.full(256, var_alpha * 2.0**-16)
        var_rates[255] = var_alpha_fg * 2.0**-16
        settled_rate = self.warm_rate(self._pairs) * 2.0**-16  # a foreground pixel below variance_min_change
        out = np.empty(src.shape, np.uint8)
        height, width = src.shape
        rows = chunk_rows(width)
        planes = 3 if self.needs_chroma else 1

        def update(band: int, start: int, stop: int) -> None:
            buffers = {name: b[: stop - start] for name, b in self._scratch.get(band, rows, width).items()}
            per_plane = [[buffers[f"{name}{p}"] for name in _PLANE_SCRATCH] for p in range(planes)]
            self._update(src, chroma, out, slice(start, stop), (mean_rates, var_rates, settled_rate), per_plane, buffers)

        run_bands(height, width, update, rows)
        level = self.params["recent_gate"]
        if level:
            diff = recent_gate.deviations(src, self._recent, self._var, level, self._pairs > self.params["warmup"])
            still_background = (out != 255) & (np.abs(src.astype(np.int16) - self._last) <= recent_gate.STILL)
        booting = self._boot_grey is not None and self._pairs == self.params["bootstrap"] and not self._boot_cancelled
        if self._boot_grey is not None:
            self._bootstrap(src, chroma)
        if level:
            if booting:  # what moved through the first frames is not the recent background
                self._recent[...] = (self._mean + (1 << 15)) >> 16
            np.copyto(self._recent, src, where=still_background)
        if self.keeps_last:
            self._last[...] = src
        if self._pairs in self.ghost_pairs:
            take = self._ghosts.take(src, self._mean, out)
            if take is not None:
                take_ghosts(take, src, chroma, self._mean, self._chroma_mean, self._still, out)
        if level:
            recent_gate.gate(diff, out, level)
        if compared is not None:  # last: what a change of light explains the gate must not add back
            out[explained(src, compared, tolerance)] = 0  # the model (which learnt from its mask) stays
        return out

    @property
    def ghost_pairs(self) -> range:
        """The frame pairs of a stream the ghost test covers (``ghost_frames``): the bootstrap's
        pair N (or pair 1 without one), which only starts it, and the ``ghost_frames`` after it."""
        frames = self.params["ghost_frames"]
        start = max(self.params["bootstrap"], 1)
        return range(start, start + frames + 1) if frames else range(0)

    def _start_bootstrap(self, reference: np.ndarray) -> None:
        """Start the bootstrap's history (``bootstrap`` > 0) from the stream's first frame
        ``reference`` (pair 0); the chroma's (Cb, Cr) starts at pair 1."""
        n = self.params["bootstrap"]
        self._boot_grey = self._boot_chroma = None
        self._boot_cancelled = False
        if n:
            self._boot_grey = np.empty((n + 1, *reference.shape), np.uint8)
            self._boot_grey[0] = reference
            if self.needs_chroma:
                self._boot_chroma = np.empty((n, 2, *reference.shape), np.uint8)

    def _bootstrap(self, src: np.ndarray, chroma: np.ndarray | None) -> None:
        """Keep frame pair ``self._pairs``'s grey levels ``src`` (and ``chroma``) in the
        bootstrap's history; on pair ``bootstrap`` (N), unless a change of light cancelled it,
        take the lower medians (rank ``(n - 1) // 2`` of n values) over pairs 0..N (grey level)
        and 1..N (Cb, Cr), and where one lies beyond the model's smallest threshold from its mean
        (``d**2 > k2 * floor``, Q16 ``d``, the grey level's or the chroma's floor), restart the
        means from them and the still count; then drop the history."""
        n, pair = self.params["bootstrap"], self._pairs
        self._boot_grey[pair] = src
        if self._boot_chroma is not None:
            self._boot_chroma[pair - 1] = chroma
        if pair < n:
            return
        if not self._boot_cancelled:
            c = self.constants
            medians = [(lower_median(self._boot_grey).astype(np.int64) << 16, self._mean, c["min_var_q8"])]
            if self._boot_chroma is not None:
                chroma_medians = lower_median(self._boot_chroma).astype(np.int64) << 16
                medians += [(chroma_medians[p], self._chroma_mean[p], c["chroma_min_var_q8"]) for p in range(2)]
            wrong = np.zeros(src.shape, bool)
            for median, mean, floor in medians:
                d = median - mean
                wrong |= d * d > (c["k2_q8"] * floor) << 16
            for median, mean, _ in medians:
                mean[wrong] = median[wrong]
            if self._still is not None:
                self._still[wrong] = 0
        self._boot_grey = self._boot_chroma = None

    def light_measures(self, src: np.ndarray, last: np.ndarray) -> tuple[int, int, int, int, int]:
        """The change of light from ``last`` to ``src`` (each ``(H, W)`` uint8 grey levels) that
        the model decides on, as integers both backends compute:

        - ``brighter``, ``darker``: pixels above (below) ``last`` by more than
          :attr:`light_changes` at ``last``'s grey level;
        - ``ratio``: the exposure's gain in Q8 (256 is 1.0), the lower median of
          ``min((src * 256 + last // 2) // last, EXPOSURE_BINS - 1)`` over the pixels with
          ``EXPOSURE_DARK <= last <= 254`` and ``src <= 254`` (256 when there are none);
        - ``explained``: pixels within ``EXPOSURE_TOLERANCE`` of ``min((last * ratio + 128) >> 8, 255)``;
        - ``unchanged``: pixels within ``EXPOSURE_TOLERANCE`` of ``last``.

        With ``exposure`` off, ``ratio`` is 256 and the last two 0.
        """
        change = cv2.LUT(last, self.light_changes)
        brighter = int(np.count_nonzero(cv2.subtract(src, last) > change))
        darker = int(np.count_nonzero(cv2.subtract(last, src) > change))
        if not self.constants["exposure_q8"]:
            return brighter, darker, EXPOSURE_ONE, 0, 0
        # Each pixel's bin from a table indexed by (last, src); pixels not measured fall in an
        # extra bin past the last.
        pairs = np.left_shift(last, 8, dtype=np.uint16)
        pairs |= src
        hist = np.bincount(_RATIO_BINS[pairs].ravel(), minlength=EXPOSURE_BINS + 1)[:EXPOSURE_BINS]
        measured = int(hist.sum())
        ratio = int(np.searchsorted(np.cumsum(hist), (measured + 1) // 2)) if measured else EXPOSURE_ONE
        unchanged = int(np.count_nonzero(cv2.absdiff(src, last) <= EXPOSURE_TOLERANCE))
        explained = unchanged
        if ratio != EXPOSURE_ONE:
            predicted = cv2.LUT(last, np.minimum((np.arange(256) * ratio + 128) >> 8, 255).astype(np.uint8))
            explained = int(np.count_nonzero(cv2.absdiff(src, predicted) <= EXPOSURE_TOLERANCE))
        return brighter, darker, ratio, explained, unchanged

    def _follow_light(self, src, chroma) -> bool:
        """Follow the change of light from the previous frame to ``src`` (:meth:`light_measures`):
        restart the model from ``src`` (and ``chroma``) on a light switch, else scale its means by
        the exposure's gain (:meth:`exposure_gain`; the class docstring). Returns whether the
        light changed (a switch or a gain other than 1)."""
        measures = self.light_measures(src, self._last)
        gain, self._drift = self.exposure_gain(self._drift, *measures, self.light_count(src.size))
        if gain == 0:
            self._boot_cancelled = True
            np.left_shift(src, 16, out=self._mean, dtype=np.int32)
            if self._chroma_mean is not None:
                coloured = ~no_colour(src, chroma)  # a grey or clipped frame keeps the colours known
                self._chroma_mean[:, coloured] = chroma[:, coloured].astype(np.int32) << 16
            if self._still is not None:
                self._still[...] = 0
        elif gain != EXPOSURE_ONE:
            self._boot_cancelled = True
            mean = self._mean.astype(np.int64)
            self._mean[...] = np.minimum((mean * gain + 128) >> 8, 255 << 16)
            if self._chroma_mean is not None:
                # Cb and Cr are differences from grey (128): a gain scales their distance from it.
                centred = self._chroma_mean.astype(np.int64) - (128 << 16)
                self._chroma_mean[...] = np.clip(((centred * gain + 128) >> 8) + (128 << 16), 0, 255 << 16)
        return gain != EXPOSURE_ONE

    def exposure_gain(
        self, drift: int, brighter: int, darker: int, ratio: int, explained: int, unchanged: int, need: int
    ) -> tuple[int, int]:
        """What the model does with one frame's change of light, and the exposure's drift after it,
        in integers both backends compute (``md_exposure_step`` in the model's kernel).

        Args:
            drift: Q16 (65536 is 1.0), the scene's gain since the model's means last matched it
                that the model has not taken: 1.0 when a stream starts.
            brighter, darker, ratio, explained, unchanged: the frame's :meth:`light_measures`.
            need: pixels that make a light switch (:meth:`light_count`; 0: off).

        Returns:
            ``(gain, drift)``: ``gain`` 0 restarts the model from the frame (a light switch: either
            count reaches ``need``, and no gain :meth:`follows_gain` takes explains half as many
            pixels as the larger count; the drift becomes 1.0); else the Q8 gain to scale the
            means by (256: none). When
            :meth:`follows_gain` takes the frame pair's ``ratio``, the gain is the drift times it,
            rounded to Q8 and kept within the bins (1 to 1023), and the drift keeps what that
            rounding left. A ratio not taken joins the drift when it explains more pixels
            than no change (the swing of a flickering light the margin missed; a moving
            object's ratio explains fewer), and the drift's distance from 1.0 then fades by the
            means' learning rate ``alpha``, since the means learn the scene's light by themselves.
        """
        followed = self.follows_gain(ratio, explained, unchanged)
        changed = max(brighter, darker)
        if need and changed >= need and not (followed and 2 * explained >= changed):
            return 0, DRIFT_ONE
        chained = min(max((drift * ratio + 128) >> 8, DRIFT_MIN), DRIFT_MAX)  # the drift times this ratio
        if followed:
            gain = (chained + 128) >> 8
            return gain, (chained * 256 + gain // 2) // gain
        if explained > unchanged:
            drift = chained
        return EXPOSURE_ONE, DRIFT_ONE + (((drift - DRIFT_ONE) * (65536 - self.constants["alpha_q16"]) + 32768) >> 16)

    def follows_gain(self, ratio: int, explained: int, unchanged: int) -> bool:
        """Whether the model takes the exposure's gain ``ratio`` (Q8) that explains ``explained``
        pixels where ``unchanged`` kept their grey level (:meth:`light_measures`): ``exposure``
        on, a gain other than 1, and ``explained * 256 > exposure_q8 * unchanged``."""
        margin = self.constants["exposure_q8"]
        return bool(margin) and ratio != EXPOSURE_ONE and explained * 256 > margin * unchanged

    def _update(self, src, chroma, out, rows: slice, rates: tuple[np.ndarray, np.ndarray, float], per_plane: list, shared: dict) -> None:
        """Compare rows ``rows`` of ``src`` (and of ``chroma``) with the model into ``out``
        (:meth:`_classify`), then update the model there: :meth:`_learn` on each plane with the
        mask's rates (the means' foreground rate 0 where the pixel is not quiet, the variances'
        ``rates[2]``, the warm-up's alone, where it changed by less than ``variance_min_change``),
        then the still-foreground count.

        Whole-array operations on chunks of rows, into buffers kept between frames: at the
        default working size (480 x 270) 1.3x faster than the int64 NumPy form on one thread,
        1.8x with two bands.
        """
        mask = out[rows]
        if chroma is not None:
            self._find_grey(src, chroma, rows, shared)
        planes = self._classify(src, chroma, mask, rows, per_plane, shared)
        cv2.LUT(mask, rates[0], dst=shared["rate"])
        cv2.LUT(mask, rates[1], dst=shared["vrate"])
        change = shared["flag"]  # free after the comparison: |x - last|, for the gates and the still count
        min_change = self.params["variance_min_change"]
        if self.gates_foreground or self.params["still_frames"] or min_change:
            cv2.absdiff(src[rows], self._last[rows], dst=change)
        if self.gates_foreground:  # no mean learning where a foreground pixel moved
            moved = shared["darker"]
            np.greater(change, self.params["quiet_tolerance"], out=moved)
            np.logical_and(moved, mask, out=moved)
            np.copyto(shared["rate"], 0.0, where=moved)
        if min_change:  # no variance learning (past the warm-up) where a foreground pixel barely changed
            settled = shared["darker"]
            np.less(change, min_change, out=settled)
            np.logical_and(settled, mask, out=settled)
            np.copyto(shared["vrate"], rates[2], where=settled)
        self._learn(*planes[0], shared["rate"], shared["vrate"])
        if chroma is not None:
            rate, vrate, coloured = shared["chroma_rate"], shared["chroma_vrate"], shared["coloured"]
            np.multiply(shared["rate"], coloured, out=rate)  # grey pixels learn no chroma
            np.multiply(shared["vrate"], coloured, out=vrate)
            for mean, var, buffers in planes[1:]:
                self._learn(mean, var, buffers, rate, vrate)
            # Grey means (none known yet) take the frame's colours where its grey level is
            # background: means grey (255), frame not (0), and no grey-level foreground.
            take = coloured  # free after the learning
            np.greater(shared["mean_grey"], shared["frame_grey"], out=take)
            np.greater(take, shared["grey_foreground"], out=take)
            for p in range(2 if take.any() else 0):
                # mean += (chroma << 16 - mean) * take, in the plane's int32 d (free after the
                # learning): a blend by 0 or 1, faster than a masked copy.
                mean, step = self._chroma_mean[p][rows], per_plane[1 + p][0]
                np.left_shift(chroma[p][rows], 16, out=step, dtype=np.int32)
                step -= mean
                step *= take
                mean += step
        if self.params["still_frames"]:
            self._absorb_still(src[rows], None if chroma is None else chroma[:, rows], mask, rows, shared)
        if self.writes_weak:  # last: the rates, the gate and the still count read 0 or 255
            weak, unset = shared["weak"], shared["darker"]  # darker: scratch again by now
            np.equal(mask, 0, out=unset)
            np.logical_and(weak, unset, out=weak)
            np.copyto(mask, WEAK, where=weak)

    def _find_grey(self, src, chroma, rows: slice, shared: dict) -> None:
        """The pixels of rows ``rows`` without colour (the class docstring) into ``shared``:
        ``frame_grey`` 255 where the frame has none (:func:`no_colour`: its Cb and Cr both within
        :data:`GREY_CHROMA` of 128, or a channel clipped), ``mean_grey`` 255 where the chroma
        means rounded are both within it, and ``colour`` (255) and ``coloured`` (bool) where
        neither is: the chroma is compared and learns there. ``flag`` is scratch."""
        frame, means, other, colour = shared["frame_grey"], shared["mean_grey"], shared["flag"], shared["colour"]
        cv2.LUT(chroma[0][rows], _GREY_LEVELS, dst=frame)
        cv2.LUT(chroma[1][rows], _GREY_LEVELS, dst=other)
        cv2.bitwise_and(frame, other, dst=frame)
        clip = shared["coloured"]  # free until the end: the clipped pixels
        clipped(src[rows], chroma[:, rows], out=clip, scratch=(shared["chroma_pairs"], shared["clips_from"]))
        np.copyto(frame, 255, where=clip)
        cv2.inRange(self._chroma_mean[0][rows], *_GREY_MEANS, dst=means)
        cv2.inRange(self._chroma_mean[1][rows], *_GREY_MEANS, dst=other)
        cv2.bitwise_and(means, other, dst=means)
        cv2.bitwise_or(frame, means, dst=colour)
        cv2.bitwise_not(colour, dst=colour)
        np.not_equal(colour, 0, out=shared["coloured"])

    def _classify(self, src, chroma, mask, rows: slice, per_plane: list, shared: dict) -> list[tuple]:
        """Fill ``mask`` (rows ``rows`` of the output) with the union of each plane's
        :meth:`_compare`: 255 where the grey level or either chroma value is further than
        ``sigmas`` from the model; with :attr:`writes_weak`, ``shared["weak"]`` is True where one
        is further than ``grow_sigmas`` (the chroma where it has colour). Returns ``(mean, var, buffers)`` of each plane's rows, for
        :meth:`_learn`."""
        c = self.constants
        weak = (shared["shade"], shared["weak"]) if self.writes_weak else None
        self._compare(
            src[rows], self._mean[rows], self._var[rows], c["min_var_q8"], per_plane[0], (shared["shade"], shared["darker"]), weak
        )
        cv2.compare(per_plane[0][3], per_plane[0][4], cv2.CMP_GT, dst=mask)  # 255 where d**2 > limit
        planes = [(self._mean[rows], self._var[rows], per_plane[0])]
        if chroma is not None:
            if c["shadow_chroma_q8"]:
                self._clear_chroma_shadows(src[rows], per_plane[0][0], chroma[:, rows], mask, rows)
            np.not_equal(mask, 0, out=shared["grey_foreground"])
            flag = shared["flag"]
            for p in range(2):
                mean, var = self._chroma_mean[p][rows], self._chroma_var[p][rows]
                weak_chroma = None if weak is None else (shared["shade"], shared["weak_chroma"])
                self._compare(chroma[p][rows], mean, var, c["chroma_min_var_q8"], per_plane[1 + p], None, weak_chroma)
                cv2.compare(per_plane[1 + p][3], per_plane[1 + p][4], cv2.CMP_GT, dst=flag)
                cv2.bitwise_and(flag, shared["colour"], dst=flag)  # grey pixels: no colour to compare
                cv2.bitwise_or(mask, flag, dst=mask)
                if weak_chroma is not None:
                    np.logical_and(weak_chroma[1], shared["coloured"], out=weak_chroma[1])
                    np.logical_or(weak[1], weak_chroma[1], out=weak[1])
                planes.append((mean, var, per_plane[1 + p]))
        return planes

    def _clear_chroma_shadows(self, x, d, chroma, mask, rows: slice) -> None:
        """Clear from ``mask`` (rows ``rows``: the grey level's foreground so far) the pixels
        darker than their mean that :func:`chroma_shadow` calls shadows, whatever the frame's
        colour (its gate on the means' colour keeps grey means out). ``x``, ``d`` and ``chroma`` are
        the rows' grey levels, their ``x * 2**16 - m`` from :meth:`_compare` and (2, rows, W) Cb
        and Cr. Only the foreground is computed: a few per cent of a frame."""
        ys, xs = np.nonzero(mask)
        darker = d[ys, xs] < 0
        ys, xs = ys[darker], xs[darker]
        if not ys.size:
            return
        c = self.constants
        shadow = chroma_shadow(
            x[ys, xs],
            self._mean[rows][ys, xs],
            chroma[:, ys, xs],
            self._chroma_mean[:, rows][:, ys, xs],
            c["shadow_chroma_q8"],
            c["shadow_ratio_q16"],
        )
        mask[ys[shadow], xs[shadow]] = 0

    def _absorb_still(self, x, chroma, mask, rows: slice, shared: dict) -> None:
        """Count the still foreground frames of rows ``rows`` (``x`` their grey levels, ``mask``
        their mask) and take the pixels that reach ``still_frames`` into the background: the
        mean becomes ``x * 2**16``, the chroma means ``chroma * 2**16`` (the class docstring).
        ``shared["flag"]`` holds ``|x - last|`` on entry (:meth:`_update` makes it once for this
        and the foreground gate); it and ``darker`` are then scratch: nothing is allocated unless a
        pixel is absorbed."""
        still = self._still[rows]
        flag, steady = shared["flag"], shared["darker"]
        np.less_equal(flag, self.params["still_tolerance"], out=steady)
        np.right_shift(mask, 7, out=flag)  # 1 where foreground (255), 0 elsewhere
        still += 1
        still *= steady
        still *= flag
        np.greater_equal(still, self.params["still_frames"], out=steady)
        if steady.any():
            self._mean[rows][steady] = x[steady].astype(np.int32) << 16
            if chroma is not None:
                coloured = steady & (shared["frame_grey"] == 0)  # a grey frame keeps the colours known
                for p in range(2):
                    self._chroma_mean[p][rows][coloured] = chroma[p][coloured].astype(np.int32) << 16
            still[steady] = 0

    def _compare(
        self,
        x,
        mean,
        var,
        floor_q8: int,
        buffers: list[np.ndarray],
        floors: tuple[np.ndarray, np.ndarray] | None,
        weak: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        """Fill ``buffers`` (d, vmax, df, e, limit) for one plane's rows: the fixed-point formulas
        of the class docstring, evaluated in float64 where they need more than 32 bits; every
        value below is an integer times a power of two with at most 42 significant bits, so
        float64 holds it exactly and the results are the integer ones:

        - ``df = d * 2**-12`` with ``|d| < 2**24``; ``e = df**2 = d**2 * 2**-24`` (``d**2 < 2**48``);
        - ``limit = k2 * max(v, floor, relative, shadow) * 2**-8`` (the Q16 limit, below 2**40,
          times 2**-8; ``relative`` the floor of ``relative_floor`` and ``shadow`` the darker
          pixels' floor of ``shadow_floor``, 0 elsewhere (:func:`_relative_var`), on the grey
          level only: pass ``floors``, scratch buffers (float64 and bool) for them), so
          ``d**2 > limit_q16 << 16`` is ``e > limit``;
        - with ``weak`` (a float64 scratch buffer, which may be ``floors``'s, and a bool output):
          ``e > grow_k2 * max(v, floor, relative, shadow) * 2**-8`` into the output, the limit of
          ``grow_sigmas``.
        """
        c = self.constants
        d, vmax, df, e, limit = buffers
        np.left_shift(x, 16, out=d, dtype=np.int32)
        d -= mean
        np.multiply(d, 2.0**-12, out=df)
        np.multiply(df, df, out=e)
        np.maximum(var, np.int32(floor_q8), out=vmax)
        np.copyto(limit, vmax)
        if floors is not None and c["relative_q16"]:
            shade, _ = floors
            _relative_var(mean, c["relative_q16"], shade)
            np.maximum(limit, shade, out=limit)
        # The shadow floor only where it is above the relative one (md_relative_var grows with the
        # fraction; they are equal by default, and a second pass would change nothing).
        if floors is not None and c["shadow_q16"] > c["relative_q16"]:
            shade, darker = floors
            _relative_var(mean, c["shadow_q16"], shade)
            np.less(d, 0, out=darker)
            np.multiply(shade, darker, out=shade)  # 0 where the pixel is not darker
            np.maximum(limit, shade, out=limit)
        if weak is not None:
            weak_limit, flags = weak
            np.multiply(limit, c["grow_k2_q8"] * 2.0**-8, out=weak_limit)
            np.greater(e, weak_limit, out=flags)
        limit *= c["k2_q8"] * 2.0**-8

    @staticmethod
    def _learn(mean, var, buffers: list[np.ndarray], rate: np.ndarray, vrate: np.ndarray) -> None:
        """Update one plane's rows from :meth:`_compare`'s ``buffers`` (which it overwrites), at
        the per-pixel rates ``rate`` (mean, times 2**-4) and ``vrate`` (variance, times 2**-16):

        - the mean: ``m + ((d * a + 2**15) >> 16) = floor(m + df * (a * 2**-4) + 1/2)``, whose
          argument lies between the old mean and the sample, so it is positive and truncation
          (the cast to int32) is the floor;
        - the sample: ``min((d**2 + 2**23) >> 24, (limit_q16 + 128) >> 8) = floor(min(e, limit) + 1/2)``;
        - the variance: ``v + (((s - v) * r + 2**15) >> 16) = floor(v + (s - v) * (r * 2**-16) + 1/2)``,
          between ``v`` and ``s``, so positive again.
        """
        d, _, df, e, limit = buffers
        df *= rate
        df += mean
        np.add(df, 0.5, out=mean, casting="unsafe")
        np.minimum(e, limit, out=e)
        np.add(e, 0.5, out=d, casting="unsafe")  # the sample, in Q8
        d -= var
        np.multiply(d, vrate, out=e)
        e += var
        np.add(e, 0.5, out=var, casting="unsafe")

    def apply_kernel(self, cuda, src, dst, side=None, chroma=None):
        """Enqueue the model on a frame (H, W) or a batch (K, H, W) of consecutive frames.

        ``side`` is the previous grey frame (a batch: each frame's predecessor); only the first
        frame of a stream reads it, to start the model. The kernel keeps each pixel's model in
        registers through the batch, so K frames in one call equal K calls of one frame.
        ``chroma`` (when :attr:`needs_chroma`): ``(address, plane)``, the device address of the
        first frame's Cb plane, the frames' planes packed one after another, and the bytes from
        each Cb to its Cr. With ``light_field`` on, the kernel also writes the mean each frame is
        compared with, and the light field's kernels then clear the foreground it explains in
        ``dst`` (:func:`~motiondetect.filters.light_field.queue_light_field`).

        Raises:
            ValueError: the first frame pair without ``side``, or chroma missing.
        """
        frames, height, width = planes(src)
        init = self._device_shape != (height, width)
        if init and side is None:
            raise ValueError("gaussian_background: the first frame of a stream needs the reference frame")
        if self.needs_chroma and chroma is None:
            raise ValueError("gaussian_background: chroma_min_sigma needs the frames' chroma planes")
        first_pair = 1 if init else self._device_pairs + 1
        ghosts = self.ghost_pairs
        if frames > 1 and ghosts and first_pair <= ghosts[-1] and first_pair + frames > ghosts[0]:
            # The ghost test asks about whole blobs between frames: one frame a launch.
            for j in range(frames):
                self.apply_kernel(
                    cuda,
                    frames_view(src, j, j + 1),
                    frames_view(dst, j, j + 1),
                    None if side is None else frames_view(side, j, j + 1),
                    None if chroma is None else (chroma[0] + j * height * width, chroma[1]),
                )
            return
        mean = cuda.buffer(self.state_key("mean"), (height, width), np.int32)
        var = cuda.buffer(self.state_key("variance"), (height, width), np.int32)
        if self.needs_chroma:
            chroma_mean = cuda.buffer(self.state_key("chroma_mean"), (2, height, width), np.int32)
            chroma_var = cuda.buffer(self.state_key("chroma_variance"), (2, height, width), np.int32)
            chroma_args = (chroma[0], chroma[1], chroma_mean.gpudata, chroma_var.gpudata)
        else:  # never read
            chroma_mean, chroma_args = None, (0, 0, 0, 0)
        last = cuda.buffer(self.state_key("last"), (height, width), np.uint8) if self.keeps_last else None
        still = cuda.buffer(self.state_key("still"), (height, width), np.int32) if self.params["still_frames"] else None
        if init:
            self._device_ghosts = GhostWindow()
        reference = side if side is not None else src  # read only when the model starts
        light_count = self.light_count(height * width)
        light_counts = ratios = None
        if self.follows_light:
            light_counts, ratios = self._queue_light_measures(cuda, src, reference if first_pair == 1 else last, frames, height * width)
        drift_in = drift_out = 0  # the exposure's drift, two slots swapped each launch (NULL: never read)
        if ratios is not None:
            drift = cuda.buffer(self.state_key("exposure_drift"), (2,), np.int32)
            self._drift_slot = 0 if first_pair == 1 else 1 - self._drift_slot
            drift_in, drift_out = (int(drift.gpudata) + 4 * slot for slot in (self._drift_slot, 1 - self._drift_slot))
        fn = cuda.function(self.KERNEL, "md_gaussian_background_u8", "PPPPPiiiiiiiiiiiiPqPPiiiiPPiiPiPiPPPPiiiPPii")
        c, p = self.constants, self.params
        history = None
        if p["bootstrap"] and first_pair <= p["bootstrap"]:  # written and read up to pair N only
            n = p["bootstrap"]  # planes: kernels/gaussian_background.cu
            history = cuda.buffer(self.state_key("bootstrap"), ((3 * n + 2) if self.needs_chroma else (n + 2), height, width), np.uint8)
        compared = cuda.buffer(self.state_key("compared"), (frames, height, width), np.uint8) if c["light_field_q16"] else None
        level = p["recent_gate"]
        recent = cuda.buffer(self.state_key("recent"), (height, width), np.uint8) if level else None
        recent_diff = cuda.buffer(self.state_key("recent_diff"), (frames, height, width), np.int16) if level else None
        cuda.launch_1d(
            fn,
            height * width,
            src.gpudata,
            reference.gpudata,
            mean.gpudata,
            var.gpudata,
            dst.gpudata,
            height * width,
            frames,
            first_pair,
            p["warmup"],
            c["k2_q8"],
            c["min_var_q8"],
            c["shadow_q16"],
            c["relative_q16"],
            c["alpha_q16"],
            c["alpha_fg_q16"],
            c["var_alpha_q16"],
            c["var_alpha_fg_q16"],
            *chroma_args,
            c["chroma_min_var_q8"],
            c["shadow_chroma_q8"],
            c["shadow_ratio_q16"],
            c["grow_k2_q8"] if self.writes_weak else 0,
            0 if last is None else last.gpudata,  # NULL: never read
            0 if still is None else still.gpudata,
            p["still_frames"],
            p["still_tolerance"],
            0 if light_counts is None else light_counts.gpudata,
            light_count,
            0 if ratios is None else ratios.gpudata,
            c["exposure_q8"],
            drift_in,
            drift_out,
            0 if compared is None else compared.gpudata,
            0 if history is None else history.gpudata,
            p["bootstrap"],
            p["quiet_tolerance"],
            p["variance_min_change"],
            0 if recent is None else recent.gpudata,  # NULL: never read
            0 if recent_diff is None else recent_diff.gpudata,
            level,
            recent_gate.min_var_q8(),
        )
        self._device_pairs = first_pair + frames - 1
        self._device_shape = (height, width)
        if first_pair in ghosts:  # one frame (above)
            self._test_ghosts_on_device(cuda, src, dst, chroma, mean, chroma_mean, still)
        if recent_diff is not None:
            recent_gate.queue_gate(cuda, recent_diff, dst, level)
        if compared is not None:  # last, as in the CPU reference
            queue_light_field(cuda, self.state_key, src, compared, dst, c["light_field_q16"])

    def _test_ghosts_on_device(self, cuda, src, dst, chroma, mean, chroma_mean, still) -> None:
        """The ghost test of one frame of the device model, on the host with the CPU model's
        code: waits for the frame's launches, reads the frame, its mask and the model, and where
        pixels are taken writes the changed model and mask back (in the stream's order)."""
        import pycuda.driver as drv

        height, width = planes(src)[1:]
        cuda.stream.synchronize()
        frame, mask, mean_q16 = (a.get().reshape(height, width) for a in (src, dst, mean))
        take = self._device_ghosts.take(frame, mean_q16, mask)
        if take is None:
            return
        colours = counts = None
        if chroma_mean is not None:
            colours = np.empty((2, height, width), np.uint8)
            drv.memcpy_dtoh(colours[0], chroma[0])
            drv.memcpy_dtoh(colours[1], chroma[0] + chroma[1])
            counts = chroma_mean.get()
        held = None if still is None else still.get()
        take_ghosts(take, frame, colours, mean_q16, counts, held, mask)
        for device, host in ((mean, mean_q16), (chroma_mean, counts), (still, held), (dst, mask)):
            if device is not None:
                device.set_async(np.ascontiguousarray(host).reshape(device.shape), stream=cuda.stream)
        cuda.stream.synchronize()  # the host arrays go out of scope

    def _queue_light_measures(self, cuda, src, before, frames: int, count: int):
        """Queue the measures of :meth:`light_measures` on the batch ``src`` (``before``: the grey
        frame before its first) and return the device arrays they fill: uint32 ``(frames, 4)``
        counts (brighter, darker, explained, unchanged; the last two with ``exposure`` on) from
        ``md_light_change_count_u8``, and int32 ``(frames,)`` ratios (Q8) from
        ``md_exposure_histogram_u8``, or ``None`` with ``exposure`` off; the model's kernel takes
        the gains from them (:meth:`exposure_gain`). That kernel leaves its histogram and tickets
        zero (zeroed when allocated) and zeroes the counts, so with ``exposure`` on no memset is
        queued."""
        import pycuda.driver as drv

        ratios = None
        counts = cuda.buffer(self.state_key("light_counts"), (frames, 4), np.uint32)
        if self.constants["exposure_q8"]:
            hist = cuda.buffer(self.state_key("exposure_histogram"), (frames, EXPOSURE_BINS), np.uint32, zeroed=True)
            tickets = cuda.buffer(self.state_key("exposure_tickets"), (frames,), np.uint32, zeroed=True)
            ratios = cuda.buffer(self.state_key("exposure_ratios"), (frames,), np.int32)
            fn = cuda.function(self.KERNEL, "md_exposure_histogram_u8", "PPiPPPP")
            cuda.launch_strided(
                fn,
                count,
                EXPOSURE_BLOCKS,
                src.gpudata,
                before.gpudata,
                count,
                hist.gpudata,
                tickets.gpudata,
                ratios.gpudata,
                counts.gpudata,
                frames=frames,
            )
        else:
            drv.memset_d32_async(counts.gpudata, 0, 4 * frames, cuda.stream)
        fn = cuda.function(self.KERNEL, "md_light_change_count_u8", "PPiiiPP")
        cuda.launch_strided(
            fn,
            count,
            LIGHT_COUNT_BLOCKS,
            src.gpudata,
            before.gpudata,
            count,
            self.light_change,
            self.constants["light_relative_q16"],
            0 if ratios is None else ratios.gpudata,
            counts.gpudata,
            frames=frames,
        )
        return counts, ratios
