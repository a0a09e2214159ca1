"""Leave-one-clip-out tuning: a parameter grid scored on every clip, each clip judged by a choice made without it.

Every point of a small grid over a pipeline's main parameters is scored on every ground-truth
clip by CDnet rules (:func:`motiondetect.evaluation.scoring.evaluate`, CPU reference: the GPU backend gives
the same masks). For each clip, :func:`leave_one_out` then picks the point with the best mean
pixel F-measure over all the *other* clips, and the clip is scored with it: an honest estimate
of how the tuned parameters do on footage they were not tuned on. The table
(:func:`format_loo_table`) sets it beside the configuration the grid started from, the single
best point over all clips (in-sample: the gap to the leave-one-out score is the overfitting) and,
when asked, the classic anchors.

Used by ``motiondetect evaluate --loo`` and ``benchmarks/tune_loo.py`` (which adds a score cache
and a larger default worker count for long runs).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import itertools
import json
import logging
import math
import multiprocessing
import statistics
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Hashable, Iterator

import cv2

from motiondetect.core.errors import UsageError
from motiondetect.evaluation import scoring

log = logging.getLogger("motiondetect")

#: One tuned parameter: (filter name, parameter name) in the pipeline.
Axis = tuple[str, str]

#: Frame-level F1 each clip should reach: the per-clip target of issue 15 ("frame F1 >= 0.95 on
#: every clip"), which the leave-one-clip-out table counts.
FRAME_F1_TARGET = 0.95

#: The grids, by name: the values tried for each parameter. An axis whose filter is not in the
#: pipeline (exactly once) is left out; the starting configuration's own value joins each axis,
#: so that configuration is always a grid point. "small" brackets today's default around the
#: values the README's one-at-a-time sweep found to matter (216 points); "tiny" is for tests.
GRIDS: dict[str, dict[Axis, list]] = {
    "small": {
        ("gaussian_background", "sigmas"): [1.5, 2.0, 2.5, 3.0],
        ("gaussian_background", "min_sigma"): [6.0, 8.0, 10.0],
        ("downscale", "height"): [160, 240, 320],
        ("median", "kernel_size"): [7, 9, 11],
        ("dilation", "kernel_size"): [3, 5],
    },
    "tiny": {
        ("gaussian_background", "sigmas"): [2.0, 3.0],
        ("median", "kernel_size"): [7, 9],
    },
    # The Gaussian model's darker pixels' floor against its absolute floor and the median's vote
    # (docs/evaluation-log.md, "The shadow floor"), 36 points.
    "shadow": {
        ("gaussian_background", "shadow_floor"): [0.0, 0.06, 0.08, 0.1],
        ("gaussian_background", "min_sigma"): [6.0, 8.0, 10.0],
        ("median", "kernel_size"): [7, 9, 11],
    },
    # The Gaussian model's chroma floor (0: grey level only) against the darker pixels' floor and
    # the absolute floor (docs/evaluation-log.md, "Chroma"), 48 points.
    "chroma": {
        ("gaussian_background", "chroma_min_sigma"): [0.0, 6.0, 8.0, 12.0],
        ("gaussian_background", "shadow_floor"): [0.0, 0.06, 0.08, 0.1],
        ("gaussian_background", "min_sigma"): [8.0, 10.0, 12.0],
    },
    # The Gaussian model's floor relative to the background's grey level (0: off) against its
    # absolute floor (docs/evaluation-log.md, "The relative floor"), 20 points.
    "floor": {
        ("gaussian_background", "relative_floor"): [0.0, 0.06, 0.07, 0.08, 0.1],
        ("gaussian_background", "min_sigma"): [4.0, 6.0, 8.0, 10.0],
    },
    # The Gaussian model's colour test of shadows (0: off) against the darkest ratio it takes for
    # a shadow (docs/evaluation-log.md, "Shadows by their colour"), 12 points.
    "shadow_chroma": {
        ("gaussian_background", "shadow_chroma"): [0.0, 1.5, 2.0, 3.0],
        ("gaussian_background", "shadow_ratio"): [0.4, 0.5, 0.6],
    },
    # The dilation's growth into the model's weak pixels (0: everywhere) against its element
    # (docs/evaluation-log.md, "Growing into weak pixels"), 12 points.
    "grow": {
        ("gaussian_background", "grow_sigmas"): [0.0, 0.8, 1.0, 1.2, 1.4, 1.6],
        ("dilation", "kernel_size"): [5, 7],
    },
    # The mask's post-processing against the model's threshold, around the chroma default
    # (docs/evaluation-log.md, "Post-processing and sub-pixel registration"), 24 points.
    "morph": {
        ("gaussian_background", "sigmas"): [1.75, 2.0, 2.25, 2.5],
        ("median", "kernel_size"): [7, 9, 11],
        ("dilation", "kernel_size"): [3, 5],
    },
    # The Gaussian model's learning rates of background pixels (mean, variance) and of the
    # variance under foreground (docs/evaluation-log.md, "Learning rates"), 32 points.
    "rates": {
        ("gaussian_background", "alpha"): [0.01, 0.02, 0.03, 0.04],
        ("gaussian_background", "variance_alpha"): [0.02, 0.04, 0.06, 0.08],
        ("gaussian_background", "variance_alpha_foreground"): [0.0025, 0.005],
    },
    # The Gaussian model's still foreground: frames still before a pixel is absorbed (0: off)
    # against the change that counts as still (docs/evaluation-log.md, "Still foreground"), 24 points.
    "still": {
        ("gaussian_background", "still_frames"): [0, 3, 5, 7, 10, 20],
        ("gaussian_background", "still_tolerance"): [0, 1, 2, 3],
    },
    # The Gaussian model's bootstrap: the frame pair at which its means restart from the median
    # of the stream's first frames (0: off; docs/evaluation-log.md, "Bootstrap"), 4 points.
    "bootstrap": {
        ("gaussian_background", "bootstrap"): [0, 14, 24, 34],
    },
    # The Gaussian model's foreground learning rates (selective update; 0: conservative update),
    # for benchmarks/long_run_study.py, which scores each clip fresh and after long runs
    # (docs/evaluation-log.md, "Long runs"), 12 points.
    "foreground": {
        ("gaussian_background", "alpha_foreground"): [0.0, 0.0005, 0.001, 0.002],
        ("gaussian_background", "variance_alpha_foreground"): [0.0006, 0.00125, 0.0025],
    },
    # The Gaussian model's ghost test: frame pairs after the bootstrap on which whole blobs are
    # tested for ghosts (0: off; docs/evaluation-log.md, "Ghosts"), 5 points.
    "ghost": {
        ("gaussian_background", "ghost_frames"): [0, 16, 40, 64, 100],
    },
    # The gate on the means' foreground learning (255: every foreground frame), for
    # benchmarks/long_run_study.py (docs/evaluation-log.md, "Long runs"), 6 points.
    "quiet": {
        ("gaussian_background", "quiet_tolerance"): [0, 1, 2, 4, 8, 255],
    },
    # The variances' foreground learning gated by the frame's change (0: every foreground frame),
    # best scored fresh and after long runs (docs/evaluation-log.md, "People who stop"), 7 points.
    "settled": {
        ("gaussian_background", "variance_min_change"): [0, 3, 5, 9, 17, 33, 255],
    },
    # The Gaussian model's light field (0: off), the grey levels of |x - g b| it explains
    # (docs/evaluation-log.md, "Changing sunlight"), 5 points.
    "light": {
        ("gaussian_background", "light_field"): [0.0, 8.0, 12.0, 16.0, 24.0],
    },
    # The recent-background gate (0: off), the grey levels a coherent window must move from its
    # most recent still background (docs/evaluation-log.md, "The recent-background gate"), 5 points.
    "recent": {
        ("gaussian_background", "recent_gate"): [0, 15, 20, 25, 30],
    },
    # The closing after the mask (1: none), the side of its square structuring element at the
    # working size (docs/evaluation-log.md, "A closing after the mask"), 6 points.
    "closing": {
        ("closing", "kernel_size"): [1, 5, 7, 9, 11, 13],
    },
    # For configs/subsense.yaml: the grey-level threshold and the ghost thresholds
    # (docs/evaluation-log.md, "The subsense model"), 12 points.
    "subsense": {
        ("subsense", "color_threshold"): [10, 15, 20],
        ("subsense", "ghost_share"): [0.9, 0.995],
        ("subsense", "ghost_distance"): [0.01, 0.05],
    },
}


def grid_summary(name: str) -> str:
    """One grid of :data:`GRIDS` in a line, for help texts: its name, its points (before the
    starting configuration's own values join the axes) and its axes as ``filter.parameter``,
    e.g. ``tiny (4 points: gaussian_background.sigmas, median.kernel_size)``.

    Raises:
        KeyError: ``name`` is not a grid.
    """
    grid = GRIDS[name]
    points = math.prod(len(values) for values in grid.values())
    return f"{name} ({points} points: {', '.join(f'{filter_name}.{key}' for filter_name, key in grid)})"


#: Short column names of the usual axes (others print as ``filter.parameter``).
_SHORT = {
    "gaussian_background.sigmas": "sig",
    "gaussian_background.min_sigma": "minsig",
    "gaussian_background.shadow_floor": "shadow",
    "gaussian_background.relative_floor": "rel",
    "gaussian_background.chroma_min_sigma": "chroma",
    "gaussian_background.shadow_chroma": "schroma",
    "gaussian_background.shadow_ratio": "sratio",
    "gaussian_background.grow_sigmas": "grow",
    "downscale.height": "h",
    "median.kernel_size": "med",
    "dilation.kernel_size": "dil",
    "erosion.kernel_size": "ero",
    "subsense.color_threshold": "R0",
    "subsense.ghost_share": "gs",
    "subsense.ghost_distance": "gd",
    "gaussian_background.alpha": "a",
    "gaussian_background.variance_alpha": "va",
    "gaussian_background.alpha_foreground": "af",
    "gaussian_background.variance_alpha_foreground": "vaf",
    "gaussian_background.still_frames": "still",
    "gaussian_background.still_tolerance": "tol",
    "gaussian_background.bootstrap": "boot",
    "gaussian_background.quiet_tolerance": "quiet",
    "gaussian_background.variance_min_change": "vmin",
    "gaussian_background.ghost_frames": "ghost",
    "gaussian_background.recent_gate": "recent",
    "closing.kernel_size": "close",
}


def leave_one_out(
    scores: dict[str, dict[Hashable, float]], admissible: dict[str, dict[Hashable, bool]] | None = None
) -> dict[str, Hashable]:
    """For each clip, the parameter set with the best mean score over all the *other* clips.

    The honest way to report tuned parameters: each clip is scored with parameters chosen
    without it, so its score says how the choice generalizes to footage it was not tuned on.

    Args:
        scores: ``scores[clip][params]``, the score of each parameter set on each clip (higher
            is better: pixel F-measure here). Every clip must hold the same parameter sets;
            ``params`` is any hashable key.
        admissible: optional ``admissible[clip][params]``: whether that clip lets the parameter
            set be chosen (:func:`frame_f1_guard`). A fold chooses only among the sets that
            every one of its clips admits; the held-out clip has no say. ``None``: all are.

    Returns:
        ``{clip: params}``, in the order of ``scores``. Ties go to the parameter set that comes
        first in the first clip's order.

    Raises:
        ValueError: fewer than two clips, the clips hold different parameter sets, or a fold's
            clips admit none.

    Example:
        >>> leave_one_out({"a": {1: 0.9, 2: 0.1}, "b": {1: 0.2, 2: 0.8}, "c": {1: 0.3, 2: 0.6}})
        {'a': 2, 'b': 1, 'c': 1}
    """
    clips = list(scores)
    if len(clips) < 2:
        raise ValueError(f"leave-one-clip-out needs at least 2 clips; got {len(clips)}")
    candidates = list(scores[clips[0]])
    for clip in clips[1:]:
        if set(scores[clip]) != set(candidates):
            raise ValueError(f"clip {clip!r} has other parameter sets than clip {clips[0]!r}")
    chosen = {}
    for held_out in clips:
        others = [c for c in clips if c != held_out]
        allowed = [p for p in candidates if admissible is None or all(admissible[c][p] for c in others)]
        if not allowed:
            raise ValueError(f"without clip {held_out!r}, no parameter set is admitted by every other clip")
        chosen[held_out] = max(allowed, key=lambda params: sum(scores[c][params] for c in others) / len(others))
    return chosen


def frame_f1_guard(scores: dict[str, dict[str, dict[str, Any]]], base: str) -> dict[str, dict[str, bool]]:
    """Which points each clip admits: those that keep its frame F1 at :data:`FRAME_F1_TARGET`, or
    at the starting config's (``base``) where that is lower.

    Issue 15 asks for both a higher mean pixel F and a frame F1 of at least 0.95 on every clip.
    Chosen by pixel F alone, a fold can take a point that gains pixels on some clips and breaks
    another clip's frame F1 (false frames on waving trees); with this guard it cannot on the clips
    it sees, and the starting config, admitted everywhere, is always a choice.

    Args:
        scores: ``scores[clip][key]``, :func:`summary` of each point on each clip.
        base: the starting config's key.

    Returns:
        ``admissible[clip][key]`` for :func:`leave_one_out`.
    """
    return {
        clip: {k: s["frame_f1"] >= min(FRAME_F1_TARGET, by_key[base]["frame_f1"]) for k, s in by_key.items()}
        for clip, by_key in scores.items()
    }


# -- the grid ----------------------------------------------------------------------------------


def _entry(config: dict[str, Any], name: str) -> dict[str, Any] | None:
    entries = [e for e in config["pipeline"] if e["filter"] == name]
    return entries[0] if len(entries) == 1 else None


def grid_axes(grid: dict[Axis, list], base: dict[str, Any]) -> dict[Axis, list]:
    """The axes of ``grid`` that apply to ``base``'s pipeline, each with ``base``'s own value added.

    Args:
        grid: ``{(filter, parameter): [values]}`` (one of :data:`GRIDS`).
        base: a validated config (:func:`motiondetect.pipeline.config.load_config`).

    Returns:
        ``{(filter, parameter): [values, sorted]}`` for the axes whose filter appears exactly once
        in ``base["pipeline"]``; each list holds ``base``'s value, so ``base`` is a grid point.

    Raises:
        UsageError: no axis applies (the pipeline has none of the grid's filters).
    """
    axes = {}
    for (name, key), values in grid.items():
        entry = _entry(base, name)
        if entry is not None and key in entry:
            axes[(name, key)] = sorted(set(values) | {entry[key]})
    if not axes:
        names = sorted({name for name, _ in grid})
        raise UsageError(f"--loo: the grid tunes {', '.join(names)}, and the pipeline has none of them once; use a pipeline with them")
    return axes


def grid_points(axes: dict[Axis, list]) -> list[dict[Axis, Any]]:
    """Every combination of the axes' values, in ``itertools.product`` order."""
    return [dict(zip(axes, values)) for values in itertools.product(*axes.values())]


def config_for(base: dict[str, Any], params: dict[Axis, Any]) -> dict[str, Any]:
    """A copy of ``base`` with ``params`` ({(filter, parameter): value}) set in its pipeline."""
    config = copy.deepcopy(base)
    for (name, key), value in params.items():
        _entry(config, name)[key] = value
    return config


def point_key(params: dict[Axis, Any]) -> str:
    """A grid point's name: ``filter.parameter=value`` pairs, sorted (``gaussian_background.sigmas=3.0,...``)."""
    return ",".join(f"{name}.{key}={value}" for (name, key), value in sorted(params.items()))


def short_key(key: str) -> str:
    """:func:`point_key` with short names, for tables (``sig=3.0 med=5``)."""
    parts = [part.split("=", 1) for part in key.split(",")]
    return " ".join(f"{_SHORT.get(name, name)}={value}" for name, value in parts)


def pipeline_digest(config: dict[str, Any]) -> str:
    """A 16-hex-digit digest of the pipeline (what the masks depend on): the cache key of a point."""
    return hashlib.sha256(json.dumps(config["pipeline"], sort_keys=True).encode()).hexdigest()[:16]


@functools.cache
def code_digest() -> str:
    """A 16-hex-digit digest of this package's Python sources (names and bytes, in path order).

    The masks and scores depend on the code as much as on the pipeline, so every cached score
    is stored under both: after a change to the model, a filter or the scorer, a score of the
    code before it is never taken for one of today's.
    """
    root = Path(__file__).resolve().parents[1]
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def point_entry(config: dict[str, Any]) -> str:
    """The cache entry of a grid point's score: ``PIPELINE@CODE`` (:func:`pipeline_digest`, :func:`code_digest`)."""
    return f"{pipeline_digest(config)}@{code_digest()}"


def anchors_entry() -> str:
    """The cache entry of the anchors' scores: ``anchors@`` and a digest of what decides them here.

    That is the anchors available (:func:`~motiondetect.evaluation.scoring.anchor_factories`, and
    bgslibrary's where ``pybgs`` imports), OpenCV's version and the scorer's source, so scores made
    without ``pybgs`` or with another OpenCV are not reused for a run that has them.
    """
    names = [name for name, _ in scoring.anchor_factories()]
    if scoring.bgslibrary_available():
        names += list(scoring.BGSLIBRARY_ANCHORS)
    source = Path(scoring.__file__).read_bytes()
    key = json.dumps([cv2.__version__, names]).encode() + source
    return "anchors@" + hashlib.sha256(key).hexdigest()[:16]


def _prune(slot: dict[str, Any]) -> None:
    """Drop a clip's point scores made by other code (their entries can never match again)."""
    suffix = "@" + code_digest()
    for entry in [e for e in slot if not e.startswith("anchors") and not e.endswith(suffix)]:
        del slot[entry]


# -- scoring (in worker processes) ---------------------------------------------------------------

_CLIPS: dict[str, tuple] = {}  # per process: folder path -> (GroundTruthFolder, decoded frames)


def _clip(path: str):
    if path not in _CLIPS:
        folder = scoring.load_folder(path)
        _CLIPS[path] = (folder, list(scoring.decoded_frames(folder)))
    return _CLIPS[path]


def summary(method_name: str, scorer) -> dict[str, Any]:
    """One method's scores, JSON-ready: name, pixel F, frame F1, and both count tables."""
    return {
        "name": method_name,
        "pixel_f": scorer.pixel.f_measure,
        "frame_f1": scorer.frames.f1,
        "pixel": scorer.pixel.as_dict(),
        "frame": scorer.frames.as_dict(),
    }


def score_config(path: str, config: dict[str, Any], skip: int, min_area: float) -> dict[str, Any]:
    """The :func:`summary` of ``config``'s pipeline on one clip (CPU backend, no annotation), as
    :func:`~motiondetect.evaluation.scoring.config_method` runs it (its scan's downscale and frame
    skip)."""
    folder, frames = _clip(path)
    method = scoring.config_method(config)
    ((method, scorer),) = scoring.evaluate(folder, [method], skip=skip, min_area=min_area, frames=frames).scores
    return summary(method.name, scorer)


def score_anchors(path: str, skip: int, min_area: float) -> list[dict[str, Any]]:
    """The :func:`summary` of each anchor of ``evaluate --baselines`` on one clip."""
    folder, frames = _clip(path)
    runs = scoring.evaluate(folder, scoring.classic_baselines(), skip=skip, min_area=min_area, frames=frames)
    return [summary(m.name, s) for m, s in runs.scores]


def _score(path: str, config: dict[str, Any] | None, skip: int, min_area: float):
    return score_anchors(path, skip, min_area) if config is None else score_config(path, config, skip, min_area)


# -- the run -------------------------------------------------------------------------------------


def score_runs(runs: list[tuple[str, dict[str, Any] | None]], skip: int, min_area: float, jobs: int = 1) -> Iterator[Any]:
    """Score each (clip folder, config) run, yielding the results in order: :func:`score_config`'s
    summary, or :func:`score_anchors`' list for a config of ``None``.

    Args:
        runs: the runs; those of one clip are best kept together (each process decodes a clip once).
        skip, min_area: as :func:`score_config`.
        jobs: worker processes (1: in this process). Closing the generator early (Ctrl-C, a
            failure) drops the runs not started; exhaust it (``zip(..., strict=True)``) for the
            pool's orderly shutdown.
    """
    if jobs <= 1:
        for path, config in runs:
            yield _score(path, config, skip, min_area)
        return
    # spawn: the parent may hold a CUDA context, which a forked child must not inherit.
    pool = ProcessPoolExecutor(max_workers=jobs, mp_context=multiprocessing.get_context("spawn"))
    try:
        futures = [pool.submit(_score, path, config, skip, min_area) for path, config in runs]
        for future in futures:
            yield future.result()
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)  # Ctrl-C, a failure or an early close: drop the queued runs
        raise
    pool.shutdown()


@dataclass
class LooResult:
    """Scores of a grid on several clips and the leave-one-clip-out choice.

    Attributes:
        grid: the grid's name (:data:`GRIDS`).
        axes: the tuned axes and their values (:func:`grid_axes`).
        keys: the grid points' :func:`point_key`, in grid order.
        base: the key of the starting configuration's point.
        scores: ``scores[clip][key]``: :func:`summary` of each point on each clip (clip = folder name).
        anchors: ``anchors[clip]``: the anchors' summaries, or an empty list when not scored.
        chosen: ``chosen[clip]``: the key :func:`leave_one_out` chose without the clip (by pixel F).
        guarded: whether the choice was limited by :func:`frame_f1_guard`.
    """

    grid: str
    axes: dict[Axis, list]
    keys: list[str]
    base: str
    scores: dict[str, dict[str, dict[str, Any]]]
    anchors: dict[str, list[dict[str, Any]]]
    chosen: dict[str, str]
    guarded: bool = False

    @property
    def criterion(self) -> str:
        """How each fold chose, in words (the table's heading and the JSON's ``criterion``)."""
        guard = f", among points that keep each of them at frame F1 {FRAME_F1_TARGET}, or at the config's where lower"
        return "mean pixel F-measure over the other clips" + (guard if self.guarded else "")

    @property
    def in_sample_best(self) -> str:
        """The key with the best mean pixel F over *all* clips (ties: the first in grid order)."""
        return max(self.keys, key=lambda k: statistics.mean(self.scores[c][k]["pixel_f"] for c in self.scores))

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: the grid, and per clip the chosen parameters and the scores beside them."""
        return {
            "grid": self.grid,
            "axes": {f"{name}.{key}": values for (name, key), values in self.axes.items()},
            "points": len(self.keys),
            "criterion": self.criterion,
            "base": self.base,
            "in_sample_best": self.in_sample_best,
            "clips": {
                clip: {
                    "chosen": self.chosen[clip],
                    "loo": self.scores[clip][self.chosen[clip]],
                    "base": self.scores[clip][self.base],
                    "in_sample_best": self.scores[clip][self.in_sample_best],
                    "anchors": self.anchors[clip],
                }
                for clip in self.scores
            },
        }


def tune(
    paths: list[str],
    base: dict[str, Any],
    grid: str = "small",
    skip: int = 50,
    min_area: float = 0.001,
    jobs: int = 1,
    anchors: bool = False,
    cache_path: Path | None = None,
    progress: Callable[[int], Any] | None = None,
    guard: bool = True,
) -> LooResult:
    """Score every grid point (and optionally the anchors) on every clip; choose leave-one-clip-out.

    Args:
        paths: ground-truth folders in the CDnet layout, at least 2, with distinct folder names.
        base: the validated config the grid starts from; only its pipeline matters.
        grid: a name in :data:`GRIDS`.
        skip: frames at the start of each clip not scored.
        min_area: the frame-level "has motion" fraction, in [0, 1].
        jobs: worker processes (1: in this process). Each decodes the clips it is given once.
        anchors: also score the anchors of ``evaluate --baselines`` on each clip.
        cache_path: a JSON file of scores to reuse and extend (keyed by the clip's resolved path,
            ``skip``, ``min_area`` and :func:`point_entry`: the pipeline and the package's code;
            the anchors by :func:`anchors_entry`), or ``None``. Scores of other code are
            dropped from it. It is written every 50 runs, and on the way out when interrupted.
        progress: called with 1 after each run (a tqdm bar's ``update``), or ``None``.
        guard: limit each fold's choice with :func:`frame_f1_guard` (``False``: pixel F alone).

    Returns:
        The :class:`LooResult`.

    Raises:
        UsageError: fewer than 2 clips, two with the same folder name, an unknown grid, or no
            axis of the grid applies to ``base``.
        motiondetect.evaluation.scoring.GroundTruthError: a clip cannot be read.
    """
    if grid not in GRIDS:
        raise UsageError(f"--grid must be one of {', '.join(sorted(GRIDS))}; got {grid!r}")
    names = [Path(p).resolve().name for p in paths]
    if len(paths) < 2:
        raise UsageError(
            f"--loo needs at least 2 ground-truth folders (each is scored with parameters chosen on the others); got {len(paths)}"
        )
    duplicates = sorted(n for n, c in Counter(names).items() if c > 1)
    if duplicates:
        raise UsageError(f"--loo: the clips are told apart by folder name, and {', '.join(duplicates)} is given twice")
    axes = grid_axes(GRIDS[grid], base)
    left_out = [f"{name}.{key}" for name, key in GRIDS[grid] if (name, key) not in axes]
    if left_out:
        log.info("leave-one-out grid: %s not tuned (not in the pipeline once)", ", ".join(left_out))
    points = grid_points(axes)
    keys = [point_key(p) for p in points]
    configs = {key: config_for(base, p) for key, p in zip(keys, points)}
    digests = {key: point_entry(c) for key, c in configs.items()}
    anchors_key = anchors_entry()
    cache = json.loads(cache_path.read_text()) if cache_path is not None and cache_path.is_file() else {}
    slots = {path: cache.setdefault(f"{Path(path).resolve()}|skip={skip}|min_area={min_area}", {}) for path in paths}
    for slot in slots.values():
        _prune(slot)
    todo = []  # (path, cache entry, config or None for the anchors); grouped by clip
    for path in paths:
        todo += [(path, anchors_key, None)] if anchors and anchors_key not in slots[path] else []
        todo += [(path, digests[k], configs[k]) for k in keys if digests[k] not in slots[path]]
    log.info(
        "leave-one-out: %d clips x %d grid points, %d runs to do (%d worker%s)", len(paths), len(points), len(todo), jobs, "s" * (jobs != 1)
    )

    def save():
        if cache_path is not None:
            cache_path.parent.mkdir(parents=True, exist_ok=True)
            cache_path.write_text(json.dumps(cache))

    try:
        # strict: zip then asks the runs for one more, so score_runs finishes and shuts its pool
        # down; left suspended, its pool was dropped at exit, which can print a traceback.
        runs = score_runs([(p, c) for p, _, c in todo], skip, min_area, jobs)
        for done, ((path, entry, _), result) in enumerate(zip(todo, runs, strict=True), 1):
            slots[path][entry] = result
            if progress is not None:
                progress(1)
            if done % 50 == 0:
                save()
    finally:
        if todo:
            save()
    scores = {name: {k: slots[path][digests[k]] for k in keys} for name, path in zip(names, paths)}
    base_key = point_key({axis: _entry(base, axis[0])[axis[1]] for axis in axes})
    admissible = frame_f1_guard(scores, base_key) if guard else None
    chosen = leave_one_out({clip: {k: scores[clip][k]["pixel_f"] for k in keys} for clip in scores}, admissible)
    return LooResult(
        grid=grid,
        axes=axes,
        keys=keys,
        base=base_key,
        scores=scores,
        anchors={name: slots[path].get(anchors_key, []) if anchors else [] for name, path in zip(names, paths)},
        chosen=chosen,
        guarded=guard,
    )


# -- the table -------------------------------------------------------------------------------------


def _table(rows: list[list[str]], text_columns: set[int] = frozenset({0})) -> list[str]:
    """Rows as aligned lines: text columns flush left, numbers flush right."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return [
        "  ".join(cell.ljust(w) if i in text_columns else cell.rjust(w) for i, (cell, w) in enumerate(zip(row, widths))).rstrip()
        for row in rows
    ]


def format_loo_table(result: LooResult, base_label: str = "this config") -> str:
    """The leave-one-clip-out table, as text.

    Per clip: the parameters chosen without it and its pixel F and frame F1 with them, beside the
    starting config's, the in-sample best point's and the best anchor's (when scored). Then, for
    each of them and every anchor, over the clips: mean pixel F, mean frame F1, lowest frame F1,
    how many clips reach a frame F1 of :data:`FRAME_F1_TARGET`, and (for the first three, when
    anchors were scored) on how many clips the pixel F beats the best anchor's; then how many
    clips chose each point.
    """
    best = result.in_sample_best
    header = ["clip", "LOO choice (made without the clip)", "LOO F", "LOO F1", f"{base_label} F", "F1", "in-sample best F", "F1"]
    if any(result.anchors.values()):
        header += ["best anchor", "F", "F1"]
    rows = [header]
    for clip, by_key in result.scores.items():
        loo, base, top = by_key[result.chosen[clip]], by_key[result.base], by_key[best]
        row = [clip, short_key(result.chosen[clip])] + [
            f"{v:.3f}" for v in (loo["pixel_f"], loo["frame_f1"], base["pixel_f"], base["frame_f1"], top["pixel_f"], top["frame_f1"])
        ]
        if len(header) > 8:
            anchor = max(result.anchors[clip], key=lambda a: a["pixel_f"]) if result.anchors[clip] else None
            row += [anchor["name"], f"{anchor['pixel_f']:.3f}", f"{anchor['frame_f1']:.3f}"] if anchor else ["-", "-", "-"]
        rows.append(row)
    lines = [
        f"leave-one-clip-out over {len(result.scores)} clips, grid {result.grid!r} ({len(result.keys)} points, chosen by the "
        f"{result.criterion.replace('-measure', '')})"
    ]
    lines += _table(rows, {0, 1, 8})
    series = {
        "leave-one-clip-out": [result.scores[c][result.chosen[c]] for c in result.scores],
        f"{base_label} ({short_key(result.base)})": [result.scores[c][result.base] for c in result.scores],
        f"in-sample best ({short_key(best)})": [result.scores[c][best] for c in result.scores],
    }
    ours = len(series)  # the rows above; the anchors' follow
    anchor_names = [a["name"] for a in next((a for a in result.anchors.values() if a), [])]
    for name in anchor_names:
        series[name] = [next(a for a in result.anchors[c] if a["name"] == name) for c in result.scores if result.anchors[c]]
    # Per-clip targets: how many clips reach FRAME_F1_TARGET, and (ours only) beat the best anchor.
    best_anchor = {c: max(a["pixel_f"] for a in result.anchors[c]) for c in result.scores if result.anchors[c]}
    clips = list(result.scores)
    summary_rows = [["over the clips", "mean pixel F", "mean frame F1", "min frame F1", f"frame F1 >= {FRAME_F1_TARGET}"]]
    if best_anchor:
        summary_rows[0].append("above best anchor")
    for i, (name, values) in enumerate(series.items()):
        row = [
            name,
            f"{statistics.mean(v['pixel_f'] for v in values):.3f}",
            f"{statistics.mean(v['frame_f1'] for v in values):.3f}",
            f"{min(v['frame_f1'] for v in values):.3f}",
            f"{sum(v['frame_f1'] >= FRAME_F1_TARGET for v in values)}/{len(values)}",
        ]
        if best_anchor:
            above = sum(v["pixel_f"] > best_anchor[c] for c, v in zip(clips, values) if c in best_anchor)
            row.append(f"{above}/{len(best_anchor)}" if i < ours else "-")
        summary_rows.append(row)
    lines += [""] + _table(summary_rows)
    if best_anchor and not any(name.startswith("bgslibrary") for name in anchor_names):
        lines += ["", f"above best anchor: OpenCV's anchors only; {scoring.BGSLIBRARY_MISSING}"]
    votes = Counter(result.chosen.values())
    lines += ["", "LOO choices (clips that chose each): " + "; ".join(f"{short_key(k)} x{n}" for k, n in votes.most_common())]
    return "\n".join(lines)
