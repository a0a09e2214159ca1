"""A background model's per-frame values at the source's frame rate.

A background model's learning rates are fractions per frame and its counts are frames:
``gaussian_background``'s ``alpha`` 0.01 moves the mean 1 % of the way to each frame, and
``still_frames`` 7 absorbs what stays still for 7 frames. Those values were chosen on the
dev clips, which carry no frame rate (image sequences are read at 25 frames/s; cameras record at
25 or 30). At another rate the same numbers mean other times: at 12.5 frames/s the mean learns
half as fast per second and a stopped object waits twice as long. Measured on the 20 dev clips
with every 2nd, 3rd or 5th frame kept, the default's mean pixel F fell from 0.800 to 0.779, 0.762
and 0.750 while OpenCV's KNN + median held its own; with the values rescaled as here it scored
0.799, 0.803 and 0.791 (docs/evaluation-log.md, "Frame rate, compression and noise").

:func:`at_frame_rate` rescales them for a source at ``fps`` frames/s: each filter's
``LEARNING_RATES`` to ``1 - (1 - rate) ** k`` (what ``k`` frames at the old rate learn) and its
``FRAME_COUNTS`` to ``count / k`` rounded, but not below 2 (:func:`rescaled_count`), where ``k``
is how many frames at the tuned rate one source frame stands for: ``clamp(fps, low, high) / fps``
for the config's ``tuned_fps: [low, high]``, so a source inside the range keeps the values
exactly (and the GPU and CPU backends, given the same config, still agree bit for bit).
``FRAME_PERIODS`` (a sample model's update periods: probability 1 / period each frame) go to
``period / k`` (:func:`rescaled_period`) and ``FRAME_STEPS`` (amounts added each frame) to
``step * k`` (:func:`rescaled_step`), both within the parameter's range.
``gaussian_background`` and ``running_average`` declare rates and counts; ``subsense`` its
update periods ``t_lower``, ``t_upper``, its window ``dmin_frames`` and its feedback steps
``blink_decay`` and ``threshold_step``. T(x)'s own steps stay as they are: T is a period in
frames, so its bounds shrink by k while k tuned frames' steps would move it k times as far.
"""

from __future__ import annotations

import argparse
import copy
import logging
import math
from typing import Any

from motiondetect.filters import REGISTRY
from motiondetect.pipeline.coding import for_coding

log = logging.getLogger("motiondetect")

#: Frames/s the per-frame defaults hold for, [low, high]: PAL's 25 and NTSC's 30, cameras' usual
#: rates. The dev clips the defaults were tuned on carry no frame rate; they are read at 25, the
#: rate of image sequences (``motiondetect.sources.video.DEFAULT_SEQUENCE_FPS``).
TUNED_FPS = (25.0, 30.0)


def fps_arg(text: str) -> float:
    """argparse ``type`` for ``--fps``: a finite number of frames per second above 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a positive number of frames per second, got {text!r}")
    return value


def frames_per_frame(fps: float, tuned: tuple[float, float] | list[float] | None) -> float:
    """How many frames at the tuned rate one frame of a ``fps`` source stands for.

    Args:
        fps: the source's frame rate in frames/s (after any frame skip), > 0.
        tuned: ``[low, high]`` frames/s within which the per-frame values hold; ``None``: they
            hold at any rate.

    Returns:
        ``clamp(fps, low, high) / fps``: 1.0 inside the range (and for ``None``), above 1 for a
        slower source (2.0 at 12.5 frames/s with [25, 30]), below 1 for a faster one (0.5 at 60).

    Raises:
        ValueError: ``fps`` is not a positive finite number.
    """
    if not (math.isfinite(fps) and fps > 0):
        raise ValueError(f"frame rate must be a positive number of frames/s; got {fps!r}")
    if tuned is None:
        return 1.0
    low, high = tuned
    return min(max(fps, low), high) / fps


def rescaled_rate(rate: float, k: float) -> float:
    """A per-frame learning rate (fraction in [0, 1]) for frames that stand for ``k`` tuned ones:
    ``1 - (1 - rate) ** k``, what is learnt over ``k`` frames at ``rate``."""
    return 1.0 - (1.0 - rate) ** k


def rescaled_count(count: int, k: float, maximum: int) -> int:
    """A count of frames for frames that stand for ``k`` tuned ones.

    ``count / k`` rounded half up, at most ``maximum`` and at least 2 (or ``count`` itself, when
    it is below 2): one frame is no run of still frames (``still_frames`` 1 takes any pixel that
    repeats its grey level once), and a bootstrap over two frames takes the darker of each pair.
    Measured at a fifth of the dev clips' rate, where ``still_frames`` 7 rounds to 1: mean pixel F
    0.781 with 1 frame, 0.791 with 2 (docs/evaluation-log.md, "Frame rate, compression and noise").
    0 stays 0, which turns the feature off.
    """
    return int(min(maximum, max(min(count, 2), math.floor(count / k + 0.5))))


def rescaled_period(period: float, k: float, minimum: float, maximum: float) -> float:
    """A period in frames (an update with probability ``1 / period`` each frame) for frames that
    stand for ``k`` tuned ones: ``period / k``, the same updates per second, within the
    parameter's ``[minimum, maximum]`` (a minimum of 1: at most one update a frame)."""
    return min(maximum, max(minimum, period / k))


