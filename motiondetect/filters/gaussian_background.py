"""GaussianBackground: a per-pixel Gaussian background model that gives the motion mask directly."""

from __future__ import annotations

import cv2
import numpy as np

from motiondetect.filters.bands import Scratch, chunk_rows, run_bands
from motiondetect.filters.base import Filter, Kind, Param, planes
from motiondetect.filters.running_average import to_q16


def to_q8(value: float) -> int:
    """A non-negative number as the integer ``round(value * 2**8)`` (Q8) the kernel uses."""
    return int(np.floor(value * 256 + 0.5))


#: Per-pixel scratch buffers of the CPU update (see GaussianBackground._update), by name.
_SCRATCH = {
    "d": np.int32,
    "vmax": np.int32,
    "df": np.float64,
    "e": np.float64,
    "limit": np.float64,
    "rate": np.float64,
    "shade": np.float64,
}


class GaussianBackground(Filter):
    """Per-pixel Gaussian background (mean and variance) with selective update; outputs the mask.

    The frame-pair step with a statistical reference: each pixel keeps a running mean ``m`` and
    variance ``v`` of its grey level (the running Gaussian average of Wren et al., 1997, the
    one-component case of the mixture models behind OpenCV's MOG2). A pixel is foreground (255)
    where ``(x - m)**2 > sigmas**2 * max(v, min_sigma**2)``, i.e. more than ``sigmas`` standard
    deviations from its background. Where the pixel is darker than its mean (``x < m``), the floor
    is also ``shadow_floor * m``: a cast shadow or a dimmed reflection darkens the background in
    proportion to its brightness, so with ``sigmas`` 2 and ``shadow_floor`` 0.08 a pixel must
    darken by more than 16 % of its background grey level to move (brightening keeps
    ``min_sigma``'s floor alone). This is the brightness half of the shadow tests of Cucchiara et
    al. (2003) and OpenCV MOG2 (a darkening by a ratio near 1 is shadow), without their colour
    half: the model sees the grey image only. Then the model learns (selective update, Koller et al.,
    1994): background pixels at rates ``alpha`` (mean) and ``variance_alpha`` (variance),
    foreground pixels at the slower ``alpha_foreground`` and ``variance_alpha_foreground``, so
    passing objects barely enter the background while a parked car or a moved chair is absorbed
    in time. The variance learns from ``min((x - m)**2, threshold)``, so a single outlier cannot
    raise it above the current threshold. During the first ``warmup`` frame pairs of a stream
    the variance learns at least at rate ``1 / (t + 1)`` on frame pair ``t`` (a plain average of
    the first frames), on foreground pixels too, the way OpenCV's MOG2 starts with the rate
    ``1 / min(2 t, history)``: the model knows the scene's noise and its waving trees after a few
    seconds, and later passing objects barely widen the threshold.

    Input ``(H, W)`` uint8 grey (the current frame) with side input ``reference`` (the previous
    grey frame); output ``(H, W)`` uint8 mask in {0, 255}.

    State: ``m`` and ``v`` per pixel, set on the first call of a stream (after :meth:`reset`, or
    when the frame size changes) to the reference frame and ``min_sigma**2``, and the number of
    frame pairs seen. Arithmetic is
    integer fixed point, identical on both backends: ``m`` in Q16 (grey level * 2**16, int32),
    ``v`` in Q8 (grey level**2 * 2**8, int32), rates and ``shadow_floor`` in Q16, ``sigmas**2``
    and ``min_sigma**2`` in Q8, each quantised once by rounding; the darker pixels' floor
    ``(s**2 + 2**23) >> 24`` (Q8) with ``s = (m * shadow_floor_q16 + 2**15) >> 16``; 64-bit products; updates
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
            "clips (docs/evaluation.md); OpenCV MOG2's varThreshold 16 is 4",
        ),
        Param(
            "min_sigma",
            float,
            8.0,
            0.5,
            64.0,
            "grey levels",
            "floor of the standard deviation, so a perfectly still pixel does not flag noise; 8 (with "
            "sigmas 2.0: at least 16 grey levels) was every leave-one-clip-out fold's choice over the "
            "20 dev clips on a grid of 4..8; wider grids score lower held out (docs/evaluation.md)",
        ),
        Param(
            "shadow_floor",
            float,
            0.0,
            0.0,
            1.0,
            "fraction of the background's grey level",
            "floor of the standard deviation where the pixel is darker than its background mean, "
            "as a fraction of that mean, so a darkening by a small share of the background (a cast "
            "shadow, a dimmed reflection: a change in proportion to the brightness, after Weber) is "
            "not motion; 0 (off) keeps min_sigma's floor alone",
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
            0.02,
            0.0,
            1.0,
            "fraction per frame",
            "variance learning rate where the pixel is background; 0.02 scored best on the CDnet clips",
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
            "warmup",
            int,
            50,
            0,
            100000,
            "frames",
            "frame pairs at the start of a stream during which the variance learns at least at "
            "1/(t+1); 50 is the CDnet clips' unscored start",
        ),
    )

    def __init__(self, **params) -> None:
        super().__init__(**params)
        p = self.params
        #: Integer constants shared by both backends (see the class docstring).
        self.constants = {
            "k2_q8": to_q8(p["sigmas"] ** 2),
            "min_var_q8": to_q8(p["min_sigma"] ** 2),
            "shadow_q16": to_q16(p["shadow_floor"]),
            "alpha_q16": to_q16(p["alpha"]),
            "alpha_fg_q16": to_q16(p["alpha_foreground"]),
            "var_alpha_q16": to_q16(p["variance_alpha"]),
            "var_alpha_fg_q16": to_q16(p["variance_alpha_foreground"]),
        }
        self.reset()

    def reset(self) -> None:
        self._mean: np.ndarray | None = None  # int32 Q16, kept like the kernel's (see reference)
        self._var: np.ndarray | None = None  # int32 Q8
        self._scratch = Scratch(**{name: (dtype, ()) for name, dtype in _SCRATCH.items()})
        self._pairs = 0  # frame pairs seen by the CPU model
        self._device_shape: tuple[int, ...] | None = None
        self._device_pairs = 0

    def rates(self, pair: int) -> tuple[int, int, int, int]:
        """The Q16 learning rates (mean, mean foreground, variance, variance foreground) for the
        ``pair``-th frame pair of a stream (1 for the first), warm-up included."""
        c = self.constants
        # round(65536 / (pair + 1)) half up in integers, as the kernel computes it (equal to
        # to_q16(1 / (pair + 1)) for every pair up to the largest warm-up; a test checks).
        warm = (131072 + pair + 1) // (2 * (pair + 1)) if pair <= self.params["warmup"] else 0
        return c["alpha_q16"], c["alpha_fg_q16"], max(c["var_alpha_q16"], warm), max(c["var_alpha_fg_q16"], warm)

    @property
    def model(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The CPU model: mean (grey level * 2**16) and variance (grey level**2 * 2**8), each
        ``(H, W)`` int64 (copies), or ``None`` before the first frame pair."""
        return None if self._mean is None else (self._mean.astype(np.int64), self._var.astype(np.int64))

    def reference(self, src, side=None):
        c = self.constants
        if self._mean is None or self._mean.shape != src.shape:
            if side is None:
                raise ValueError("gaussian_background: the first frame of a stream needs the reference frame")
            # int32 holds the state, as in the kernel: the mean stays between its old value and
            # the new sample, so in [0, 255 * 2**16]; the variance between its old value and the
            # sample, which is at most (255 * 2**16)**2 / 2**24 = 255**2 * 2**8 < 2**24.
            self._mean = np.left_shift(side, 16, dtype=np.int32)
            self._var = np.full(src.shape, c["min_var_q8"], np.int32)
            self._pairs = 0
        self._pairs += 1
        alpha, alpha_fg, var_alpha, var_alpha_fg = self.rates(self._pairs)
        # The rates of each pixel, looked up from its mask value (0 or 255), scaled as _update needs.
        mean_rates = np.full(256, alpha * 2.0**-4)
        mean_rates[255] = alpha_fg * 2.0**-4
        var_rates = np.full(256, var_alpha * 2.0**-16)
        var_rates[255] = var_alpha_fg * 2.0**-16
        out = np.empty(src.shape, np.uint8)
        height, width = src.shape
        rows = chunk_rows(width)

        def update(band: int, start: int, stop: int) -> None:
            buffers = self._scratch.get(band, rows, width)
            self._update(src, out, slice(start, stop), mean_rates, var_rates, [buffers[name][: stop - start] for name in _SCRATCH])

        run_bands(height, width, update, rows)
        return out

    def _update(self, src, out, rows: slice, mean_rates: np.ndarray, var_rates: np.ndarray, scratch: list[np.ndarray]) -> None:
        """Compare rows ``rows`` of ``src`` with the model into ``out``, then update the model there.

        The fixed-point formulas of the class docstring, evaluated in float64 where they need
        more than 32 bits; every value below is an integer times a power of two with at most 42
        significant bits, so float64 holds it exactly and the results are the integer ones:

        - ``df = d * 2**-12`` with ``|d| < 2**24``; ``e = df**2 = d**2 * 2**-24`` (``d**2 < 2**48``);
        - ``limit = k2 * max(v, min_var, shadow) * 2**-8`` (the Q16 limit, below 2**40, times
          2**-8; ``shadow`` the darker pixels' floor, 0 elsewhere), so
          ``d**2 > limit_q16 << 16`` is ``e > limit``;
        - the mean: ``m + ((d * a + 2**15) >> 16) = floor(m + df * (a * 2**-4) + 1/2)``, whose
          argument lies between the old mean and the sample, so it is positive and truncation
          (the cast to int32) is the floor;
        - the sample: ``min((d**2 + 2**23) >> 24, (limit_q16 + 128) >> 8) = floor(min(e, limit) + 1/2)``;
        - the variance: ``v + (((s - v) * r + 2**15) >> 16) = floor(v + (s - v) * (r * 2**-16) + 1/2)``,
          between ``v`` and ``s``, so positive again.

        Whole-array operations on chunks of rows, into buffers kept between frames: at the
        default working size (480 x 270) 1.3x faster than the int64 NumPy form on one thread,
        1.8x with two bands.
        """
        c = self.constants
        mean, var, mask = self._mean[rows], self._var[rows], out[rows]
        d, vmax, df, e, limit, rate, shade = scratch
        np.left_shift(src[rows], 16, out=d, dtype=np.int32)
        d -= mean
        np.multiply(d, 2.0**-12, out=df)
        np.multiply(df, df, out=e)
        np.maximum(var, np.int32(c["min_var_q8"]), out=vmax)
        if c["shadow_q16"]:
            # The darker pixels' floor: s = (m * f + 2**15) >> 16 (< 2**24) and (s**2 + 2**23) >> 24,
            # each a floor of a float64 product with at most 48 significant bits.
            np.multiply(mean, c["shadow_q16"] * 2.0**-16, out=shade)
            shade += 0.5
            np.floor(shade, out=shade)
            shade *= shade
            shade *= 2.0**-24
            shade += 0.5
            np.floor(shade, out=shade)
            shade[d >= 0] = 0
            np.maximum(vmax, shade, out=limit)
            limit *= c["k2_q8"] * 2.0**-8
        else:
            np.multiply(vmax, c["k2_q8"] * 2.0**-8, out=limit)
        cv2.compare(e, limit, cv2.CMP_GT, dst=mask)  # 255 where d**2 > limit
        cv2.LUT(mask, mean_rates, dst=rate)
        df *= rate
        df += mean
        np.add(df, 0.5, out=mean, casting="unsafe")
        np.minimum(e, limit, out=e)
        np.add(e, 0.5, out=d, casting="unsafe")  # the sample, in Q8
        d -= var
        cv2.LUT(mask, var_rates, dst=rate)
        np.multiply(d, rate, out=e)
        e += var
        np.add(e, 0.5, out=var, casting="unsafe")

    def apply_kernel(self, cuda, src, dst, side=None):
        """Enqueue the model on a frame (H, W) or a batch (K, H, W) of consecutive frames.

        ``side`` is the previous grey frame (a batch: each frame's predecessor); only the first
        frame of a stream reads it, to start the model. The kernel keeps each pixel's model in
        registers through the batch, so K frames in one call equal K calls of one frame.
        """
        frames, height, width = planes(src)
        init = self._device_shape != (height, width)
        if init and side is None:
            raise ValueError("gaussian_background: the first frame of a stream needs the reference frame")
        mean = cuda.buffer(self.state_key("mean"), (height, width), np.int32)
        var = cuda.buffer(self.state_key("variance"), (height, width), np.int32)
        fn = cuda.function(self.KERNEL, "md_gaussian_background_u8", "PPPPPiiiiiiiiiii")
        first_pair = 1 if init else self._device_pairs + 1
        reference = side if side is not None else src  # read only when the model starts
        c = self.constants
        cuda.launch_1d(
            fn,
            height * width,
            src.gpudata,
            reference.gpudata,
            mean.gpudata,
            var.gpudata,
            dst.gpudata,
            np.int32(height * width),
            np.int32(frames),
            np.int32(first_pair),
            np.int32(self.params["warmup"]),
            np.int32(c["k2_q8"]),
            np.int32(c["min_var_q8"]),
            np.int32(c["shadow_q16"]),
            np.int32(c["alpha_q16"]),
            np.int32(c["alpha_fg_q16"]),
            np.int32(c["var_alpha_q16"]),
            np.int32(c["var_alpha_fg_q16"]),
        )
        self._device_pairs = first_pair + frames - 1
        self._device_shape = (height, width)