def rescaled_step(step: float, k: float, minimum: float, maximum: float) -> float:
    """An amount added each frame (a count's decay, a threshold's drift) for frames that stand for
    ``k`` tuned ones: ``step * k``, the same change per second, within the parameter's
    ``[minimum, maximum]``."""
    return min(maximum, max(minimum, step * k))


def at_frame_rate(config: dict[str, Any], fps: float) -> tuple[dict[str, Any], float]:
    """The config with every pipeline filter's per-frame values rescaled for a ``fps`` source.

    Args:
        config: a validated, complete config (its ``tuned_fps``; a config without the key is
            taken to have :data:`TUNED_FPS`).
        fps: the rate at which the model sees frames, frames/s: the source's rate divided by
            ``scan.frame_skip + 1``.

    Returns:
        ``(config, k)``: ``config`` itself when ``k`` (:func:`frames_per_frame`) is 1, else a copy
        whose filters' ``LEARNING_RATES``, ``FRAME_COUNTS``, ``FRAME_PERIODS`` and ``FRAME_STEPS``
        parameters are rescaled (:func:`rescaled_rate`, :func:`rescaled_count`,
        :func:`rescaled_period`, :func:`rescaled_step`; parameters the entry leaves out are taken
        at their defaults first).

    Raises:
        ValueError: ``fps`` is not a positive finite number.
    """
    k = frames_per_frame(fps, config.get("tuned_fps", TUNED_FPS))
    if k == 1.0:
        return config, k
    config = copy.deepcopy(config)
    for entry in config["pipeline"]:
        cls = REGISTRY[entry["filter"]]
        for name in cls.LEARNING_RATES:
            entry[name] = rescaled_rate(float(cls.entry_value(entry, name)), k)
        for name in cls.FRAME_COUNTS:
            entry[name] = rescaled_count(int(cls.entry_value(entry, name)), k, int(cls.param(name).maximum))
        for names, rescaled in ((cls.FRAME_PERIODS, rescaled_period), (cls.FRAME_STEPS, rescaled_step)):
            for name in names:
                param = cls.param(name)
                entry[name] = rescaled(float(cls.entry_value(entry, name)), k, float(param.minimum), float(param.maximum))
    return config, k


def for_source(config: dict[str, Any], fps: float, *, inter_coded: bool = False, notice: bool = True) -> dict[str, Any]:
    """The config to build a source's pipeline from: an inter-coded video's values swapped in
    (:func:`motiondetect.pipeline.coding.for_coding`), then :func:`at_frame_rate` at the rate the
    model sees frames, ``fps / (scan.frame_skip + 1)``, with a notice in the log (``notice``)
    when the frame rate changes the values.

    Args:
        config: a validated, complete config.
        fps: the source's frame rate, frames/s (a container's, ``--fps``, or 25 for image
            sequences and cameras that report none).
        inter_coded: the source is an inter-coded video (H.264...;
            :attr:`motiondetect.sources.video.VideoHandler.inter_coded`).
        notice: log the rescaled values at INFO ("notice: ...").

    Returns:
        ``config`` itself when neither changes a value, else a changed copy.

    Raises:
        ValueError: ``fps`` is not a positive finite number.
    """
    rate = fps / (config["scan"]["frame_skip"] + 1)
    rescaled, k = at_frame_rate(for_coding(config, inter_coded), rate)
    if k != 1.0 and notice:
        log.info("notice: %s", _describe(rescaled, rate))
    return rescaled


def model_values(config: dict[str, Any]) -> dict[str, float | int]:
    """The per-frame learning rates and counts of a config's pipeline, ``"filter.parameter"``:
    value (what the events report's ``rescaled`` field holds: :func:`rescaled_values`)."""
    values: dict[str, float | int] = {}
    for entry in config["pipeline"]:
        cls = REGISTRY[entry["filter"]]
        values.update(
            {
                f"{cls.NAME}.{name}": cls.entry_value(entry, name)
                for name in cls.LEARNING_RATES + cls.FRAME_COUNTS + cls.FRAME_PERIODS + cls.FRAME_STEPS
            }
        )
    return values


def rescaled_values(config: dict[str, Any], model_config: dict[str, Any]) -> dict[str, float | int] | None:
    """The events report's ``rescaled`` field: :func:`model_values` of ``model_config`` where
    :func:`for_source` changed ``config`` into it (the frame rate, or an inter-coded video's
    ``still_frames_inter``), else ``None`` (the values are ``config``'s)."""
    return None if model_config is config else model_values(model_config)


def _describe(config: dict[str, Any], fps: float) -> str:
    """One line for the log: the model's rate, the tuned range and the rescaled values of the
    filters that have any (``config`` as :func:`at_frame_rate` returned it)."""
    values = [f"{key.split('.', 1)[1]} {value:.4g}" for key, value in model_values(config).items()]
    low, high = config.get("tuned_fps", TUNED_FPS)
    return (
        f"the model sees {fps:.4g} frames/s, outside the {low:g}-{high:g} its per-frame values are tuned for"
        f" (tuned_fps): they are rescaled to keep their meaning in seconds: {', '.join(values)}"
    )
